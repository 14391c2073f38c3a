"""The "MCP v1.0" dialect of seed 000, sans-IO, over the real protocol core and registry.

``DocClient`` below is written from the reference document alone (its framing rule, its
handshake, its schemas); it does not use our framers. The server side is the glue a stdio
transport does: detect the framing from the first bytes, frame, hand each message to a
``SeedSession`` whose ``call`` is a real in-process ``Server``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from typing import Any

import jsonschema
import pandas as pd
import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import RpcError, Server, Session
from mcp_notebook.protocol.seed import SeedSession, is_seed_message, server_authority
from mcp_notebook.wire import FramingError, JsonError, detect, make_framer
from tests.seed_schemas import (
    PROMPT_DEFINITION,
    RESOURCE_DEFINITION,
    SERVER_CAPABILITIES,
    TOOL_DEFINITION,
)

# -- the reference document, as a client author reads it -----------------------------------

MCP_ID = re.compile(r"^mcp://[a-z0-9.-]+/(tools|resources|prompts)/[^/\s]+:v1$")

# The document's examples, verbatim ("\r\n" in the document stands for CR LF).
DOC_INITIALIZE = (
    b'{"jsonrpc":"2.0","method":"initialize","params":{"clientCapabilities":{}},"id":1}'
)
DOC_INITIALIZE_REPLY = (
    b'{"jsonrpc":"2.0","id":1,"result":{"capabilities":{"listToolsProvider":true,'
    b'"listResourcesProvider":false,"listPromptsProvider":false,'
    b'"executionProvider":{"execute":true}}}}'
)
DOC_INITIALIZED = b'{"jsonrpc":"2.0","method":"initialized","params":{}}'
DOC_EXECUTE = """{
    "jsonrpc": "2.0",
    "method": "mcp/executeTool",
    "params": {
        "id": "mcp://acme-corp/tools/file-writer:v1",
        "arguments": {
            "path": "/home/agent/output.txt",
            "content": "Hello, world."
        }
    },
    "id": 2
}"""
DOC_EXECUTE_REPLY = """{
    "jsonrpc": "2.0",
    "id": 2,
    "result": {
        "output": {
            "status": "success",
            "bytesWritten": 13
        }
    }
}"""
DOC_INVALID = """{
    "jsonrpc": "2.0",
    "method": "mcp/executeTool",
    "params": {
        "id": "mcp://acme-corp/tools/file-writer:v1",
        "arguments": {
            "path": "/home/agent/output.txt"
        }
    },
    "id": 3
}"""
DOC_INVALID_REPLY = """{
    "jsonrpc": "2.0",
    "id": 3,
    "error": {
        "code": -32602,
        "message": "Invalid params",
        "data": "Missing required property: 'content' in arguments for tool mcp://acme-corp/tools/file-writer:v1"
    }
}"""


def compact(text: str | bytes) -> bytes:
    return json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False).encode()


class DocClient:
    """A minimal MCP v1.0 client: Content-Length frames, ids from 1, the handshake first."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        self.inbox = b""

    @staticmethod
    def frame(body: bytes) -> bytes:
        return b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body

    def request(self, method: str, params: Any = None) -> bytes:
        message = {"jsonrpc": "2.0", "method": method, "params": params, "id": next(self.ids)}
        return self.frame(json.dumps(message).encode())

    def notification(self, method: str, params: Any = None) -> bytes:
        message = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        return self.frame(json.dumps(message).encode())

    def read(self, data: bytes) -> list[dict]:
        """Every whole message in what the server wrote; leftovers would be a protocol bug."""
        self.inbox += data
        out = []
        while self.inbox:
            head, sep, rest = self.inbox.partition(b"\r\n\r\n")
            assert sep, f"not a frame: {self.inbox[:80]!r}"
            fields = dict(line.split(b": ", 1) for line in head.split(b"\r\n"))
            length = int(fields[b"Content-Length"])
            assert len(rest) >= length, "truncated frame"
            out.append(json.loads(rest[:length].decode("utf-8")))
            self.inbox = rest[length:]
        return out


# -- the server side: a stdio transport's glue, sans-IO ------------------------------------


