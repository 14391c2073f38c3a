"""A kernel that Jupyter Server started knows the URL a client outside uses, and its
`%mcp config` snippets work as printed."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Iterator

import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests import agent_clis
from tests.conftest import MODES
from tests.e2e.jupyter.server import JupyterServer, ServerKernel
from tests.sources import ADD_ONE_BARE

NAME = "sales"


@pytest.fixture(scope="module")
def jupyter() -> Iterator[JupyterServer]:
    server = JupyterServer("/base/")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def kernel(jupyter) -> Iterator[ServerKernel]:
    k = jupyter.start_kernel()
    k.run("%load_ext mcp_notebook")
    k.run(ADD_ONE_BARE)
    try:
        yield k
    finally:
        k.shutdown()


@pytest.fixture(scope="module")
def started(kernel) -> str:
    _, printed = kernel.run(f"%mcp start --port 0 --name {NAME}")
    return printed


async def adds(url: str, headers: dict[str, str], mode: str = "auto") -> str:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        return (await client.call_tool("add", {"a": 40, "b": 2})).content[0].text


@MODES
async def test_start_prints_the_url_through_jupyter_server_and_no_token(
    jupyter, kernel, started, mode
):
    line = next(x for x in started.splitlines() if "through Jupyter Server" in x)
    url = line.rsplit(" ", 1)[1]
    assert url == f"http://127.0.0.1:{jupyter.port}/base/mcp-notebook/{NAME}/mcp"
    assert jupyter.token not in started and kernel.eval("mcp.token") not in started
    assert await adds(url, jupyter.headers, mode) == "42"


def test_status_names_the_url_through_jupyter_server(jupyter, kernel, started):
    _, printed = kernel.run("%mcp status")
    assert f"Through Jupyter Server: {jupyter.endpoint(NAME)}" in printed


async def test_the_claude_code_line_works_as_printed(jupyter, kernel, started):
    _, printed = kernel.run("%mcp config claude-code")
    outside = printed.split("through Jupyter Server", 1)[1]
    line = next(x for x in outside.splitlines() if x.startswith("claude mcp add"))
    words = shlex.split(line)
    assert words[:6] == ["claude", "mcp", "add", "--transport", "http", NAME]
    url, header = words[6], words[words.index("--header") + 1]
    assert header == f"Authorization: token {jupyter.token}"
    assert "Jupyter token" in printed  # ... and says it holds one
    assert await adds(url, dict([header.split(": ", 1)])) == "42"


def json_after(printed: str, marker: str) -> dict:
    outside = printed.split(marker, 1)[1]
    start = outside.index("{")
    decoded, _ = json.JSONDecoder().raw_decode(outside[start:])
    return decoded


@pytest.mark.parametrize("client, key", [("vscode", "servers"), ("cursor", "mcpServers")])
async def test_the_http_entries_work_as_printed(jupyter, kernel, started, client, key):
    _, printed = kernel.run(f"%mcp config {client}")
    entry = json_after(printed, "through Jupyter Server")[key][NAME]
    assert entry["headers"] == {"Authorization": f"token {jupyter.token}"}
    assert await adds(entry["url"], entry["headers"]) == "42"


async def test_the_claude_desktop_bridge_entry_works_as_printed(jupyter, kernel, started):
    _, printed = kernel.run("%mcp config claude-desktop")
    entry = json_after(printed, "through Jupyter Server")["mcpServers"][NAME]
    assert entry["command"] == "mcp-notebook" and entry["args"][:2] == ["bridge", "--url"]
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/base/mcp-notebook/sales/mcp", entry["args"][2])
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_notebook", *entry["args"]],  # the same program the command names
        env={**os.environ, **entry["env"]},
    )
    async with Client(params, mode="auto") as bridged:
        assert (await bridged.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"


def test_config_says_jupyter_listens_on_loopback_only_and_how_to_change_that(kernel, started):
    """This Jupyter Server listens on 127.0.0.1: the "another machine" URL reaches nothing
    from there, and `%mcp config` says so and how to change it."""
    _, printed = kernel.run("%mcp config claude-code")
    outside = printed.split("From another machine", 1)[1]
    assert "Jupyter Server listens on loopback only (127.0.0.1)" in outside
    assert "--ip=0.0.0.0" in outside and "ssh -L" in outside
    start_line = next(x for x in started.splitlines() if x.startswith("From other machines"))
    after = started.split(start_line, 1)[1]
    assert "listens on loopback only" in after


async def test_the_gemini_cli_line_through_jupyter_works_as_printed(kernel, started, tmp_path):
    _, printed = kernel.run("%mcp config gemini-cli")
    outside = printed.split("through Jupyter Server", 1)[1]
    words = shlex.split(next(x for x in outside.splitlines() if x.startswith("gemini mcp add")))
    (tmp_path / "project").mkdir()
    env, project = agent_clis.environment(tmp_path), tmp_path / "project"
    gemini = agent_clis.gemini()
    added = agent_clis.run([*gemini, *words[1:]], env, project)
    assert added.returncode == 0, added.stdout + added.stderr
    agent_clis.trust(tmp_path, project)
    listed = agent_clis.run([*gemini, "mcp", "list"], env, project)
    [row] = [r for r in (listed.stdout + listed.stderr).splitlines() if f" {NAME}:" in r]
    assert row.lstrip().startswith("✓") and row.rstrip().endswith("Connected"), row


def test_the_codex_line_through_jupyter_works_as_printed(kernel, started, tmp_path):
    _, printed = kernel.run("%mcp config codex")
    outside = printed.split("through Jupyter Server", 1)[1]
    words = shlex.split(next(x for x in outside.splitlines() if x.startswith("codex mcp add")))
    assert words[words.index("--") + 1 :][:3] == ["mcp-notebook", "bridge", "--url"]
    env = agent_clis.environment(tmp_path)
    # `pip install mcp-notebook` over there: its command on PATH (this checkout's, here).
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env["PATH"]
    added = agent_clis.run([*agent_clis.codex(), *words[1:]], env, tmp_path)
    assert added.returncode == 0, added.stdout + added.stderr
    [server] = [s for s in agent_clis.codex_servers(env, tmp_path) if s["name"] == NAME]
    assert list(server["tools"]) == ["add"], server
