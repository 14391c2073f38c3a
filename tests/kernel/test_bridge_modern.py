"""2026-07-28 clients through `mcp-notebook bridge`: no session, one POST per request.

The official SDK's stdio client in ``mode="auto"`` probes with ``server/discover`` and then
sends every request with its version in ``_meta``; the bridge adds the HTTP headers of the
revision (``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``), relays each response stream as it
arrives, keeps ``subscriptions/listen`` open, and turns ``notifications/cancelled`` into
closing that request's connection. Against real kernels, and against a scripted endpoint
where the exact bytes matter.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.subscriptions import SubscriptionLost, ToolsListChanged
from mcp.shared.exceptions import MCPError

from mcp_notebook.bridge import Bridge, Target
from tests.kernels import Kernel, until_exists
from tests.schema import validate
from tests.sources import ADD, ADD_ONE_BARE
from tests.stdio import FakeNotebook, RawStdio, Seen, json_body, json_line, module_params, sse_event
from tests.waiting import until

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-modern", "version": "1"},
}
QUICKSTART = str(Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb")

SETUP = (
    """
import time

"""
    + ADD
    + """
@mcp.tool
def nap(seconds: float, marker: str = "") -> str:
    if marker:
        open(marker, "w").close()  # tells a test the call is running
    time.sleep(seconds)
    return "rested"

@mcp.tool(
    input_schema={
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    }
)
def where(region: str) -> str:
    return f"Region: {region}"

notes = "first draft"
mcp.resource(var="notes", name="notes", uri="text://notes")
mcp.prompt("greet", "Say hello to {who}.")
"""
)


def serve_in(kernel: Kernel, name: str) -> None:
    kernel.run("%load_ext mcp_notebook")
    kernel.run(SETUP)
    kernel.run(f"%mcp start --port 0 --name {name}")


def open_listens(kernel: Kernel) -> int:
    return kernel.eval(
        "sum(1 for s in mcp._server.sessions.values() if s.subscription_id is not None)"
    )


@pytest.fixture(scope="module")
def modern(kernel):
    serve_in(kernel, "modern")
    return kernel


def request(request_id: Any, method: str, params: dict[str, Any] | None = None) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": META},
    }


def notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def b64(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


# -- the official SDK client against a real kernel ------------------------------------------


async def test_sdk_auto_mode_goes_2026_through_the_bridge(modern):
    async with Client(module_params("bridge", "modern"), mode="auto") as client:
        assert client.protocol_version == VERSION  # discover went through: no handshake
        assert client.server_info.name == "modern"
        tools = await client.list_tools()
        assert [t.name for t in tools.tools] == ["add", "nap", "where"]
        assert (await client.call_tool("add", {"a": 20, "b": 22})).content[0].text == "42"
        # The server refuses a call whose Mcp-Param-Region is missing or differs: the
        # bridge mirrored the argument (base64, since it is not ASCII).
        where = await client.call_tool("where", {"region": "Zürich"})
        assert where.content[0].text == "Region: Zürich"
        assert not where.is_error
        read = await client.read_resource("text://notes")
        assert read.contents[0].text == "first draft"
        prompt = await client.get_prompt("greet", {"who": "Ada"})
        assert prompt.messages[0].content.text == "Say hello to Ada."
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("missing", {})
        assert unknown.value.code == -32602


COUNTED = """
@mcp.tool(
    input_schema={
        "type": "object",
        "properties": {"count": {"type": "integer", "x-mcp-header": "Count"}},
        "required": ["count"],
    }
)
def counted(count: int) -> str:
    return f"count {count}"
