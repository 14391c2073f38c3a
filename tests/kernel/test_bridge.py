"""`mcp-notebook bridge`: a stdio client reaches a live notebook and keeps seeing its changes."""

from __future__ import annotations

import asyncio
import json

import pytest
from mcp.client import Client
from mcp.client.stdio import FORCE_KILL_TIMEOUT
from mcp.shared.exceptions import MCPError

from tests import portable
from tests.conftest import MODES
from tests.kernels import Kernel, until_exists
from tests.schema import validate, validate_notification, validate_reply
from tests.sources import ADD, ADD_ONE_BARE
from tests.stdio import INITIALIZE, RawStdio, module_params
from tests.waiting import OPEN_GET_STREAMS, until, wait_until

SETUP = (
    """
import os
import time

"""
    + ADD
    + """
@mcp.tool
def nap(seconds: float, marker: str = "", release: str = "") -> str:
    if marker:
        open(marker, "w").close()  # tells a test the call is running
    # A test ends the nap by creating ``release``; ``seconds`` bounds it if the test fails.
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not (release and os.path.exists(release)):
        time.sleep(0.02)
    return "rested"

notes = "first draft"
mcp.resource(lambda: notes, name="notes", uri="text://notes")
mcp.prompt("greet", "Say hello to {who}.")
"""
)


HANDSHAKE_ERA = pytest.mark.parametrize("mode", ["legacy"])


def serve_in(kernel: Kernel, name: str) -> None:
    kernel.run("%load_ext mcp_notebook")
    kernel.run(SETUP)
    kernel.run(f"%mcp start --port 0 --name {name}")


@pytest.fixture(scope="module")
def bridged(kernel):
    serve_in(kernel, "bridged")
    return kernel


def dump(model) -> dict:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


class Notifications:
    def __init__(self) -> None:
        self.seen: list[str] = []
        self.changed = asyncio.Event()

    async def __call__(self, message) -> None:
        method = getattr(message, "method", None)
        if method:
            self.seen.append(method)
        if method == "notifications/tools/list_changed":
            self.changed.set()


@MODES
async def test_list_call_read_get_through_the_bridge(bridged, mode):
    async with Client(module_params("bridge", "bridged"), mode=mode) as client:
        assert client.server_info.name == "bridged"
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["add", "nap"]
        validate(dump(tools), "ListToolsResult")
        result = await client.call_tool("add", {"a": 20, "b": 22})
        assert result.content[0].text == "42"
        validate(dump(result), "CallToolResult")
        bridged.run('notes = "second draft"')
        read = await client.read_resource("text://notes")
        assert read.contents[0].text == "second draft"
        prompt = await client.get_prompt("greet", {"who": "Ada"})
        assert prompt.messages[0].content.text == "Say hello to Ada."
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("missing", {})
        assert unknown.value.code == -32602


# Handshake-era notifications (the GET stream): with the 2026-07-28 server, mode="auto"
# goes stateless through the bridge; its listen / restart tests are in test_bridge_modern.py.
@HANDSHAKE_ERA
async def test_a_redefined_tool_reaches_the_client_through_the_bridge(bridged, mode, afterwards):
    notes = Notifications()
    afterwards(bridged, ADD_ONE_BARE)
    async with Client(
        module_params("bridge", "bridged"), mode=mode, message_handler=notes
    ) as client:
        await client.list_tools()
        # The bridge opens its GET stream after initialized: wait until the server has it.
        await until(lambda: bridged.eval(OPEN_GET_STREAMS) >= 1, "the bridge's GET stream")
        bridged.run("@mcp.tool\ndef add(a: int, b: int = 1) -> int:\n    return a + b + 1000\n")
        await asyncio.wait_for(notes.changed.wait(), 10)
        assert (await client.call_tool("add", {"a": 1})).content[0].text == "1002"


@HANDSHAKE_ERA
async def test_the_bridge_follows_a_kernel_restart(mode, tmp_path):
    kernel = Kernel()
    try:
        serve_in(kernel, f"restarting-{mode}")
        notes = Notifications()
        params = module_params("bridge", f"restarting-{mode}")
        async with Client(params, mode=mode, message_handler=notes) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"
            # A call in flight when the kernel dies gets an error, not silence.
            marker = tmp_path / "napping"
            in_flight = asyncio.ensure_future(
                client.call_tool("nap", {"seconds": 60, "marker": str(marker)})
            )
            await until_exists(marker)
            kernel.crash_and_restart()
            with pytest.raises(MCPError) as broken:
                await asyncio.wait_for(in_flight, 30)
            assert "bridge" in broken.value.error.message
            kernel.client.wait_for_ready(timeout=60)
            notes.changed.clear()
            serve_in(kernel, f"restarting-{mode}")
            # The bridge found the new server and told the client to refresh its lists.
            await asyncio.wait_for(notes.changed.wait(), 20)
            await until(lambda: "notifications/prompts/list_changed" in notes.seen, "prompts", 5)
            assert "notifications/resources/list_changed" in notes.seen
            assert (await client.call_tool("add", {"a": 2, "b": 2})).content[0].text == "4"
    finally:
        kernel.shutdown()


