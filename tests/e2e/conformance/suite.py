"""One run of the official conformance suite against a URL, and the bar it must clear.

Shared by the runs against ``mcp-notebook serve``, the export (under uvicorn) and the relay
through Jupyter Server, so that all three are held to the same standard.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.e2e.conformance.node import conformance_command

# name -> (suite version, extra arguments, scenarios at least): the released suite for
# 2025-11-25, and the pre-release that also covers 2026-07-28, at both revisions.
RUNS = {
    "0.1.16": ("0.1.16", [], 32),
    "alpha.12-at-2025-11-25": ("0.2.0-alpha.12", ["--spec-version", "2025-11-25"], 33),
    "alpha.12-at-2026-07-28": ("0.2.0-alpha.12", ["--spec-version", "2026-07-28"], 40),
}


def checks_in(folder: Path) -> list[dict]:
    found = []
    for path in sorted(folder.glob("*/checks.json")):
        scenario = path.parent.name
        for check in json.loads(path.read_text()):
            found.append({"scenario": scenario, **check})
    return found


def assert_the_suite_passes(url: str, run: str, folder: Path) -> None:
    """``--suite all`` of ``RUNS[run]`` against ``url``: no failure, no warning, and every
    scenario of the run left its checks (one folder each), which passed."""
    version, extra, expected_scenarios = RUNS[run]
    command = [
        *conformance_command(version),
        *("server", "--url", url, "--suite", "all", *extra, "-o", str(folder)),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    checks = checks_in(folder)
    bad = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
    summary = "\n".join(
        f"{c['scenario']}: {c['id']} {c['status']} {c.get('errorMessage', '')}" for c in bad
    )
    assert done.returncode == 0, summary or done.stdout[-4000:] + done.stderr[-4000:]
    assert not bad, summary
    assert len({c["scenario"] for c in checks}) >= expected_scenarios
    assert sum(c["status"] == "SUCCESS" for c in checks) >= expected_scenarios


# The Skills extension (io.modelcontextprotocol/skills, SEP-2640): the notebook's own
# "Skills" section is served as a skill with a supporting folder (notebooks/everything.ipynb).
# Extension scenarios run by name only (the suite leaves them out of --suite all).
SKILL_SCENARIOS = [
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
    "sep-2640-skills-directory",
]


def assert_the_scenario_passes(
    url: str, scenario: str, folder: Path, pending: bool = False
) -> None:
    """One extension scenario of the 0.2.0 pre-release against ``url``: no failure, no
    warning; all its checks pass (``pending``: the suite itself skips them all)."""
    command = [
        *conformance_command("0.2.0-alpha.12"),
        *("server", "--url", url, "--scenario", scenario, "-o", str(folder)),
    ]
    run = subprocess.run(command, capture_output=True, text=True, timeout=300)
    checks = checks_in(folder)
    bad = [c for c in checks if c["status"] in ("FAILURE", "WARNING")]
    summary = "\n".join(f"{c['id']} {c['status']} {c.get('errorMessage', '')}" for c in bad)
    assert run.returncode == 0, summary or run.stdout[-4000:] + run.stderr[-4000:]
    assert not bad, summary
    if pending:
        assert {c["status"] for c in checks} == {"SKIPPED"}
    else:
        assert checks and all(c["status"] in ("SUCCESS", "INFO") for c in checks)
        assert sum(c["status"] == "SUCCESS" for c in checks) >= 2
