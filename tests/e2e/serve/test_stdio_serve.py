"""`mcp-notebook serve NOTEBOOK --transport stdio`: what a client config spawns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client

from tests.conftest import MODES
from tests.portable import alive, children
from tests.schema import validate_notification, validate_reply
from tests.sources import notebook
from tests.stdio import INITIALIZE, FramedStdio, RawStdio, module_params
from tests.waiting import wait_until

QUICKSTART = str(Path(__file__).resolve().parents[3] / "notebooks" / "quickstart.ipynb")

CHATTY_CELLS = [
    "print('hello from a cell')\nimport os, sys\nos.system('echo from-a-subprocess')",
    "sys.stdout.write('raw write\\n'); sys.stderr.write('to stderr\\n')",
    "%load_ext mcp_notebook",
    "@mcp.tool\n"
    "def shout(text: str) -> str:\n"
    "    print('the tool prints', text)\n"
    "    os.system('echo the tool runs a subprocess')\n"
    "    return text.upper()",
    "%mcp start",
]


@MODES
async def test_serves_the_quickstart_over_stdio(mode):
    async with Client(module_params("serve", QUICKSTART, "--transport", "stdio"), mode=mode) as c:
        assert c.server_info.name == "quickstart"
        assert [t.name for t in (await c.list_tools()).tools] == ["add"]
        assert (await c.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"
        sales = await c.read_resource("df://sales")
        assert sales.contents[0].text.startswith("region,units,price")
        prompt = await c.get_prompt("summarize", {"topic": "rain", "n": "2"})
        assert prompt.messages[0].content.text == "Summarize rain in 2 bullet points."


@pytest.fixture
def chatty_notebook(tmp_path) -> str:
    return str(notebook(tmp_path / "chatty.ipynb", *CHATTY_CELLS))


def test_stdout_is_protocol_only_even_when_the_notebook_prints(chatty_notebook):
    raw = RawStdio("serve", chatty_notebook, "--transport", "stdio")
    raw.send(INITIALIZE)
    validate_reply("initialize", raw.reply_to(1))
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"name": "shout", "arguments": {"text": "hi"}}
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    reply = validate_reply("tools/call", raw.reply_to(2))
    assert reply["result"]["content"][0]["text"] == "HI"
    assert raw.close() == 0
    for line in raw.lines:
        message = json.loads(line)  # every stdout line is one JSON-RPC message
        assert message["jsonrpc"] == "2.0"
        if "method" in message:
            validate_notification(message)
    stderr = b"".join(raw.stderr).decode()
    assert "hello from a cell" in stderr and "from-a-subprocess" in stderr
    assert "raw write" in stderr


def test_a_failing_notebook_exits_non_zero_with_nothing_on_stdout(tmp_path):
    path = notebook(tmp_path / "bad.ipynb", "raise RuntimeError('bad setup')")
    raw = RawStdio("serve", str(path), "--transport", "stdio")
    assert raw.process.wait(120) == 1
    raw.close()
    assert raw.lines == []
    assert "bad setup" in b"".join(raw.stderr).decode()


# -- hostile input and faults: the server answers and carries on -------------------------------

SEED_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"clientInfo": {"name": "raw-seed", "version": "1"}},
}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "1"},
}


def only_reply(raw: FramedStdio, request_id: Any) -> dict[str, Any]:
    raw.reply_to(request_id, timeout=120)
    replies = raw.replies_to(request_id)
    assert len(replies) == 1, replies
    return replies[0]


@pytest.fixture(scope="module")
def served_lines() -> Iterator[FramedStdio]:
    raw = FramedStdio("serve", QUICKSTART, "--transport", "stdio")
    raw.send(INITIALIZE)
    only_reply(raw, 1)
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    yield raw
    assert raw.close() == 0
    assert raw.bad == []


def test_deep_nesting_and_a_17_mb_request_are_answered_and_serving_goes_on(served_lines):
    raw = served_lines
    raw.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
    raw.write(b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"\n")
    raw.send({"jsonrpc": "2.0", "id": "after-deep", "method": "ping"})
    assert only_reply(raw, "after-deep")["result"] == {}
    parse_errors = [m for m in raw.messages if m.get("error", {}).get("code") == -32700]
    assert len(parse_errors) == 2
    call = {"name": "add", "arguments": {"a": 1, "b": 2, "pad": "x" * 17_000_000}}
    raw.send({"jsonrpc": "2.0", "id": "big", "method": "tools/call", "params": call})
    raw.send({"jsonrpc": "2.0", "id": "after-big", "method": "ping"})
    refused = only_reply(raw, "big")
    assert refused["error"]["code"] == -32600 and "16777216" in refused["error"]["data"]
    assert only_reply(raw, "after-big")["result"] == {}
    assert raw.process.poll() is None


@pytest.mark.parametrize("modern", [False, True], ids=["handshake", "2026"])
def test_requests_without_a_valid_method_get_one_error_with_their_id(served_lines, modern):
    raw = served_lines
    meta = {"params": {"_meta": MODERN_META}} if modern else {}
    tag = "m" if modern else "h"
    raw.send({"jsonrpc": "2.0", "id": f"{tag}5", "method": None, **meta})
    raw.send({"jsonrpc": "2.0", "id": f"{tag}7", **meta})
    raw.send({"jsonrpc": "2.0", "id": f"{tag}8", "method": "tools/list", "params": 3})
    raw.send({"jsonrpc": "2.0", "id": f"{tag}9", "method": "tools/list", **meta})
    assert "result" in only_reply(raw, f"{tag}9")
    for request_id in (f"{tag}5", f"{tag}7", f"{tag}8"):
        assert only_reply(raw, request_id)["error"]["code"] == -32600


@pytest.fixture(scope="module")
def served_frames() -> Iterator[FramedStdio]:
    """The seed dialect over Content-Length frames."""
    raw = FramedStdio("serve", QUICKSTART, "--transport", "stdio", framing="content-length")
    raw.send(SEED_INITIALIZE)
    assert "result" in only_reply(raw, 1)
    raw.send({"jsonrpc": "2.0", "method": "initialized"})
    yield raw
    assert raw.close() == 0
    assert raw.bad == []


def test_lying_and_giant_content_lengths_are_answered_and_reading_goes_on(served_frames):
    raw = served_frames
    listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "mcp/listTools"}).encode()
    raw.write(b"Content-Length: 99999999999\r\n\r\n" + listing)
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "mcp/listTools"})
    assert only_reply(raw, 2)["error"]["code"] == -32600
    assert [t["name"] for t in only_reply(raw, 3)["result"]] == ["add"]
    raw.write(b"Content-Length: " + b"4" * 5000 + b"\r\n\r\n{}")
    raw.send({"jsonrpc": "2.0", "id": 4, "method": "mcp/listTools"})
    assert "result" in only_reply(raw, 4)
    stderr = b"".join(raw.stderr).decode()
    assert "Content-Length 99999999999 exceeds the limit" in stderr
    assert "Content-Length of 5000 digits exceeds the limit" in stderr


def test_the_dialect_answers_invalid_requests_with_their_id(served_frames):
    raw = served_frames
    raw.send({"jsonrpc": "2.0", "id": 5, "method": None})
    raw.send({"jsonrpc": "2.0", "id": 7})
    raw.write(b"Content-Length: 9\r\n\r\n[" + b"[" * 8)  # a frame that is not JSON
    raw.send({"jsonrpc": "2.0", "id": 8, "method": "mcp/listPrompts"})
    assert "result" in only_reply(raw, 8)
    assert only_reply(raw, 5)["error"]["code"] == -32600
    assert only_reply(raw, 7)["error"]["code"] == -32600


SLOW_CELLS = [
    "%load_ext mcp_notebook",
    "import pathlib, time\n"
    "@mcp.tool\n"
    "def slow(marker: str) -> str:\n"
    "    pathlib.Path(marker).write_text('running')\n"
    "    time.sleep(120)\n"
    "    return 'done'",
]


def test_stdin_closed_mid_call_leaves_no_kernel_behind(tmp_path):
    path = notebook(tmp_path / "slow.ipynb", *SLOW_CELLS)
    marker = tmp_path / "running"
    raw = FramedStdio("serve", str(path), "--transport", "stdio")
    raw.send(INITIALIZE)
    only_reply(raw, 1)
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"name": "slow", "arguments": {"marker": str(marker)}}
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    wait_until(marker.exists, "the tool to start")
    kernels = children(raw.process.pid)
    assert kernels, "the kernel runs as a child of serve"
    assert raw.close(timeout=90) == 0
    wait_until(lambda: not any(map(alive, kernels)), "the kernel to exit")


def test_a_call_in_flight_when_the_kernel_dies_gets_an_error_then_serve_exits(tmp_path):
    cells = [
        "%load_ext mcp_notebook",
        # Killed as a crash would: SIGKILL on POSIX, TerminateProcess on Windows.
        "import psutil\n@mcp.tool\ndef die() -> str:\n"
        "    psutil.Process().kill()\n    return 'unreachable'",
    ]
    path = notebook(tmp_path / "dying.ipynb", *cells)
    raw = FramedStdio("serve", str(path), "--transport", "stdio")
    raw.send(INITIALIZE)
    only_reply(raw, 1)
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "die"}})
    assert raw.process.wait(120) == 1
    assert only_reply(raw, 2)["error"]["code"] == -32000
    assert "The kernel died" in b"".join(raw.stderr).decode()
    raw.close()