class Stack:
    """A notebook registry behind the real protocol core, and a SeedSession in front of it."""

    def __init__(self, mcp: NotebookMCP, page_size: int = 100, **options: Any) -> None:
        self.mcp = mcp
        self.server = Server(mcp.registry, name=mcp.name, page_size=page_size)
        self.standard = self.server.open_session(Session())
        self.calls: list[str] = []
        self.sent: list[dict] = []  # dialect notifications, in order
        self.session = SeedSession(
            self.call, self.sent.append, notify_standard=self.notify, **options
        )
        self.standard.outbound = self.outbound
        self.unsubscribe = mcp.registry.subscribe(self.announce)
        self._ids = itertools.count(1)

    def announce(self, kind: str, detail: str | None = None) -> None:
        # What the notebook app does with registry changes.
        if kind == "updated":
            self.server.resource_updated(detail)
        else:
            self.server.broadcast(f"notifications/{kind}/list_changed")

    async def call(self, method: str, params: dict) -> dict:
        self.calls.append(method)
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        reply = await self.server.handle(message, self.standard)
        if "error" in reply:
            error = reply["error"]
            raise RpcError(error["code"], error["message"], error.get("data"))
        return reply["result"]

    async def notify(self, method: str, params: dict) -> None:
        await self.server.handle(
            {"jsonrpc": "2.0", "method": method, "params": params}, self.standard
        )

    def outbound(self, message: dict, related: Any = None) -> bool:
        if "id" in message:
            return False  # the dialect has no server->client requests
        self.session.on_standard_notification(message)
        return True

    async def ask(self, method: str, params: Any = None, request_id: Any = 1) -> dict:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        reply = await self.session.handle(message)
        assert reply is not None and reply["id"] == request_id
        return reply

    async def result(self, method: str, params: Any = None) -> Any:
        reply = await self.ask(method, params)
        assert "error" not in reply, reply
        return reply["result"]

    async def error(self, method: str, params: Any = None) -> dict:
        reply = await self.ask(method, params)
        assert "result" not in reply, reply
        assert isinstance(reply["error"].get("data", ""), str)  # data is a sentence, as shown
        return reply["error"]

    async def handshake(self) -> dict:
        result = await self.result("initialize", {"clientCapabilities": {}})
        assert await self.session.handle({"jsonrpc": "2.0", "method": "initialized"}) is None
        await self.session.idle()
        return result["capabilities"]


class Stdio:
    """What the bridge does on stdio: detect, frame, dispatch; errors to 'stderr'."""

    def __init__(self, stack: Stack) -> None:
        self.stack, self.head, self.framer = stack, b"", None
        self.stdout = bytearray()
        self.stderr: list[str] = []
        stack.session.notify_out = self.write

    def write(self, message: Any) -> None:
        assert self.framer is not None
        self.stdout += self.framer.encode(message)

    async def receive(self, data: bytes) -> None:
        if self.framer is None:
            self.head += data
            kind = detect(self.head)
            if kind is None:
                return
            self.framer, data = make_framer(kind), self.head
        for item in self.framer.feed(data):
            if isinstance(item, JsonError):
                self.stderr.append(str(item))
                error = {"code": -32700, "message": "Parse error", "data": str(item)}
                self.write({"jsonrpc": "2.0", "error": error})
            elif isinstance(item, FramingError):
                self.stderr.append(str(item))
            else:
                reply = await self.stack.session.handle(item)
                if reply is not None:
                    self.write(reply)

    def take(self) -> bytes:
        data, self.stdout = bytes(self.stdout), bytearray()
        return data


def file_writer_notebook(name: str = "acme-corp") -> NotebookMCP:
    mcp = NotebookMCP(name)
    mcp.written = {}

    @mcp.tool(name="file-writer")
    def file_writer(path: str, content: str) -> dict:
        """Write text to a file."""
        mcp.written[path] = content
        return {"status": "success", "bytesWritten": len(content.encode())}

    return mcp


def full_notebook(name: str = "acme-corp") -> NotebookMCP:
    mcp = file_writer_notebook(name)

    @mcp.tool
    def add(a: int, b: int = 1) -> int:
        """Add two numbers."""
        return a + b

    @mcp.tool
    def shout(text):
        return str(text).upper()

    @mcp.tool
    def nothing() -> None:
        """Do nothing."""

    @mcp.tool
    def stats(values: list[float]):
        return {"n": len(values), "total": sum(values)}

    @mcp.tool
    def divide(a: float, b: float) -> float:
        return a / b

    mcp.resource("Quarterly notes: revenue up ✓", name="notes", description="Team notes")
    mcp.resource(pd.DataFrame({"region": ["EU", "US"], "sales": [3, 4]}), name="sales")
    mcp.resource(b"\x89PNG\r\n\x1a\nrest", name="logo")
    mcp.prompt("summarize", "Summarize {topic} in {n} bullet points.", description="Summaries")

    @mcp.prompt
    def review(code: str):
        """Review some code."""
        return [("assistant", "I am a careful reviewer."), ("user", f"Review: {code}")]

    return mcp


