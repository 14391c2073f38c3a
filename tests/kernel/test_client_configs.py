"""Client configuration snippets (%mcp config, mcp-notebook config): they work when pasted."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from typing import Any

import httpx2
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from tests.conftest import MODES, start_server
from tests.kernels import KernelError
from tests.sources import ADD

NAME = "cfgbook"
# Where the kernels of this run keep their discovery files (tests/conftest.py): not Jupyter's
# default folder, as under conda or a shell profile that sets JUPYTER_RUNTIME_DIR.
RUNTIME = {"MCP_NOTEBOOK_RUNTIME_DIR": os.environ["JUPYTER_RUNTIME_DIR"]}
# The only variables Claude Desktop passes a stdio server on macOS (and Linux builds).
CLAUDE_DESKTOP_POSIX = {"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
SETUP = ADD


@pytest.fixture(scope="module")
def served(kernel):
    served = start_server(kernel, SETUP, f"%mcp start --port 0 --name {NAME}")
    yield served
    kernel.run("%mcp stop")


def printed_json(output: str) -> dict[str, Any]:
    """The JSON object after the "Merge into ..." line of ``%mcp config``."""
    lines = output.splitlines()
    merge = [i for i, line in enumerate(lines) if line.startswith("Merge into ")]
    assert len(merge) == 1, output
    return json.loads("\n".join(lines[merge[0] + 1 :]))


def magic_config(served, client: str) -> dict[str, Any]:
    _, output = served.kernel.run(f"%mcp config {client}")
    assert "not running" not in output
    return printed_json(output)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcp_notebook", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env if env is not None else dict(os.environ),
    )


async def call_add(client: Client) -> None:
    tools = await client.list_tools()
    assert [t.name for t in tools.tools] == ["add"]
    result = await client.call_tool("add", {"a": 2, "b": 40})
    assert not result.is_error
    assert result.content[0].text == "42"


async def use_stdio(command: str, args: list[str], mode: str) -> None:
    """Launch the pasted command the way a client does and use the notebook through it."""
    parameters = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with Client(parameters, mode=mode) as client:
        await call_add(client)


@pytest.mark.parametrize("client", ["claude-desktop", "cursor"])
def test_mcp_servers_snippet_runs_this_python_on_the_bridge(served, client):
    config = magic_config(served, client)
    assert list(config) == ["mcpServers"]
    assert list(config["mcpServers"]) == [NAME]
    entry = config["mcpServers"][NAME]
    assert os.path.isabs(entry["command"])
    assert entry["command"] == served.kernel.eval("__import__('sys').executable")
    assert entry["args"] == ["-m", "mcp_notebook", "bridge", NAME]
    assert entry["env"] == RUNTIME


def test_vscode_snippet_is_a_stdio_server(served):
    config = magic_config(served, "vscode")
    assert list(config) == ["servers"]
    entry = config["servers"][NAME]
    assert entry["type"] == "stdio"
    assert os.path.isabs(entry["command"])
    assert entry["command"] == served.kernel.eval("__import__('sys').executable")
    assert entry["args"] == ["-m", "mcp_notebook", "bridge", NAME]
    assert entry["env"] == RUNTIME


@MODES
async def test_the_claude_desktop_snippet_works_when_pasted(served, mode):
    entry = magic_config(served, "claude-desktop")["mcpServers"][NAME]
    await use_stdio(entry["command"], entry["args"], mode)


def as_claude_desktop(entry: dict[str, Any], home, env: dict[str, str]) -> StdioServerParameters:
    """The entry's command as Claude Desktop starts it on macOS: its own few variables (a
    GUI app never sees the shell's JUPYTER_* variables), then ``env``.

    The SDK's stdio client starts a server with the same few variables and ``env`` over
    them. HOME is a fresh folder: Jupyter's default runtime folder there is empty.
    """
    assert set(get_default_environment()) <= CLAUDE_DESKTOP_POSIX
    extra = {"HOME": str(home), **env}
    if "PYTHONPATH" in os.environ:  # this checkout rather than an installed copy
        extra["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(command=entry["command"], args=entry["args"], env=extra)


async def test_claude_desktop_finds_a_kernel_that_uses_another_runtime_folder(served, tmp_path):
    kernel_runtime = served.kernel.eval("__import__('os').environ['JUPYTER_RUNTIME_DIR']")
    assert kernel_runtime == RUNTIME["MCP_NOTEBOOK_RUNTIME_DIR"]
    entry = magic_config(served, "claude-desktop")["mcpServers"][NAME]
    async with Client(
        as_claude_desktop(entry, tmp_path, entry.get("env", {})), mode="legacy"
    ) as client:
        await call_add(client)
    # Without the entry's "env", the bridge looks in HOME's Jupyter folder: nobody there.
    with pytest.raises(BaseException) as refused:  # an exception group: unpacked below
        async with Client(as_claude_desktop(entry, tmp_path, {}), mode="legacy"):
            pass
    (error,) = leaves(refused.value)
    assert isinstance(error, MCPError), error
    assert "no running notebook server named 'cfgbook'" in str(error)


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions in a (nested) exception group, or ``error`` itself."""
    inner = getattr(error, "exceptions", None)
    return [leaf for e in inner for leaf in leaves(e)] if inner else [error]


def claude_code_lines() -> list[str]:
    result = cli("config", "claude-code", NAME)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2, result.stdout
    return lines


@MODES
async def test_the_claude_code_stdio_line_works_when_run(served, mode):
    first, _ = claude_code_lines()
    head, separator, tail = first.partition(" -- ")
    assert separator, first
    setting = "MCP_NOTEBOOK_RUNTIME_DIR={MCP_NOTEBOOK_RUNTIME_DIR}".format(**RUNTIME)
    # The name before --env: claude's --env takes several values, and would take the name.
    assert shlex.split(head) == [
        *("claude", "mcp", "add", "--transport", "stdio", NAME, "--env", setting)
    ]
    command, *args = shlex.split(tail)
    assert command == sys.executable
    assert args == ["-m", "mcp_notebook", "bridge", NAME]
    await use_stdio(command, args, mode)


@MODES
async def test_the_claude_code_http_line_works_when_run(served, mode):
    _, second = claude_code_lines()
    words = shlex.split(second)
    assert words[:6] == ["claude", "mcp", "add", "--transport", "http", NAME]
    assert len(words) == 9 and words[7] == "--header", words
    url, header = words[6], words[8]
    assert url == served.url
    assert header == f"Authorization: Bearer {served.token}"
    key, value = header.split(": ", 1)
    async with (
        httpx2.AsyncClient(headers={key: value}, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        await call_add(client)


def test_cli_config_without_a_server_or_a_name_fails(tmp_path):
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    env.pop("MCP_NOTEBOOK_RUNTIME_DIR", None)
    result = cli("config", "cursor", env=env)
    assert result.returncode == 1
    assert result.stdout == ""
    assert "no running notebook server" in result.stderr


def test_cli_config_with_an_unknown_client_is_a_usage_error():
    result = cli("config", "bogus")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "invalid choice" in result.stderr and "bogus" in result.stderr


def test_magic_config_with_an_unknown_client_is_a_usage_error(served):
    with pytest.raises(KernelError) as error:
        served.kernel.run("%mcp config bogus")
    assert error.value.ename == "UsageError", error.value
    assert "invalid choice" in error.value.evalue
    assert served.kernel.run("1 + 1")[1].strip() == "2"  # the kernel carries on
    assert served.kernel.eval("mcp.running") is True
    assert served.kernel.eval("mcp.url") == served.url