async def test_a_stopped_server_gives_an_error_naming_it(bridged):
    async with Client(module_params("bridge", "bridged"), mode="legacy") as client:
        assert (await client.call_tool("add", {"a": 1})).content[0].text == "2"
        bridged.run("%mcp stop")
        try:
            with pytest.raises(MCPError) as gone:
                await asyncio.wait_for(client.call_tool("add", {"a": 1}), 10)
            assert "bridged" in gone.value.error.message
        finally:
            bridged.run("%mcp start --port 0 --name bridged")
        # ...and the same bridge works again once the notebook serves again.
        assert (await client.call_tool("add", {"a": 2})).content[0].text == "3"


def test_no_server_at_all_is_a_prompt_error_naming_it(bridged):
    raw = RawStdio("bridge", "nobody-here")
    try:
        raw.send(INITIALIZE)
        reply = raw.reply_to(1, timeout=10)
        assert reply["error"]["code"] == -32000
        assert "'nobody-here'" in reply["error"]["message"]
        validate_reply("initialize", reply)
    finally:
        assert raw.close() == 0


def test_requests_written_before_stdin_closed_are_answered(bridged):
    """A scripted client (``printf ... | mcp-notebook bridge``) writes its requests and
    closes stdin at once: each still gets its reply before the bridge exits."""
    raw = RawStdio("bridge", "bridged")
    call = {"name": "add", "arguments": {"a": 1, "b": 2}}
    raw.send(INITIALIZE)
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert raw.close() == 0
    replies = {m.get("id"): m for m in (json.loads(line) for line in raw.lines)}
    assert replies[1]["result"]["serverInfo"]["name"] == "bridged"
    assert replies[2]["result"]["content"][0]["text"] == "3"
    assert [t["name"] for t in replies[3]["result"]["tools"]] == ["add", "nap"]


def test_stdout_holds_only_protocol_and_stdin_eof_ends_the_bridge(bridged):
    raw = RawStdio("bridge", "bridged")
    raw.send(INITIALIZE)
    validate_reply("initialize", raw.reply_to(1))
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    raw.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1}},
        }
    )
    assert validate_reply("tools/call", raw.reply_to(2))["result"]["content"][0]["text"] == "2"
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"cursor": "bogus"}})
    assert raw.reply_to(3)["error"]["code"] == -32602
    raw.process.stdin.write(b"this is not json\n")
    raw.process.stdin.flush()
    bridged.run(ADD_ONE_BARE)
    raw.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
    raw.reply_to(4)
    assert raw.close() == 0
    messages = [json.loads(line) for line in raw.lines]
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    assert any(m.get("error", {}).get("code") == -32700 for m in messages)
    for message in messages:
        if message.get("method"):
            validate_notification(message)


# -- stopped by the client (SIGTERM; Ctrl+Break on Windows) ------------------------------------

SESSIONS = "sorted(mcp._transport.sessions)"  # the notebook's handshake-era sessions, by id


def bridge_with_a_session(kernel: Kernel) -> tuple[RawStdio, str]:
    """A bridge started as a client can stop it, after the handshake; and its session's id
    on the notebook."""
    before = set(kernel.eval(SESSIONS))
    raw = RawStdio("-v", "bridge", "bridged", **portable.spawn_options())
    raw.send(INITIALIZE)
    raw.reply_to(1)
    raw.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    (session,) = set(kernel.eval(SESSIONS)) - before
    return raw, session


def stopped(raw: RawStdio) -> int:
    """Stop the bridge as the Python SDK's stdio client does; its exit code, if it ended
    before the SDK would kill it."""
    portable.stop(raw.process)
    try:
        return raw.process.wait(FORCE_KILL_TIMEOUT)
    finally:
        if raw.process.poll() is None:
            raw.process.kill()


def only_protocol_on_stdout(raw: RawStdio) -> None:
    raw.process.wait(10)  # its stdout has ended too
    assert all(message.get("jsonrpc") == "2.0" for message in raw.messages())


def test_sigterm_with_a_call_in_flight_still_ends_the_notebook_session(bridged, tmp_path):
    """The SDK's stdio client closes stdin with a call in flight, and sends SIGTERM 2 s
    later: the bridge is then waiting for that call's reply (up to 5 s). It stops waiting
    and ends its session on the notebook, which would otherwise keep it until the idle
    timeout."""
    running, release = tmp_path / "running", tmp_path / "release"
    raw, session = bridge_with_a_session(bridged)
    try:
        nap = {"name": "nap", "arguments": {"seconds": 60, "marker": str(running)}}
        nap["arguments"]["release"] = str(release)
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": nap})
        wait_until(running.exists, "the call running in the kernel")
        raw.process.stdin.close()
        wait_until(
            lambda: any(b"stdin closed" in line for line in raw.stderr),
            "the bridge waiting for the reply in flight",
        )
        code = stopped(raw)
    finally:
        release.touch()  # the kernel answers again (the reply has nowhere to go)
    assert session not in bridged.eval(SESSIONS)
    assert code == 0
    only_protocol_on_stdout(raw)


def test_sigterm_with_nothing_in_flight_ends_the_bridge_and_its_session(bridged):
    raw, session = bridge_with_a_session(bridged)
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    raw.reply_to(2)
    assert stopped(raw) == 0
    assert session not in bridged.eval(SESSIONS)
    only_protocol_on_stdout(raw)
