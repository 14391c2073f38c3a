"""Seed 000's "MCP v1.0" dialect on stdio: `mcp-notebook bridge` and `serve --transport stdio`.

``SeedClient`` is written from the reference document alone
(shared/seeds/000_d7f2f2060fc89748.txt): Content-Length frames (or JSON lines), the
handshake first, ids from 1, the document's schemas. It reads stdout strictly: any byte
that is not part of a well-formed message is a failure.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.kernels import Kernel
from tests.seed_schemas import (
    PROMPT_DEFINITION,
    RESOURCE_DEFINITION,
    SERVER_CAPABILITIES,
    TOOL_DEFINITION,
)
from tests.sources import ADD, ADD_ONE_BARE
from tests.stdio import FakeNotebook, Seen, json_body, sse_event
from tests.waiting import wait_until

QUICKSTART = str(Path(__file__).resolve().parents[2] / "notebooks" / "quickstart.ipynb")
NAME = "seed-bridged"
FRAMINGS = pytest.mark.parametrize("framing", ["content-length", "ndjson"])

# -- the document's schemas -----------------------------------------------------------------
MCP_ID = re.compile(r"^mcp://[a-z0-9.-]+/(tools|resources|prompts)/[^/\s]+:v1$")
HEADER = re.compile(rb"Content-Length: (\d+)\r\n(?:Content-Type: [^\r\n]*\r\n)?\r\n")


class SeedClient:
    """An MCP v1.0 client on a subprocess's stdin/stdout."""

    def __init__(self, *args: str, framing: str = "content-length") -> None:
        self.framing = framing
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_notebook", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.ids = itertools.count(1)
        self.messages: list[dict[str, Any]] = []  # everything the server wrote, in order
        self.inbox = b""
        self.stdout = bytearray()  # every byte, as written
        self.garbage: list[bytes] = []  # stdout bytes that are not a message
        self.stderr = bytearray()
        self._arrived = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    # -- writing ---------------------------------------------------------------------------
    def frame(self, body: bytes) -> bytes:
        if self.framing == "content-length":
            return b"Content-Length: %d\r\n\r\n" % len(body) + body
        return body + b"\n"

    def write(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(self.frame(json.dumps(message).encode()))

    def request(self, method: str, params: Any = None) -> int:
        request_id = next(self.ids)
        self.send({"jsonrpc": "2.0", "method": method, "params": params, "id": request_id})
        return request_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def ask(self, method: str, params: Any = None, timeout: float = 120) -> dict[str, Any]:
        return self.reply_to(self.request(method, params), timeout)

    def result(self, method: str, params: Any = None) -> Any:
        reply = self.ask(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    def error(self, method: str, params: Any = None) -> dict[str, Any]:
        reply = self.ask(method, params)
        assert "result" not in reply, reply
        return reply["error"]

    def handshake(self) -> dict[str, Any]:
        reply = self.ask("initialize", {"clientCapabilities": {}})
        assert reply["id"] == 1, "the document's initialize is request 1"
        assert set(reply) == {"jsonrpc", "id", "result"}
        capabilities = reply["result"]["capabilities"]
        jsonschema.validate(capabilities, SERVER_CAPABILITIES)
        self.notify("initialized")
        return capabilities

    # -- reading ---------------------------------------------------------------------------
    def _read(self) -> None:
        while chunk := self.process.stdout.read1(65536):
            with self._arrived:
                self.stdout += chunk
                self.inbox += chunk
                self._parse()
                self._arrived.notify_all()

    def _read_stderr(self) -> None:
        while chunk := self.process.stderr.read1(65536):
            self.stderr += chunk

    def _parse(self) -> None:
        while self.inbox:
            if self.framing == "ndjson":
                line, newline, rest = self.inbox.partition(b"\n")
                if not newline:
                    return
                body, self.inbox = line, rest
            else:
                header = HEADER.match(self.inbox)
                if header is None:
                    start = self.inbox[:16]
                    if start != b"Content-Length: "[: len(start)] or b"\r\n\r\n" in self.inbox:
                        self.garbage.append(self.inbox)  # not a header: the stream is broken
                        self.inbox = b""
                    return
                end = header.end() + int(header.group(1))
                if len(self.inbox) < end:
                    return
                body, self.inbox = self.inbox[header.end() : end], self.inbox[end:]
            try:
                self.messages.append(json.loads(body.decode("utf-8")))
            except ValueError:
                self.garbage.append(body)

    def wait_for(
        self, found: Any, timeout: float = 60, what: str = "a message", since: int = 0
    ) -> Any:
        def search() -> Any:
            return next((m for m in self.messages[since:] if found(m)), None)

        with self._arrived:
            if not self._arrived.wait_for(lambda: search() is not None, timeout):
                raise AssertionError(f"no {what}; stderr:\n{self.stderr.decode()[-4000:]}")
            return search()

    def reply_to(self, request_id: Any, timeout: float = 120) -> dict[str, Any]:
        return self.wait_for(
            lambda m: m.get("id") == request_id and "method" not in m,
            timeout,
            f"reply {request_id}",
        )

    def notification(self, method: str, timeout: float = 60, **params: Any) -> dict[str, Any]:
        return self.wait_for(
            lambda m: (
                m.get("method") == method
                and all(m.get("params", {}).get(k) == v for k, v in params.items())
            ),
            timeout,
            method,
        )

    def notifications(self) -> list[dict[str, Any]]:
        with self._arrived:
            return [m for m in self.messages if "id" not in m]

    def close(self, timeout: float = 60) -> int:
        """End the connection (EOF) and check what stdout and stderr held."""
        self.process.stdin.close()
        try:
            code = self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        for reader in self._readers:  # they end at the pipes' EOF, having read everything
            reader.join(30)
        # Only framed JSON-RPC on stdout; never protocol on stderr.
        assert self.garbage == [] and self.inbox == b"", (self.garbage, self.inbox)
        for message in self.messages:
            assert message.get("jsonrpc") == "2.0", message
            assert ("result" in message) + ("error" in message) + ("method" in message) == 1
        assert b'"jsonrpc"' not in self.stderr
        return code


SETUP = (
    '''
import asyncio

@mcp.tool(name="file-writer")
def file_writer(path: str, content: str) -> dict:
    """Write text to a file."""
    return {"status": "success", "bytesWritten": len(content.encode())}

'''
    + ADD
    + """
@mcp.tool
def divide(a: float, b: float) -> float:
    return a / b

notes = "first draft"
mcp.resource(var="notes", name="notes", uri="text://notes", description="Team notes")
mcp.prompt("greet", "Say hello to {who}.", description="A greeting")
"""
)


def serve_in(kernel: Kernel, name: str) -> None:
    kernel.run("%load_ext mcp_notebook")
    kernel.run(SETUP)
    kernel.run(f"%mcp start --port 0 --name {name}")


@pytest.fixture(scope="module")
def bridged(kernel):
    serve_in(kernel, NAME)
    return kernel


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["mcpId"] for item in items]


def until_notified(client: SeedClient, change: Any, method: str, mcp_id: str) -> int:
    """Make a change again until the client hears of it; the attempt that was heard."""
    for attempt in range(10):
        since = len(client.messages)
        change(attempt)
        try:
            client.wait_for(
                lambda m: m.get("method") == method and m["params"].get("mcpId") == mcp_id,
                timeout=3,
                since=since,
            )
            return attempt
        except AssertionError:
            continue
    raise AssertionError(f"no {method} for {mcp_id}")


# -- the handshake and the methods --------------------------------------------------------


@FRAMINGS
def test_the_dialect_through_the_bridge(bridged, framing):
    client = SeedClient("bridge", NAME, framing=framing)
    capabilities = client.handshake()
    assert capabilities == {
        "listToolsProvider": True,
        "listResourcesProvider": True,
        "listPromptsProvider": True,
        "executionProvider": {"execute": True},
    }
    # Replies come back in the client's own framing (the reader is strict about it).
    assert client.messages[0]["id"] == 1

    tools = client.result("mcp/listTools", None)
    for tool in tools:
        jsonschema.validate(tool, TOOL_DEFINITION)
        assert MCP_ID.match(tool["mcpId"])
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])
    assert ids(tools) == [
        f"mcp://{NAME}/tools/file-writer:v1",
        f"mcp://{NAME}/tools/add:v1",
        f"mcp://{NAME}/tools/divide:v1",
    ]
    assert client.result("mcp/listTools", {}) == tools  # params null or {}

    resources = client.result("mcp/listResources")
    for resource in resources:
        jsonschema.validate(resource, RESOURCE_DEFINITION)
    notes = next(r for r in resources if r["name"] == "notes")
    assert notes["mcpId"] == f"mcp://{NAME}/resources/notes:v1"
    assert notes["content"] == "first draft" and notes["description"] == "Team notes"

    prompts = client.result("mcp/listPrompts")
    for prompt in prompts:
        jsonschema.validate(prompt, PROMPT_DEFINITION)
    assert prompts[0]["mcpId"] == f"mcp://{NAME}/prompts/greet:v1"
    assert prompts[0]["content"] == "Say hello to {who}." and prompts[0]["role"] == "user"

    add = f"mcp://{NAME}/tools/add:v1"
    assert client.result("mcp/executeTool", {"id": add, "arguments": {"a": 20, "b": 22}}) == {
        "output": {"result": 42}
    }
    writer = f"mcp://{NAME}/tools/file-writer:v1"
    written = client.result(
        "mcp/executeTool",
        {"id": writer, "arguments": {"path": "/home/agent/output.txt", "content": "Hello, world."}},
    )
    assert written == {"output": {"status": "success", "bytesWritten": 13}}

    # The document's own invalid-params example, to the letter.
    missing = client.error(
        "mcp/executeTool", {"id": writer, "arguments": {"path": "/home/agent/output.txt"}}
    )
    assert missing == {
        "code": -32602,
        "message": "Invalid params",
        "data": f"Missing required property: 'content' in arguments for tool {writer}",
    }
    unknown = client.error("mcp/executeTool", {"id": f"mcp://{NAME}/tools/nope:v1"})
    assert unknown["code"] == -32602 and "Unknown tool" in unknown["data"]
    failed = client.error(
        "mcp/executeTool", {"id": f"mcp://{NAME}/tools/divide:v1", "arguments": {"a": 1, "b": 0}}
    )
    assert -32099 <= failed["code"] <= -32000
    assert "ZeroDivisionError" in failed["data"]
    assert client.error("mcp/deleteEverything")["code"] == -32601

    requests = next(client.ids) - 1
    assert client.close() == 0
    # One reply per request, none to the notifications; nothing else was written.
    replies = [m for m in client.messages if "method" not in m]
    assert sorted(m["id"] for m in replies) == list(range(1, requests + 1))
    assert client.notifications() == []


