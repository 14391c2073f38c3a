"""`%mcp config gemini-cli|codex` print lines the real Gemini CLI and Codex accept as
printed, and the servers they add connect to the notebook (tests/agent_clis.py gets both
from the npm registry). A kernel serves; each CLI runs with a HOME of its own."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from mcp_notebook import clients
from tests import agent_clis
from tests.conftest import start_server
from tests.sources import ADD

NAME = "clibook"
SETUP = ADD


@pytest.fixture(scope="module")
def served(kernel):
    served = start_server(kernel, SETUP, f"%mcp start --port 0 --name {NAME}")
    yield served
    kernel.run("%mcp stop")


def printed_lines(served, client: str, program: str) -> list[list[str]]:
    """The command lines ``%mcp config client`` prints, as words."""
    _, output = served.kernel.run(f"%mcp config {client}")
    lines = [shlex.split(line) for line in output.splitlines() if line.startswith(program + " ")]
    assert lines, output
    return lines


@pytest.fixture
def home(tmp_path):
    (tmp_path / "project").mkdir()
    return tmp_path


@pytest.mark.parametrize("line", [0, 1], ids=["stdio-bridge", "http"])
def test_gemini_cli_takes_the_printed_line_and_connects(served, home, line):
    words = printed_lines(served, "gemini-cli", "gemini")[line]
    gemini = agent_clis.gemini()
    env, project = agent_clis.environment(home), home / "project"
    added = agent_clis.run([*gemini, *words[1:]], env, project)
    assert added.returncode == 0, added.stdout + added.stderr
    agent_clis.trust(home, project)
    listed = agent_clis.run([*gemini, "mcp", "list"], env, project)
    output = listed.stdout + listed.stderr
    assert listed.returncode == 0, output
    [row] = [row for row in output.splitlines() if f" {NAME}:" in row]
    assert row.lstrip().startswith("✓") and row.rstrip().endswith("Connected"), output


def test_gemini_cli_refuses_the_claude_code_line(served, home):
    """Why Gemini CLI has a line of its own: the Claude form is not one it takes."""
    claude = printed_lines(served, "claude-code", "claude")[0]
    gemini = agent_clis.gemini()
    env, project = agent_clis.environment(home), home / "project"
    added = agent_clis.run([*gemini, *claude[1:]], env, project)
    agent_clis.trust(home, project)
    listed = agent_clis.run([*gemini, "mcp", "list"], env, project)
    assert added.returncode != 0 or "Connected" not in listed.stdout + listed.stderr


def test_codex_takes_the_printed_line_and_lists_the_notebooks_tools(served, home):
    [words] = printed_lines(served, "codex", "codex")
    codex = agent_clis.codex()
    env, project = agent_clis.environment(home), home / "project"
    added = agent_clis.run([*codex, *words[1:]], env, project)
    assert added.returncode == 0, added.stdout + added.stderr
    servers = agent_clis.codex_servers(env, project)
    [server] = [s for s in servers if s["name"] == NAME]
    assert list(server["tools"]) == ["add"], server
    assert server["tools"]["add"]["description"] == "Add two numbers."


def test_mcp_notebook_config_prints_the_same_lines_codex_takes(served, home):
    """`mcp-notebook config codex NAME` in a shell: the line on stdout, as printed."""
    done = subprocess.run(
        [sys.executable, "-m", "mcp_notebook", "config", "codex", NAME],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    env, project = agent_clis.environment(home), home / "project"
    added = agent_clis.run([*agent_clis.codex(), *shlex.split(line)[1:]], env, project)
    assert added.returncode == 0, added.stdout + added.stderr
    [server] = [s for s in agent_clis.codex_servers(env, project) if s["name"] == NAME]
    assert list(server["tools"]) == ["add"], server


@pytest.mark.parametrize("name", ["my sales book", "Café/2"])
def test_codex_takes_a_notebook_name_it_would_refuse_as_a_server_name(home, name):
    """Codex allows only ASCII letters, digits and -_:@/. in a server's name: the printed
    line names the server so, and the bridge keeps the notebook's own name."""
    words = shlex.split(clients.snippet("codex", name).text)
    env, project = agent_clis.environment(home), home / "project"
    added = agent_clis.run([*agent_clis.codex(), *words[1:]], env, project)
    assert added.returncode == 0, added.stdout + added.stderr
    assert words[-1] == name
