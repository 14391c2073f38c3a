"""%mcp in a real kernel: what it prints, and UsageError (never a dead kernel) for bad input."""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request

import pytest

from tests.kernels import KernelError
from tests.sources import ADD_BARE


@pytest.fixture(scope="module")
def loaded(kernel):
    kernel.run("%load_ext mcp_notebook")
    kernel.run(ADD_BARE)
    return kernel


def usage_error(kernel, line: str) -> str:
    with pytest.raises(KernelError) as error:
        kernel.run(line)
    assert error.value.ename == "UsageError", error.value
    assert kernel.run("1 + 1")[1].strip() == "2"  # the kernel carries on
    return error.value.evalue


def test_mcp_object_is_the_package_singleton(loaded):
    assert loaded.eval("__import__('mcp_notebook').mcp is mcp") is True


def test_start_prints_url_and_a_client_command_but_not_the_token(loaded):
    _, output = loaded.run("%mcp start --port 0 --name demo")
    url, token = loaded.eval("mcp.url"), loaded.eval("mcp.token")
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/mcp", url)
    assert url in output and token not in output  # cell outputs are saved with the notebook
    assert "mcp.token" in output and "%mcp config claude-code" in output
    assert "claude mcp add --transport stdio demo --env MCP_NOTEBOOK_RUNTIME_DIR=" in output
    _, status = loaded.run("%mcp status")
    assert url in status and "bearer token" in status
    _, listing = loaded.run("%mcp list")
    assert "1 tool:" in listing and "add" in listing


def test_restart_keeps_the_token_and_stop_closes_the_port(loaded):
    loaded.run("%mcp start --port 0")
    first = loaded.eval("mcp.token")
    loaded.run("%mcp start --port 0")
    assert loaded.eval("mcp.token") == first
    url = loaded.eval("mcp.url")
    _, output = loaded.run("%mcp stop")
    assert "stopped" in output
    assert loaded.eval("mcp.url") is None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url, timeout=5)
    _, status = loaded.run("%mcp status")
    assert "not running" in status


def test_no_auth_is_said_out_loud(loaded):
    _, output = loaded.run("%mcp start --port 0 --no-auth")
    assert "Authentication is off" in output
    assert loaded.eval("mcp.token") is None
    loaded.run("%mcp stop")


@pytest.mark.parametrize(
    "line, expected",
    [
        ("%mcp launch", "invalid choice"),
        ("%mcp start --port 70000", "--port must be 0-65535"),
        ("%mcp start --port abc", "invalid int value"),
        ("%mcp start --token t --no-auth", "not allowed with"),
        ("%mcp start --host 'unclosed", "No closing quotation"),
        # Before, an empty token meant a random one, an empty name the default, unsaid.
        ("%mcp start --port 0 --token ''", "--token must not be empty"),
        ("%mcp start --port 0 --name '  '", "--name must not be empty"),
        ("%mcp start --host not..a..host", "is not a valid host name"),
        ("%mcp history --max-calls 0", "at most 2**62 calls"),
    ],
)
def test_bad_input_is_a_usage_error(loaded, line, expected):
    assert expected in usage_error(loaded, line)


def test_a_busy_port_is_a_usage_error_naming_it(loaded):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        message = usage_error(loaded, f"%mcp start --port {port}")
    assert f"127.0.0.1:{port}" in message
    assert loaded.eval("mcp.running") is False


@pytest.mark.parametrize("line", ["%mcp", "%mcp -h", "%mcp --help"])
def test_help_is_printed_once_as_help(loaded, line):
    reply, output = loaded.run(line)  # raises if the cell ends in an error
    assert reply["content"]["status"] == "ok"
    assert output.count("usage: %mcp") == 1
    assert "start" in output and "record" in output and "break" in output


@pytest.mark.parametrize("command", ["start", "config", "break", "history"])
def test_a_subcommands_help_is_printed_once_as_help(loaded, command):
    _, output = loaded.run(f"%mcp {command} -h")
    assert output.count(f"usage: %mcp {command}") == 1
    assert "options:" in output or "positional arguments:" in output


def test_status_and_list_read_as_sentences(loaded):
    loaded.run(
        "@mcp.tool\n"
        "def summarise(text: str) -> str:\n"
        '    """Summarise a text in one short paragraph, keeping the names and the numbers, '
        'the way a careful editor would.\n\n    More detail here.\n    """\n'
        "    return text\n"
    )
    loaded.run("mcp.prompt('greet', 'Say hello to {name}.')")
    _, status = loaded.run("%mcp status")
    assert "2 tools, no resources, no resource templates and 1 prompt." in status
    assert "(s)" not in status
    _, listing = loaded.run("%mcp list")
    lines = listing.splitlines()
    assert "2 tools:" in lines and "No resources." in lines and "1 prompt:" in lines
    summary = next(line for line in lines if line.startswith("  summarise - "))
    assert summary.endswith("\u2026") and len(summary) <= len("  summarise - ") + 76
    loaded.run("mcp.remove('summarise'); mcp.remove('greet')")


def test_a_comment_after_a_magic_line_is_a_comment(loaded):
    # IPython hands everything after a line magic to the magic, comments included.
    _, status = loaded.run("%mcp status  # what is served?")
    assert "Registered:" in status