def test_anything_before_initialize_is_refused_and_notifications_are_never_answered(bridged):
    client = SeedClient("bridge", NAME)
    client.notify("initialized")  # before initialize: ignored, never answered
    client.notify("mcp/somethingHappened", {"x": 1})
    early = client.error("mcp/listTools")
    assert early["code"] == -32002 and early["message"] == "Server not initialized"
    assert client.messages == [{"jsonrpc": "2.0", "id": 1, "error": early}]
    # The handshake still works afterwards; a second one is refused.
    capabilities = client.result("initialize", {"clientCapabilities": {}})["capabilities"]
    jsonschema.validate(capabilities, SERVER_CAPABILITIES)
    client.notify("initialized")
    assert client.error("initialize", {"clientCapabilities": {}})["code"] == -32600
    assert client.close() == 0
    assert client.notifications() == []
    assert [m["id"] for m in client.messages] == [1, 2, 3]


def test_no_notification_before_initialized_then_changes_are_announced(bridged, afterwards):
    afterwards(
        bridged, 'notes = "first draft"\ntry:\n    mcp.remove("bye")\nexcept KeyError:\n    pass'
    )
    client = SeedClient("bridge", NAME)
    client.ask("initialize", {"clientCapabilities": {}})
    # The notebook changes while the client has not said `initialized` yet.
    bridged.run('notes = "changed before initialized"')
    bridged.run(ADD_ONE_BARE)
    listed = client.result("mcp/listResources")
    assert listed[0]["content"] == "changed before initialized"
    # A bounded wait, not a barrier: the notebook's notifications reach the bridge on its
    # GET stream (a thread of its own), replies on their POSTs, so a reply read here does
    # not order them; and before `initialized` nothing may reach the client to order by.
    time.sleep(1.0)
    assert client.notifications() == []

    client.notify("initialized")
    # A cell re-binds the variable a resource serves: the client hears of it (once the
    # session subscribed, which it does in the background after `initialized`).
    notes = f"mcp://{NAME}/resources/notes:v1"
    changed = until_notified(
        client, lambda i: bridged.run(f'notes = "draft {i}"'), "mcp/resourceDidChange", notes
    )
    assert client.result("mcp/listResources")[0]["content"] == f"draft {changed}"
    # Re-registering a resource, re-defining a tool, a new prompt: list changes.
    bridged.run('mcp.resource(var="notes", name="notes", uri="text://notes", description="v2")')
    client.notification("mcp/listResourcesDidChange")
    bridged.run(ADD_ONE_BARE)
    client.notification("mcp/listToolsDidChange")
    bridged.run('mcp.prompt("bye", "Say goodbye to {who}.")')
    client.notification("mcp/listPromptsDidChange")
    assert ids(client.result("mcp/listPrompts"))[-1] == f"mcp://{NAME}/prompts/bye:v1"
    assert client.close() == 0
    for message in client.notifications():
        assert "id" not in message and isinstance(message.get("params"), dict)