# -- the document's examples, replayed -----------------------------------------------------


async def test_document_handshake_replayed_byte_for_byte():
    stdio = Stdio(Stack(file_writer_notebook()))
    client = DocClient()
    await stdio.receive(client.frame(DOC_INITIALIZE))
    out = stdio.take()
    # The body is the document's to the byte; the length is the body's real one (172),
    # not the document's 175.
    assert out == b"Content-Length: 172\r\n\r\n" + DOC_INITIALIZE_REPLY
    assert client.read(out)[0]["result"]["capabilities"]["executionProvider"] == {"execute": True}
    await stdio.receive(client.frame(DOC_INITIALIZED))
    assert stdio.take() == b""  # a notification is never answered
    assert stdio.stack.session.initialized


async def test_document_content_length_values_do_not_match_their_bodies():
    assert (len(DOC_INITIALIZE), len(DOC_INITIALIZE_REPLY), len(DOC_INITIALIZED)) == (81, 172, 52)
    stdio = Stdio(Stack(file_writer_notebook()))
    # Taken literally, "Content-Length: 104" leaves the server waiting for 23 more bytes...
    await stdio.receive(b"Content-Length: 104\r\n\r\n" + DOC_INITIALIZE)
    assert stdio.take() == b""
    # ...which it then takes from the next message: an error, not a crash, and no hang.
    await stdio.receive(b"Content-Length: 54\r\n\r\n" + DOC_INITIALIZED)
    assert stdio.stderr and "not valid JSON" in stdio.stderr[0]
    assert DocClient().read(stdio.take())[0]["error"]["code"] == -32700


@pytest.mark.parametrize("handshake", [True, False], ids=["stdio-session", "http-post"])
async def test_document_execute_examples_replayed(handshake):
    stack = Stack(file_writer_notebook(), require_handshake=handshake)
    if handshake:
        await stack.handshake()
    reply = await stack.session.handle(json.loads(DOC_EXECUTE))
    assert compact(json.dumps(reply)) == compact(DOC_EXECUTE_REPLY)
    assert stack.mcp.written == {"/home/agent/output.txt": "Hello, world."}
    reply = await stack.session.handle(json.loads(DOC_INVALID))
    assert compact(json.dumps(reply)) == compact(DOC_INVALID_REPLY)


# -- handshake -----------------------------------------------------------------------------


async def test_capabilities_follow_what_is_registered():
    empty = await Stack(NotebookMCP("x")).handshake()
    assert empty == {
        "listToolsProvider": False,
        "listResourcesProvider": False,
        "listPromptsProvider": False,
        "executionProvider": {"execute": False},
    }
    full = await Stack(full_notebook()).handshake()
    jsonschema.validate(full, SERVER_CAPABILITIES)
    assert full["listResourcesProvider"] and full["listPromptsProvider"]
    assert full["executionProvider"]["execute"]
    mcp = NotebookMCP("x")
    mcp.resource("text", name="only")
    assert await Stack(mcp).handshake() == {**empty, "listResourcesProvider": True}


async def test_anything_before_initialize_is_an_error():
    stack = Stack(full_notebook())
    for method in ("mcp/listTools", "mcp/executeTool", "ping", "shutdown"):
        error = await stack.error(method, {})
        assert error["code"] == -32002 and error["message"] == "Server not initialized"
        assert "initialize" in error["data"]
    assert await stack.session.handle({"jsonrpc": "2.0", "method": "initialized"}) is None
    assert not stack.session.initialized  # `initialized` before `initialize` means nothing
    assert stack.calls == []  # nothing reached the notebook
    await stack.handshake()


async def test_initialize_id_need_not_be_1_but_initialize_happens_once():
    stack = Stack(full_notebook())
    reply = await stack.ask("initialize", {"clientCapabilities": {}}, request_id="init")
    assert "capabilities" in reply["result"]
    again = await stack.error("initialize", {"clientCapabilities": {}})
    assert again["code"] == -32600 and "once" in again["data"]


