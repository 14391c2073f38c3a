"""The official MCP conformance suite against `mcp-notebook serve notebooks/everything.ipynb`.

The suite is an npm package that needs Node 22; ``node.py`` installs both from the npm
registry into a cache, so this runs on Linux wherever npm does (CI included); on other
systems it skips with the reason (``node.NEEDS``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from .. import portable
from ..serving import ServeProcess
from .node import NEEDS, conformance_command
from .suite import RUNS, assert_the_suite_passes, checks_in

EVERYTHING = Path(__file__).resolve().parents[2] / "notebooks" / "everything.ipynb"


@pytest.fixture(scope="module")
def everything():
    portable.require_linux(NEEDS)
    served = ServeProcess(str(EVERYTHING), "--port", "0", "--no-auth")
    try:
        yield served.wait_for_url()
    finally:
        served.stop()


@pytest.mark.parametrize("run", list(RUNS))
def test_the_official_suite_passes_with_no_failure_and_no_warning(everything, run, tmp_path):
    assert_the_suite_passes(everything, run, tmp_path)


# The extension scenarios of the Tasks extension (io.modelcontextprotocol/tasks): the suite
# leaves extension scenarios out whenever --spec-version is given, so each runs by name.
# tasks-status-notifications is pending in the suite itself (it skips); the others must pass.
TASK_SCENARIOS = [
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
    "tasks-status-notifications",
]
PENDING_IN_THE_SUITE = {"tasks-status-notifications"}


@pytest.mark.parametrize("scenario", TASK_SCENARIOS)
def test_the_tasks_extension_scenarios_pass(everything, scenario, tmp_path):
    assert_the_scenario_passes(everything, scenario, tmp_path)


# The Skills extension (io.modelcontextprotocol/skills, SEP-2640): the notebook's own
# "Skills" section is served as a skill with a supporting folder (notebooks/everything.ipynb).
SKILL_SCENARIOS = [
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
    "sep-2640-skills-directory",
]


@pytest.mark.parametrize("scenario", SKILL_SCENARIOS)
def test_the_skills_extension_scenarios_pass(everything, scenario, tmp_path):
    assert_the_scenario_passes(everything, scenario, tmp_path)


def assert_the_scenario_passes(everything: str, scenario: str, tmp_path: Path) -> None:
    command = [
        *conformance_command("0.2.0-alpha.12"),
        "server",
        "--url",
        everything,
        "--scenario",
        scenario,
        "-o",
        str(tmp_path),
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    checks = checks_in(tmp_path)
    bad = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
    summary = "\n".join(f"{c['id']} {c['status']} {c.get('errorMessage', '')}" for c in bad)
    assert run.returncode == 0, summary or run.stdout[-4000:] + run.stderr[-4000:]
    assert not bad, summary
    if scenario in PENDING_IN_THE_SUITE:
        assert {c["status"] for c in checks} == {"SKIPPED"}
    else:
        assert checks and all(c["status"] in ("SUCCESS", "INFO") for c in checks)
        assert sum(c["status"] == "SUCCESS" for c in checks) >= 2