def test_standard_mcp_may_use_content_length_framing_too(bridged):
    client = SeedClient("bridge", NAME)
    initialize = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "lsp-framed", "version": "1"},
    }
    result = client.result("initialize", initialize)
    assert result["serverInfo"]["name"] == NAME  # a standard reply: not the dialect's
    client.notify("notifications/initialized")
    tools = client.result("tools/list", {})["tools"]
    assert [t["name"] for t in tools] == ["file-writer", "add", "divide"]
    call = client.result("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
    assert call["content"][0]["text"] == "3"
    assert client.close() == 0


# -- framing errors -----------------------------------------------------------------------


def test_framing_errors_are_logged_and_the_bridge_carries_on(bridged):
    client = SeedClient("bridge", NAME)
    client.handshake()
    client.write(b"Content-Length: -5\r\n\r\n{}")
    # The framer skips to the next "Content-Length: <digits>" line after a bad header, so
    # a second bad one is read (and logged) only at a frame boundary.
    client.result("mcp/listPrompts")
    client.write(b"Content-Length: abc\r\n\r\n{}")
    client.result("mcp/listPrompts")
    limit = 16 * 1024 * 1024
    client.write(b"Content-Length: %d\r\n\r\n" % (limit + 1) + b"x" * (limit + 1))
    client.write(client.frame(b'{"jsonrpc": "2.0", "id": 99, "method": '))  # not JSON
    tools = client.result("mcp/listTools")
    assert ids(tools)[1] == f"mcp://{NAME}/tools/add:v1"
    client.wait_for(
        lambda m: m.get("id") is None and m["error"]["code"] == -32700, 60, "the parse error"
    )
    assert client.process.poll() is None
    assert client.close() == 0
    log = client.stderr.decode()
    assert "Invalid Content-Length '-5': negative" in log
    assert "Invalid Content-Length 'abc': not a number" in log
    assert f"Content-Length {limit + 1} exceeds the limit" in log
    assert "not valid JSON" in log
    # Frames that could not be read get no reply; the one refused for its size gets
    # -32600 and the one that is not JSON -32700, with a null id (none could be read).
    assert sorted(m.get("id") or 0 for m in client.messages) == [0, 0, 1, 2, 3, 4]
    nulls = [m["error"]["code"] for m in client.messages if m.get("id") is None]
    assert sorted(nulls) == [-32700, -32600]


@FRAMINGS
def test_the_framing_is_told_from_the_first_bytes_however_they_arrive(bridged, framing):
    client = SeedClient("bridge", NAME, framing=framing)
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    frame = b"\r\n" + client.frame(json.dumps(message).encode())
    # "\r\nCont" could still be either framing: the bridge waits for more.
    for piece in (frame[:6], frame[6:9], frame[9:]):
        client.write(piece)
        time.sleep(0.2)  # not a wait for anything: the pieces must arrive apart
    assert "capabilities" in client.reply_to(1)["result"]  # in the same framing
    client.write(client.frame(b"this is not json"))
    assert client.reply_to(None)["error"]["code"] == -32700
    assert client.close() == 0


# -- kernel restarts ----------------------------------------------------------------------


def test_mcp_ids_survive_a_kernel_restart():
    kernel = Kernel()
    try:
        serve_in(kernel, "seed-restarting")
        client = SeedClient("bridge", "seed-restarting")
        client.handshake()
        before = [
            ids(client.result(method))
            for method in ("mcp/listTools", "mcp/listResources", "mcp/listPrompts")
        ]
        kernel.manager.restart_kernel(now=True)
        kernel.client.wait_for_ready(timeout=60)
        serve_in(kernel, "seed-restarting")
        # The bridge found the new kernel and told the client every list may have changed.
        for kind in ("Tools", "Resources", "Prompts"):
            client.notification(f"mcp/list{kind}DidChange")
        after = [
            ids(client.result(method))
            for method in ("mcp/listTools", "mcp/listResources", "mcp/listPrompts")
        ]
        assert after == before
        add = "mcp://seed-restarting/tools/add:v1"
        assert client.result("mcp/executeTool", {"id": add, "arguments": {"a": 2, "b": 2}}) == {
            "output": {"result": 4}
        }
        # The new session is subscribed again: resource changes still arrive.
        notes = "mcp://seed-restarting/resources/notes:v1"
        until_notified(
            client, lambda i: kernel.run(f'notes = "restarted {i}"'), "mcp/resourceDidChange", notes
        )
        assert client.close() == 0
    finally:
        kernel.shutdown()


def test_a_call_in_flight_when_the_kernel_restarts_gets_an_error(tmp_path):
    kernel = Kernel()
    try:
        serve_in(kernel, "seed-in-flight")
        kernel.run(
            "import pathlib, time\n"
            "@mcp.tool\n"
            "def nap(marker: str) -> str:\n"
            "    pathlib.Path(marker).write_text('napping')\n"
            "    deadline = time.monotonic() + 120\n"
            "    while time.monotonic() < deadline:\n"
            "        try:\n"
            "            time.sleep(1)\n"
            "        except KeyboardInterrupt:  # a restart interrupts first: outlive it\n"
            "            pass\n"
            "    return 'rested'"
        )
        client = SeedClient("bridge", "seed-in-flight")
        client.handshake()
        marker = tmp_path / "napping"
        nap = "mcp://seed-in-flight/tools/nap:v1"
        in_flight = client.request(
            "mcp/executeTool", {"id": nap, "arguments": {"marker": str(marker)}}
        )
        wait_until(marker.exists, "the tool to start", timeout=60)
        kernel.manager.restart_kernel(now=True)
        # An error, never silence; then the same client goes on once the notebook is back.
        broken = client.reply_to(in_flight, timeout=60)
        assert -32099 <= broken["error"]["code"] <= -32000, broken
        assert "bridge" in broken["error"]["message"] or "bridge" in str(
            broken["error"].get("data")
        )
        kernel.client.wait_for_ready(timeout=60)
        serve_in(kernel, "seed-in-flight")
        add = "mcp://seed-in-flight/tools/add:v1"
        assert client.result("mcp/executeTool", {"id": add, "arguments": {"a": 2, "b": 2}}) == {
            "output": {"result": 4}
        }
        assert client.close() == 0
    finally:
        kernel.shutdown()


def test_an_unreachable_notebook_is_an_error_not_a_crash():
    client = SeedClient("bridge", "nobody-here")
    error = client.error("initialize", {"clientCapabilities": {}})
    assert error["code"] == -32000 and "'nobody-here'" in error["message"]
    assert client.close() == 0


# -- serve --transport stdio --------------------------------------------------------------


@FRAMINGS
def test_serve_speaks_the_dialect_on_stdio(framing):
    client = SeedClient("serve", QUICKSTART, "--transport", "stdio", framing=framing)
    assert client.handshake() == {
        "listToolsProvider": True,
        "listResourcesProvider": True,
        "listPromptsProvider": True,
        "executionProvider": {"execute": True},
    }
    tools = client.result("mcp/listTools")
    assert ids(tools) == ["mcp://quickstart/tools/add:v1"]
    assert tools[0]["description"].startswith("Add two numbers.")
    output = client.result(
        "mcp/executeTool", {"id": "mcp://quickstart/tools/add:v1", "arguments": {"a": 1, "b": 2}}
    )
    assert output == {"output": {"result": 3}}
    bad = client.error(
        "mcp/executeTool", {"id": "mcp://quickstart/tools/add:v1", "arguments": {"a": "two"}}
    )
    assert bad["code"] == -32602
    assert bad["data"].startswith("Invalid property: 'a' in arguments for tool mcp://quickstart")
    sales = next(r for r in client.result("mcp/listResources") if r["name"] == "sales")
    assert sales["mcpId"] == "mcp://quickstart/resources/sales:v1"
    assert sales["content"].startswith("region,units,price")
    (summarize,) = client.result("mcp/listPrompts")
    assert summarize["content"] == "Summarize {topic} in {n} bullet points."
    assert client.close() == 0
    assert "Serving" in client.stderr.decode()  # the notebook's chatter went to stderr


# -- what the dialect cannot carry ---------------------------------------------------------

DOC_INITIALIZE_REPLY = (
    b'{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"listToolsProvider":true,'
    b'"listResourcesProvider":false,"listPromptsProvider":false,'
    b'"executionProvider":{"execute":true}}}}'
)


def test_server_requests_are_refused_for_the_dialect_client():
    """A notebook tool that asks the client (sampling) gets -32601 from the bridge."""
    refusals: list[dict[str, Any]] = []
    refused = threading.Event()

    def reply(seen: Seen, value: dict[str, Any]) -> bytes:
        return json_body({"jsonrpc": "2.0", "id": seen.body["id"], "result": value})

    def answer(seen: Seen) -> tuple[Any, ...]:
        body, method = seen.body, seen.method
        if method is None:  # the bridge answering our request
            refusals.append(body)
            refused.set()
            return 202, "application/json", b""
        if method == "initialize":
            info = {"name": "Fake Lab", "version": "1"}
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}}
            headers = {"Mcp-Session-Id": "s-1"}
            return 200, "application/json", reply(seen, {**result, "serverInfo": info}), headers
        if method == "tools/list":
            tools = [{"name": "ask", "description": "Asks", "inputSchema": {"type": "object"}}]
            return 200, "application/json", reply(seen, {"tools": tools})
        if method == "tools/call":

            def pieces() -> Any:
                sampling = {"messages": [], "maxTokens": 5}
                ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "sampling/createMessage"}
                yield sse_event({**ask, "params": sampling})
                refused.wait(30)
                code = refusals[0]["error"]["code"] if refusals else None
                text = {"type": "text", "text": f"the client said {code}"}
                yield sse_event(json.loads(reply(seen, {"content": [text]})))

            return 200, "text/event-stream", pieces()
        if "id" not in body:
            return 202, "application/json", b""
        return 200, "application/json", reply(seen, {})

    notebook = FakeNotebook(answer)
    try:
        client = SeedClient("bridge", "--url", notebook.url)
        client.handshake()
        # A notebook with only tools answers the document's own example, to the byte.
        header = b"Content-Length: %d\r\n\r\n" % len(DOC_INITIALIZE_REPLY)
        assert bytes(client.stdout).startswith(header + DOC_INITIALIZE_REPLY)
        output = client.result("mcp/executeTool", {"id": "mcp://fake-lab/tools/ask:v1"})
        assert output == {"output": "the client said -32601"}
        assert refusals[0]["id"] == "srv-1" and refusals[0]["error"]["code"] == -32601
        assert client.close() == 0
        assert not [m for m in client.messages if m.get("method") == "sampling/createMessage"]
    finally:
        notebook.close()