@pytest.mark.parametrize(
    "params", [{"clientCapabilities": []}, {"rootUri": 7}, {"trace": True}], ids=str
)
async def test_initialize_params_are_checked(params):
    error = await Stack(full_notebook()).error("initialize", params)
    assert error["code"] == -32602 and next(iter(params)) in error["data"]


async def test_standard_initialize_is_made_once_with_our_version():
    stack = Stack(full_notebook())
    await stack.handshake()
    assert stack.calls[0] == "initialize"
    assert stack.standard.protocol_version == "2025-11-25"
    assert stack.standard.initialized  # notifications/initialized was sent too
    await stack.result("mcp/listTools")
    assert stack.calls.count("initialize") == 1


async def test_requests_sent_while_initializing_wait_for_it():
    stack = Stack(full_notebook())
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    tools = {"jsonrpc": "2.0", "id": 2, "method": "mcp/listTools"}
    first, second = await asyncio.gather(stack.session.handle(init), stack.session.handle(tools))
    assert "capabilities" in first["result"] and len(second["result"]) == 6


async def test_failed_standard_initialize_can_be_retried():
    stack = Stack(full_notebook())
    real = stack.call
    down = True

    async def flaky(method: str, params: dict) -> dict:
        if down:
            raise RpcError(-32000, "Notebook server unreachable", {"server": "acme"})
        return await real(method, params)

    stack.session.call = flaky
    error = await stack.error("initialize", {})
    assert error["code"] == -32000 and error["message"] == "Notebook server unreachable"
    assert error["data"] == '{"server": "acme"}'
    assert (await stack.error("mcp/listTools"))["code"] == -32002
    down = False
    assert (await stack.result("initialize", {}))["capabilities"]["listToolsProvider"]


async def test_initialized_may_overtake_the_initialize_reply():
    stack = Stack(full_notebook())
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    initialized = {"jsonrpc": "2.0", "method": "initialized"}
    await asyncio.gather(stack.session.handle(init), stack.session.handle(initialized))
    await stack.session.idle()
    assert stack.session.initialized and stack.standard.subscriptions


async def test_without_handshake_one_http_post_is_a_session():
    stack = Stack(full_notebook(), require_handshake=False)
    assert len(await stack.result("mcp/listTools")) == 6  # the standard session opened itself
    assert stack.calls[0] == "initialize"
    assert (await stack.error("initialize", {}))["code"] == -32600


async def test_all_pages_are_listed():
    mcp = full_notebook()
    for i in range(5):
        mcp.prompt(f"p{i}", "Text.")
    stack = Stack(mcp, page_size=2)
    await stack.handshake()
    assert len(await stack.result("mcp/listTools")) == 6
    assert len(await stack.result("mcp/listResources")) == 3
    assert len(await stack.result("mcp/listPrompts")) == 7
    assert stack.calls.count("tools/list") > 3  # really paged


async def test_kinds_the_server_does_not_offer():
    stack = Stack(full_notebook())
    real = stack.call

    async def no_prompts(method: str, params: dict) -> dict:
        result = await real(method, params)
        if method == "initialize":
            result["capabilities"].pop("prompts")
        return result

    stack.session.call = no_prompts
    capabilities = await stack.handshake()
    assert capabilities["listToolsProvider"] and not capabilities["listPromptsProvider"]
    assert await stack.result("mcp/listPrompts") == []
    assert "prompts/list" not in stack.calls


async def test_closed_session_sends_nothing():
    stack = Stack(full_notebook())
    await stack.handshake()
    stack.session.close()
    stack.mcp.tool(name="late")(lambda: 1)
    stack.server.resource_updated("resource://notes")
    assert stack.sent == []


# -- JSON-RPC discipline -------------------------------------------------------------------


@pytest.mark.parametrize(
    "message, reply_id",
    [
        ({"jsonrpc": "1.0", "id": 4, "method": "mcp/listTools"}, 4),
        ({"id": 4, "method": "mcp/listTools"}, 4),
        ({"jsonrpc": "2.0", "id": 4, "method": 7}, 4),
        ({"jsonrpc": "2.0", "id": 4, "method": "mcp/listTools", "params": [1]}, 4),
        ({"jsonrpc": "2.0", "id": [1], "method": "mcp/listTools"}, None),
        ("mcp/listTools", None),
        (7, None),
    ],
)
async def test_invalid_requests_get_an_error_with_their_id_or_none(message, reply_id):
    reply = await Stack(full_notebook()).session.handle(message)
    expected = {"jsonrpc": "2.0", "error": reply["error"]}
    if reply_id is not None:
        expected["id"] = reply_id
    assert reply == expected  # never "id": null, which MCP forbids
    assert reply["error"]["code"] == -32600 and reply["error"]["message"] == "Invalid Request"