"""


@pytest.fixture
def counted(modern):
    """A tool that mirrors an integer argument in ``Mcp-Param-Count``, for one test."""
    modern.run(COUNTED)
    try:
        yield modern
    finally:
        modern.run('mcp.remove("counted")')


def test_an_integer_spelled_42_0_passes_the_servers_header_check(counted):
    # A JSON writer may spell the integer 42 as 42.0 (JSON Schema's "integer" allows it).
    # The bridge mirrors it as the header "42"; the notebook's server must agree, or our
    # own bridge trips our own -32020.
    raw = RawStdio("bridge", "modern")
    try:
        raw.send(request(1, "tools/call", {"name": "counted", "arguments": {"count": 42.0}}))
        reply = raw.reply_to(1)
        assert "error" not in reply, reply
        assert not reply["result"].get("isError"), reply
        assert reply["result"]["content"][0]["text"] in ("count 42", "count 42.0")
    finally:
        assert raw.close() == 0


async def test_listen_relays_changes_until_the_client_leaves(modern, afterwards):
    afterwards(modern, ADD_ONE_BARE)
    async with Client(module_params("bridge", "modern"), mode="auto") as client:
        async with client.listen(tools_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed
            assert open_listens(modern) == 1
            modern.run("@mcp.tool\ndef add(a: int, b: int = 1) -> int:\n    return a + b + 1000\n")
            with anyio.fail_after(20):
                event = await subscription.__anext__()
            assert isinstance(event, ToolsListChanged)
            assert (await client.call_tool("add", {"a": 1})).content[0].text == "1002"
        # Leaving sends notifications/cancelled; the bridge closes the listen response,
        # which is how the server learns of it (a POSTed notification would not end it).
        await until(lambda: open_listens(modern) == 0, "the listen stream closed", 10)
        assert (await client.call_tool("add", {"a": 1})).content[0].text == "1002"


async def test_serve_on_stdio_speaks_2026_too():
    async with Client(module_params("serve", QUICKSTART, "--transport", "stdio")) as client:
        assert client.protocol_version == VERSION
        assert (await client.call_tool("add", {"a": 1, "b": 2})).content[0].text == "3"
        sales = await client.read_resource("df://sales")
        assert sales.contents[0].text.startswith("region,units,price")


async def test_a_kernel_restart_breaks_calls_and_listens_then_the_bridge_finds_it_again(tmp_path):
    kernel = Kernel()
    try:
        serve_in(kernel, "modern-restarting")
        params = module_params("bridge", "modern-restarting")
        async with Client(params, mode="auto") as client:
            assert client.protocol_version == VERSION
            marker = tmp_path / "napping"
            in_flight = asyncio.ensure_future(
                client.call_tool("nap", {"seconds": 60, "marker": str(marker)})
            )
            async with client.listen(tools_list_changed=True) as subscription:
                await until_exists(marker)
                kernel.crash_and_restart()
                with pytest.raises(MCPError) as broken:
                    await asyncio.wait_for(in_flight, 30)
                assert "bridge" in broken.value.error.message
                # No replay in 2026-07-28: the subscription is lost, the client re-listens.
                with pytest.raises(SubscriptionLost), anyio.fail_after(30):
                    await subscription.__anext__()
            kernel.client.wait_for_ready(timeout=60)
            serve_in(kernel, "modern-restarting")
            assert (await client.call_tool("add", {"a": 2, "b": 2})).content[0].text == "4"
    finally:
        kernel.shutdown()


# -- a scripted endpoint: the exact headers and streams ----------------------------------------

ROUTE_SCHEMA = {
    "type": "object",
    "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "where": {
            "type": "object",
            "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}},
        },
        "note": {"type": "string", "x-mcp-header": "Note"},
        "plain": {"type": "string"},
    },
}
TOOLS = [
    {"name": "route", "inputSchema": ROUTE_SCHEMA},
    {"name": "bad", "inputSchema": {"properties": {"x": {"type": "number", "x-mcp-header": "X"}}}},
    {
        "name": "hidden",
        "inputSchema": {"anyOf": [{"properties": {"y": {"type": "string", "x-mcp-header": "Y"}}}]},
    },
    {"name": "plain", "inputSchema": {"type": "object"}},
]


def result(seen: Seen, value: dict[str, Any]) -> bytes:
    return json_body({"jsonrpc": "2.0", "id": seen.body["id"], "result": value})


class Script:
    """Answers by method; ``tools`` is what tools/list says (a list, or a function)."""

    def __init__(self, tools: Any = TOOLS) -> None:
        self.tools = tools
        self.calls: dict[str, Any] = {}

    def __call__(self, seen: Seen) -> tuple[Any, ...]:
        method = seen.method
        if method in self.calls:
            return self.calls[method](seen)
        if method == "tools/list":
            tools = self.tools() if callable(self.tools) else self.tools
            return 200, "application/json", result(seen, {"tools": tools})
        if method == "tools/call":
            text = {"type": "text", "text": "ok"}
            return 200, "application/json", result(seen, {"content": [text]})
        if "id" not in (seen.body or {}):
            return 202, "application/json", b""
        return 200, "application/json", result(seen, {"resultType": "complete"})


@pytest.fixture
def fake() -> Iterator[tuple[FakeNotebook, Script]]:
    script = Script()
    notebook = FakeNotebook(script)
    try:
        yield notebook, script
    finally:
        notebook.close()


def bridge_to(notebook: FakeNotebook) -> RawStdio:
    return RawStdio("bridge", "--url", notebook.url, "--token", "t0k")


def test_modern_requests_carry_the_revision_headers_and_no_session(fake):
    notebook, _ = fake
    raw = bridge_to(notebook)
    raw.send(request(1, "server/discover"))
    raw.reply_to(1)
    (discover,) = notebook.posted("server/discover")
    assert discover.body == request(1, "server/discover")  # the body goes as it came
    headers = discover.headers
    assert headers["mcp-protocol-version"] == VERSION
    assert headers["mcp-method"] == "server/discover"
    assert "mcp-session-id" not in headers and "mcp-name" not in headers
    assert headers["authorization"] == "Bearer t0k"
    assert "application/json" in headers["accept"] and "text/event-stream" in headers["accept"]

    arguments = {
        "region": "us-west1",
        "count": 42,
        "dry": False,
        "where": {"zone": "Zürich"},
        "note": "=?base64?literal?=",
        "plain": "not mirrored",
    }
    raw.send(request(2, "tools/call", {"name": "route", "arguments": arguments}))
    assert raw.reply_to(2)["result"]["content"][0]["text"] == "ok"
    # The tool had not been listed: the bridge listed the tools (as the caller) first.
    (listing,) = notebook.posted("tools/list")
    assert listing.body["params"]["_meta"] == META
    assert listing.headers["mcp-method"] == "tools/list"
    (call,) = notebook.posted("tools/call")
    assert call.headers["mcp-name"] == "route"
    mirrored = {k: v for k, v in call.headers.items() if k.startswith("mcp-param-")}
    assert mirrored == {
        "mcp-param-region": "us-west1",
        "mcp-param-count": "42",
        "mcp-param-dry": "false",
        "mcp-param-zone": b64("Zürich"),  # not ASCII
        "mcp-param-note": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",  # looks like the sentinel
    }
    # Absent and null arguments have no header; the schemas were remembered.
    raw.send(request(3, "tools/call", {"name": "route", "arguments": {"region": " padded "}}))
    raw.reply_to(3)
    again = notebook.posted("tools/call")[1]
    assert {k: v for k, v in again.headers.items() if k.startswith("mcp-param-")} == {
        "mcp-param-region": "=?base64?IHBhZGRlZCA=?="
    }
    raw.send(request(4, "tools/call", {"name": "route", "arguments": {"note": None}}))
    raw.reply_to(4)
    assert not [k for k in notebook.posted("tools/call")[2].headers if k.startswith("mcp-param")]
    assert len(notebook.posted("tools/list")) == 1

    raw.send(request(5, "resources/read", {"uri": "file:///tmp/Hello, 世界"}))
    raw.send(request(6, "prompts/get", {"name": "greet", "arguments": {"who": "Ada"}}))
    raw.reply_to(5), raw.reply_to(6)
    assert notebook.posted("resources/read")[0].headers["mcp-name"] == b64(
        "file:///tmp/Hello, 世界"
    )
    assert notebook.posted("prompts/get")[0].headers["mcp-name"] == "greet"

    # A tool whose annotation breaks the rules is dropped from listings, as an HTTP client
    # must; the reason goes to stderr.
    raw.send(request(7, "tools/list"))
    assert [t["name"] for t in raw.reply_to(7)["result"]["tools"]] == ["route", "plain"]
    assert raw.close() == 0
    log = b"".join(raw.stderr).decode()
    assert "dropped the tool 'bad'" in log and "dropped the tool 'hidden'" in log
    assert all(not seen.headers.get("mcp-session-id") for seen in notebook.seen)


def test_a_handshake_era_client_keeps_its_session_beside_modern_requests(fake):
    notebook, script = fake
    script.calls["initialize"] = lambda seen: (
        200,
        "application/json",
        result(seen, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {}}),
        {"Mcp-Session-Id": "session-1"},
    )
    raw = bridge_to(notebook)
    raw.send(request(1, "server/discover"))  # the SDK's auto-mode probe...
    raw.reply_to(1)
    initialize = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}}
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": initialize})
    raw.reply_to(2)
    raw.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}})
    raw.reply_to(3)
    (listing,) = notebook.posted("tools/list")
    assert listing.headers["mcp-session-id"] == "session-1"
    assert "mcp-method" not in listing.headers  # exactly as before 2026-07-28
    assert "mcp-session-id" not in notebook.posted("server/discover")[0].headers
    assert raw.close() == 0


@pytest.mark.parametrize(
    "content_type", ["text/event-stream", "application/x-ndjson", "application/json"]
)
def test_a_response_stream_is_relayed_message_by_message(fake, content_type):
    notebook, script = fake
    released = threading.Event()
    frame = sse_event if content_type == "text/event-stream" else json_line

    def streamed(seen: Seen) -> tuple[Any, ...]:
        def pieces() -> Iterator[bytes]:
            progress = {"progressToken": "p", "progress": 1, "total": 2}
            yield frame({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
            released.wait(30)  # until the client has seen the progress
            yield frame(json.loads(result(seen, {"content": []})))

        return 200, content_type, pieces()

    script.calls["tools/call"] = streamed
    raw = bridge_to(notebook)
    raw.send(request(1, "tools/call", {"name": "plain", "arguments": {}}))
    raw.wait_for(lambda m: m.get("method") == "notifications/progress", timeout=30)
    assert raw.messages()[-1]["method"] == "notifications/progress"  # the reply is not there yet
    released.set()
    assert raw.reply_to(1)["result"] == {"content": []}
    assert raw.close() == 0


@pytest.mark.parametrize("content_type", ["text/event-stream", "application/x-ndjson"])
def test_cancelling_a_modern_request_closes_its_response(fake, content_type):
    notebook, script = fake
    change = threading.Event()
    frame = sse_event if content_type == "text/event-stream" else json_line
    keep_alive = b": keep-alive\n\n" if content_type == "text/event-stream" else b"\n"

    def listen(seen: Seen) -> tuple[Any, ...]:
        tag = {"_meta": {"io.modelcontextprotocol/subscriptionId": seen.body["id"]}}

        def pieces() -> Iterator[bytes]:
            ack = {**tag, "notifications": {"toolsListChanged": True}}
            yield frame(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/subscriptions/acknowledged",
                    "params": ack,
                }
            )
            change.wait(30)
            yield frame(
                {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": tag}
            )
            for _ in range(600):  # until the client hangs up (the write then fails)
                time.sleep(0.05)
                yield keep_alive

        return 200, content_type, pieces()

    script.calls["subscriptions/listen"] = listen
    raw = bridge_to(notebook)
    raw.send(request(1, "tools/call", {"name": "route", "arguments": {}}))
    raw.reply_to(1)
    assert len(notebook.posted("tools/list")) == 1
    listen_request = request("listen-1", "subscriptions/listen")
    listen_request["params"]["notifications"] = {"toolsListChanged": True}
    raw.send(listen_request)
    raw.wait_for(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
    change.set()
    raw.wait_for(lambda m: m.get("method") == "notifications/tools/list_changed")
    # The list changed: the bridge relists before mirroring arguments again.
    raw.send(request(2, "tools/call", {"name": "route", "arguments": {}}))
    raw.reply_to(2)
    assert len(notebook.posted("tools/list")) == 2

    cancel = {"requestId": "listen-1", "reason": "done"}
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
    assert notebook.hung_up.wait(30)
    assert [seen.method for seen in notebook.disconnected] == ["subscriptions/listen"]
    assert notebook.posted("notifications/cancelled") == []  # closing was the cancellation
    raw.send(request(3, "server/discover"))
    raw.reply_to(3)
    # A late cancellation, and notifications 2026-07-28 has no use for: nothing to POST
    # (and no session to POST them in).
    raw.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    raw.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
    raw.send(request(4, "server/discover"))
    raw.reply_to(4)
    # A bounded wait, not a barrier: the bridge relays each message on a worker thread of
    # its own, so request 4's reply does not order a (wrong) POST of the notifications.
    time.sleep(0.3)
    assert raw.close() == 0
    assert not [m for m in raw.messages() if m.get("id") == "listen-1"]  # never answered
    assert [seen.method for seen in notebook.seen if "id" not in seen.body] == []
    assert b"refused" not in b"".join(raw.stderr)


def test_a_header_mismatch_relists_the_tools_and_retries_once(fake):
    notebook, script = fake
    listings = iter([[{"name": "route", "inputSchema": {"type": "object"}}]])
    script.tools = lambda: next(listings, TOOLS)  # the schema gained an annotation

    def call(seen: Seen) -> tuple[Any, ...]:
        if seen.body["params"]["name"] == "route" and "mcp-param-region" in seen.headers:
            return 200, "application/json", result(seen, {"content": []})
        error = {"code": -32020, "message": "Header mismatch: Mcp-Param-Region is missing"}
        body = json_body({"jsonrpc": "2.0", "id": seen.body["id"], "error": error})
        return 400, "application/json", body

    script.calls["tools/call"] = call
    raw = bridge_to(notebook)
    raw.send(request(1, "tools/call", {"name": "route", "arguments": {"region": "eu"}}))
    assert raw.reply_to(1)["result"] == {"content": []}
    assert len(notebook.posted("tools/list")) == 2
    assert len(notebook.posted("tools/call")) == 2
    # A mismatch that relisting does not cure goes back to the client after one retry.
    raw.send(request(2, "tools/call", {"name": "plain", "arguments": {}}))
    assert raw.reply_to(2)["error"]["code"] == -32020
    assert len(notebook.posted("tools/call")) == 4
    assert raw.close() == 0


def test_an_unreachable_notebook_is_a_prompt_error_for_modern_requests():
    raw = RawStdio("bridge", "--url", "http://127.0.0.1:9/mcp")
    raw.send(request(1, "server/discover"))
    reply = raw.reply_to(1, timeout=30)
    assert reply["error"]["code"] == -32000
    assert "http://127.0.0.1:9/mcp" in reply["error"]["message"]
    validate(reply, "JSONRPCErrorResponse")
    assert raw.close() == 0


def test_handshake_requests_name_the_negotiated_version():
    """After initialize, every request of the session says MCP-Protocol-Version (2025-06-18+)."""
    notebook = FakeNotebook(
        lambda seen: (
            200,
            "application/json",
            json_body(
                {
                    "jsonrpc": "2.0",
                    "id": seen.body["id"],
                    "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "serverInfo": {"name": "fake", "version": "1"},
                    },
                }
            )
            if seen.method == "initialize"
            else json_body({"jsonrpc": "2.0", "id": seen.body["id"], "result": {}})
            if "id" in seen.body
            else b"",
            {"Mcp-Session-Id": "s1"} if seen.method == "initialize" else None,
        )
    )
    try:
        raw = bridge_to(notebook)
        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        raw.reply_to(1)
        raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        raw.reply_to(2)
        (initialize,) = notebook.posted("initialize")
        assert "mcp-protocol-version" not in initialize.headers
        (listing,) = notebook.posted("tools/list")
        assert listing.headers["mcp-session-id"] == "s1"
        assert listing.headers["mcp-protocol-version"] == "2025-06-18"
        raw.close()
    finally:
        notebook.close()


def test_stdin_closing_ends_open_listens_at_once(fake):
    """A listen stream never ends by itself: once stdin closed, the bridge closes it rather
    than wait out its grace for requests in flight (here an hour: it must not matter)."""
    notebook, script = fake

    def listen(seen: Seen) -> tuple[Any, ...]:
        def pieces() -> Iterator[bytes]:
            for _ in range(6000):  # until the bridge hangs up (the write then fails)
                time.sleep(0.05)
                yield b": keep-alive\n\n"

        return 200, "text/event-stream", pieces()

    script.calls["subscriptions/listen"] = listen
    listen_request = request("listen-1", "subscriptions/listen")
    listen_request["params"]["notifications"] = {"toolsListChanged": True}
    stdin = io.BytesIO(json.dumps(listen_request).encode() + b"\n")
    output = io.BytesIO()
    bridge = Bridge(Target(url=notebook.url, token="t0k"), output, eof_grace=3600)
    running = threading.Thread(target=bridge.run, args=(stdin,), daemon=True)
    running.start()
    running.join(60)
    assert not running.is_alive(), "the bridge waited for a listen stream to end"
    assert output.getvalue() == b""  # a listen ended by the client gets no reply