async def test_notifications_and_responses_are_never_answered():
    stack = Stack(full_notebook())
    await stack.handshake()
    for message in (
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "method": "mcp/executeTool", "params": {"id": "x"}},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 1}},
        {"jsonrpc": "2.0", "id": 99, "result": {}},
    ):
        assert await stack.session.handle(message) is None


async def test_unknown_method():
    stack = Stack(full_notebook())
    await stack.handshake()
    error = await stack.error("tools/list", {})
    assert error["code"] == -32601 and "tools/list" in error["data"]


async def test_batch():
    stack = Stack(full_notebook())
    replies = await stack.session.handle(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "method": "initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "mcp/listPrompts", "params": None},
        ]
    )
    assert [r["id"] for r in replies] == [1, 2]
    assert (await stack.session.handle([]))["error"]["code"] == -32600


# -- tools ---------------------------------------------------------------------------------


async def test_list_tools_definitions():
    stack = Stack(full_notebook())
    await stack.handshake()
    tools = {t["name"]: t for t in await stack.result("mcp/listTools", None)}
    assert list(tools) == ["file-writer", "add", "shout", "nothing", "stats", "divide"]
    for tool in tools.values():
        jsonschema.validate(tool, TOOL_DEFINITION)
        assert MCP_ID.match(tool["mcpId"])
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])
    assert tools["add"]["mcpId"] == "mcp://acme-corp/tools/add:v1"
    assert tools["add"]["description"] == "Add two numbers."
    assert tools["add"]["inputSchema"]["required"] == ["a"]
    assert tools["add"]["outputSchema"]["properties"]["result"]["type"] == "integer"
    assert tools["shout"]["description"] == "Shout."  # no docstring: made from the name
    assert "type" not in tools["shout"]["outputSchema"]  # permissive: any output fits


@pytest.mark.parametrize(
    "name, arguments, output",
    [
        ("add", {"a": 2}, {"result": 3}),  # structuredContent, as the outputSchema says
        ("shout", {"text": "hé"}, "HÉ"),  # no schema: the tool's text
        ("nothing", {}, None),  # nothing returned: null
        ("nothing", None, None),  # arguments may be omitted when nothing is required
        ("stats", {"values": [1, 2.5]}, {"n": 2, "total": 3.5}),
    ],
)
async def test_execute_tool_output_matches_its_schema(name, arguments, output):
    stack = Stack(full_notebook())
    await stack.handshake()
    tools = {t["name"]: t for t in await stack.result("mcp/listTools")}
    params = {"id": tools[name]["mcpId"]}
    if arguments is not None:
        params["arguments"] = arguments
    result = await stack.result("mcp/executeTool", params)
    assert result == {"output": output}
    jsonschema.validate(result["output"], tools[name]["outputSchema"])


@pytest.mark.parametrize(
    "params, data",
    [
        ({"arguments": {}}, "Missing required property: 'id' in params for mcp/executeTool"),
        ({"id": 5}, "Invalid property: 'id' in params for mcp/executeTool"),
        (
            {"id": "mcp://acme-corp/tools/nope:v1"},
            "Unknown tool: mcp://acme-corp/tools/nope:v1",
        ),
        (
            {"id": "mcp://acme-corp/tools/add:v1", "arguments": [1, 2]},
            "Invalid property: 'arguments' in params for tool mcp://acme-corp/tools/add:v1",
        ),
        (
            {"id": "mcp://acme-corp/tools/add:v1", "arguments": {"a": "two"}},
            "Invalid property: 'a' in arguments for tool mcp://acme-corp/tools/add:v1: "
            "'two' is not of type 'integer'",
        ),
        (
            {"id": "mcp://acme-corp/tools/add:v1", "arguments": {"a": 1, "c": 3}},
            "Invalid arguments for tool mcp://acme-corp/tools/add:v1: Additional properties",
        ),
        (
            {"id": "mcp://acme-corp/tools/stats:v1", "arguments": {"values": [1, "x"]}},
            "Invalid property: 'values[1]' in arguments for tool mcp://acme-corp/tools/stats:v1",
        ),
    ],
)
async def test_execute_tool_invalid_params(params, data):
    stack = Stack(full_notebook())
    await stack.handshake()
    error = await stack.error("mcp/executeTool", params)
    assert error["code"] == -32602 and error["message"] == "Invalid params"
    assert error["data"].startswith(data)
    assert "tools/call" not in stack.calls  # rejected before any user code runs


async def test_tool_failure_is_a_dialect_error_with_the_message():
    stack = Stack(full_notebook())
    await stack.handshake()
    params = {"id": "mcp://acme-corp/tools/divide:v1", "arguments": {"a": 1, "b": 0}}
    error = await stack.error("mcp/executeTool", params)
    assert error["code"] == -32000 and error["message"] == "Tool execution failed"
    assert "ZeroDivisionError" in error["data"] and "tools/divide:v1" in error["data"]
    assert stack.server.calls[-1].status == "error"  # the notebook's call log saw it


async def test_output_that_breaks_the_schema_is_an_error():
    mcp = NotebookMCP("x")
    mcp.tool(output_schema={"type": "object", "required": ["n"]}, name="liar")(lambda: "text")
    stack = Stack(mcp)
    await stack.handshake()
    error = await stack.error("mcp/executeTool", {"id": "mcp://x/tools/liar:v1"})
    assert -32099 <= error["code"] <= -32000


# -- mcpIds --------------------------------------------------------------------------------


async def all_ids(stack: Stack) -> list[str]:
    ids = []
    for method in ("mcp/listTools", "mcp/listResources", "mcp/listPrompts"):
        ids += [item["mcpId"] for item in await stack.result(method)]
    return ids


async def test_mcp_ids_are_stable_across_sessions_restarts_and_reruns():
    first = Stack(full_notebook())
    await first.handshake()
    ids = await all_ids(first)
    assert len(ids) == len(set(ids)) == 11 and all(MCP_ID.match(i) for i in ids)
    # Another session on the same server, and a "restarted kernel" (a new registry).
    for stack in (Stack(first.mcp), Stack(full_notebook())):
        await stack.handshake()
        assert await all_ids(stack) == ids
    # Re-running cells replaces definitions: the ids stay.
    mcp = first.mcp
    mcp.tool(name="add")(lambda a, b: a - b)
    mcp.resource("new notes", name="notes")
    mcp.prompt("summarize", "Summarize {topic}.")
    assert await all_ids(first) == ids


async def test_mcp_ids_are_unique_across_kinds_and_odd_names():
    mcp = NotebookMCP("My Notebook (v2)")
    mcp.tool(name="sales")(lambda: 1)
    mcp.resource("a", name="sales")
    mcp.resource("b", name="a/b:c d", uri="notes://x")
    mcp.prompt("sales", "Sales.")
    stack = Stack(mcp)
    await stack.handshake()
    ids = await all_ids(stack)
    assert ids == [
        "mcp://my-notebook-v2/tools/sales:v1",
        "mcp://my-notebook-v2/resources/sales:v1",
        "mcp://my-notebook-v2/resources/a%2Fb%3Ac%20d:v1",
        "mcp://my-notebook-v2/prompts/sales:v1",
    ]


def test_server_authority():
    assert server_authority("quickstart") == "quickstart"
    assert server_authority("  Ünïcode Book!! ") == "n-code-book"
    assert server_authority("") == server_authority(None) == "mcp-notebook"


async def test_explicit_server_name_wins():
    stack = Stack(full_notebook(), server_name="Acme Corp")
    await stack.handshake()
    assert (await stack.result("mcp/listTools"))[0]["mcpId"].startswith("mcp://acme-corp/")


# -- resources and prompts -----------------------------------------------------------------


async def test_list_resources_inlines_content():
    mcp = full_notebook()

    def broken() -> str:
        raise RuntimeError("disk on fire")

    mcp.resource(broken, name="broken")
    stack = Stack(mcp)
    await stack.handshake()
    resources = {r["name"]: r for r in await stack.result("mcp/listResources", {})}
    for resource in resources.values():
        jsonschema.validate(resource, RESOURCE_DEFINITION)
        assert MCP_ID.match(resource["mcpId"])
    notes = resources["notes"]
    assert notes["content"] == "Quarterly notes: revenue up ✓"
    assert (notes["mediaType"], notes["description"]) == ("text/plain", "Team notes")
    assert resources["sales"]["mediaType"] == "text/csv"
    assert resources["sales"]["content"].splitlines() == ["region,sales", "EU,3", "US,4"]
    logo = resources["logo"]
    assert (logo["mediaType"], logo["contentEncoding"]) == ("image/png", "base64")
    assert logo["content"] == "iVBORw0KGgpyZXN0"
    assert (
        resources["broken"]["content"] == ""
        and "disk on fire" in resources["broken"]["contentError"]
    )


async def test_inline_content_is_bounded():
    stack = Stack(full_notebook(), max_inline_bytes=25)
    await stack.handshake()
    resources = {r["name"]: r for r in await stack.result("mcp/listResources")}
    assert resources["notes"]["content"] == "" and "limit" in resources["notes"]["contentError"]
    assert resources["logo"]["content"]  # 12 bytes: under the limit
    # A size declared in the listing spares the read altogether.
    reads = stack.calls.count("resources/read")
    assert reads == 2  # sales and logo; notes was skipped by its declared size


async def test_list_prompts():
    stack = Stack(full_notebook())
    await stack.handshake()
    prompts = {p["name"]: p for p in await stack.result("mcp/listPrompts")}
    for prompt in prompts.values():
        jsonschema.validate(prompt, PROMPT_DEFINITION)
    summarize = prompts["summarize"]
    assert summarize["content"] == "Summarize {topic} in {n} bullet points."
    assert summarize["role"] == "user"
    assert [a["name"] for a in summarize["arguments"]] == ["topic", "n"]
    review = prompts["review"]
    assert review["role"] == "assistant"
    assert review["content"] == "I am a careful reviewer.\n\nReview: {code}"
    assert [m["role"] for m in review["messages"]] == ["assistant", "user"]


# -- notifications -------------------------------------------------------------------------


async def test_no_notification_before_initialized():
    stack = Stack(full_notebook())
    await stack.result("initialize", {})
    stack.mcp.tool(name="late")(lambda: 1)
    stack.mcp.resource("changed", name="notes")
    stack.server.resource_updated("resource://notes")
    await stack.session.idle()
    assert stack.sent == []
    assert "resources/subscribe" not in stack.calls


async def test_list_changes_after_initialized():
    stack = Stack(full_notebook())
    await stack.handshake()
    stack.mcp.tool(name="late")(lambda: 1)
    stack.mcp.prompt("late", "Late.")
    assert [m["method"] for m in stack.sent] == [
        "mcp/listToolsDidChange",
        "mcp/listPromptsDidChange",
    ]
    assert all(m == {"jsonrpc": "2.0", "method": m["method"], "params": {}} for m in stack.sent)


async def test_resource_did_change():
    stack = Stack(full_notebook())
    await stack.handshake()
    assert stack.standard.subscriptions == {"resource://notes", "df://sales", "resource://logo"}
    stack.server.resource_updated("df://sales")
    assert stack.sent == [
        {
            "jsonrpc": "2.0",
            "method": "mcp/resourceDidChange",
            "params": {"mcpId": "mcp://acme-corp/resources/sales:v1"},
        }
    ]


def did_change(stack: Stack) -> list[str]:
    sent, stack.sent[:] = list(stack.sent), []
    return [m["params"]["mcpId"].rsplit("/", 1)[-1] if m["params"] else m["method"] for m in sent]


async def test_rerunning_a_resource_cell_tells_the_client():
    stack = Stack(full_notebook())
    await stack.handshake()
    stack.mcp.resource("v2", name="notes")  # same URI: `updated` at once, then the list
    stack.mcp.resource("v3", name="notes")  # list refreshes coalesce
    stack.mcp.resource("fresh", name="fresh")
    await stack.session.idle()
    assert did_change(stack) == [
        "notes:v1",
        "notes:v1",
        "mcp/listResourcesDidChange",
        "notes:v1",  # its definition changed too (size)
        "fresh:v1",
    ]
    assert "resource://fresh" in stack.standard.subscriptions
    notes = [r for r in await stack.result("mcp/listResources") if r["name"] == "notes"]
    assert notes[0]["content"] == "v3"
    # A name moved to another URI keeps its mcpId, which now names other content.
    stack.mcp.resource("moved", name="notes", uri="notes://moved")
    stack.mcp.remove("logo")
    await stack.session.idle()
    assert did_change(stack) == ["mcp/listResourcesDidChange", "notes:v1", "logo:v1"]
    stack.server.resource_updated("notes://moved")
    assert did_change(stack) == ["notes:v1"]


async def test_standard_reconnection_resubscribes_and_refreshes():
    stack = Stack(full_notebook())
    await stack.handshake()
    ids = await all_ids(stack)
    # A "kernel restart": a new server and registry behind the same SeedSession.
    restarted = Stack(full_notebook())
    await restarted.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    restarted.standard.outbound = stack.outbound
    stack.session.call = restarted.call
    stack.session.standard_reconnected()
    await stack.session.idle()
    assert sorted(did_change(stack)) == [
        "logo:v1",
        "mcp/listPromptsDidChange",
        "mcp/listResourcesDidChange",
        "mcp/listToolsDidChange",
        "notes:v1",
        "sales:v1",
    ]
    assert restarted.standard.subscriptions == stack.standard.subscriptions
    assert await all_ids(stack) == ids


async def test_handshake_complete_only_with_an_explicit_handshake():
    stack = Stack(full_notebook())
    await stack.handshake()
    assert stack.session.handshake_complete
    post = Stack(full_notebook(), require_handshake=False)
    await post.result("mcp/listTools")
    assert post.session.initialized and not post.session.handshake_complete


async def test_trace_on_forwards_log_messages():
    stack = Stack(full_notebook())
    await stack.result("initialize", {"clientCapabilities": {}, "trace": "on"})
    await stack.session.handle({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    log = {"level": "info", "logger": "tool", "data": "halfway"}
    stack.session.on_standard_notification(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": log}
    )
    assert stack.sent[-1] == {
        "jsonrpc": "2.0",
        "method": "$/logTrace",
        "params": {"message": "[info] tool halfway"},
    }


# -- a whole stdio session, as the document's client sees it -------------------------------


async def test_stdio_session_end_to_end():
    stdio = Stdio(Stack(full_notebook()))
    client = DocClient()
    wire = client.request("initialize", {"clientCapabilities": {}, "rootUri": None})
    for i in range(len(wire)):  # one byte per read: detection and framing cope
        await stdio.receive(wire[i : i + 1])
    (reply,) = client.read(stdio.take())
    assert reply["id"] == 1 and reply["result"]["capabilities"]["listToolsProvider"]
    await stdio.receive(client.notification("initialized"))
    await stdio.stack.session.idle()
    assert stdio.take() == b""
    batch = (
        client.request("mcp/listTools")
        + client.request(
            "mcp/executeTool",
            {"id": "mcp://acme-corp/tools/add:v1", "arguments": {"a": 40, "b": 2}},
        )
        + client.request("mcp/listResources", {})
        + b"Content-Length: nope\r\n\r\n{}"
        + client.request("mcp/listPrompts")
    )
    await stdio.receive(batch)
    replies = client.read(stdio.take())  # every byte on stdout is a whole frame
    assert [r["id"] for r in replies] == [2, 3, 4, 5]
    assert replies[1]["result"] == {"output": {"result": 42}}
    assert stdio.stderr == ["Invalid Content-Length 'nope': not a number"]
    stdio.stack.server.resource_updated("resource://notes")
    (note,) = client.read(stdio.take())
    assert note["method"] == "mcp/resourceDidChange" and "id" not in note


# -- telling the dialects apart ------------------------------------------------------------


@pytest.mark.parametrize(
    "message, seed",
    [
        (json.loads(DOC_INITIALIZE), True),
        (json.loads(DOC_INITIALIZED), True),
        (json.loads(DOC_EXECUTE), True),
        ({"jsonrpc": "2.0", "id": 1, "method": "mcp/listTools"}, True),
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, True),
        ([{"jsonrpc": "2.0", "id": 1, "method": "mcp/listTools"}], True),
        (
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}},
            },
            False,
        ),
        ({"jsonrpc": "2.0", "method": "notifications/initialized"}, False),
        ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, False),
        ({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}, False),
        ({"jsonrpc": "2.0", "id": 1, "method": "initialize"}, False),
        ({"jsonrpc": "2.0", "id": 1, "result": {}}, False),
        ([], False),
        ("mcp/listTools", False),
    ],
)
def test_is_seed_message(message, seed):
    assert is_seed_message(message) is seed
