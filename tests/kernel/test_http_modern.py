"""2026-07-28 over Streamable HTTP, raw: no sessions, headers that must match the body."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import start_server
from tests.schema import validate, validate_notification, validate_reply
from tests.sources import ADD_BARE, ADD_INTS
from tests.waiting import wait_until

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-2026", "version": "1"},
}
SETUP = (
    """
import asyncio
from mcp_notebook import Context

"""
    + ADD_INTS
    + '''
@mcp.tool(
    description="Mirrors its region in a header",
    input_schema={"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]},
)
def where(region: str) -> str:
    return region

cancelled = []

@mcp.tool
async def wait_long(ctx: Context) -> str:
    """Waits until cancelled."""
    ctx.report_progress(1, message="started")
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        cancelled.append(True)
        raise
    return "done"

mcp.prompt("hello", "Hello {who}")
mcp.resource("notes", name="notes", uri="text://notes")
'''
)


class Modern:
    """A lean 2026-07-28 client: every request on its own, headers derived from the body."""

    def __init__(self, url: str, token: str | None) -> None:
        parts = urlsplit(url)
        self.host, self.port, self.path, self.token = parts.hostname, parts.port, parts.path, token

    def message(self, method: str, params: dict[str, Any] | None = None, id: Any = 1) -> dict:
        params = dict(params or {})
        params["_meta"] = {**META, **params.get("_meta", {})}
        return {"jsonrpc": "2.0", "id": id, "method": method, "params": params}

    def headers(self, message: dict, **overrides: str | None) -> dict[str, str]:
        params = message.get("params") or {}
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {self.token}",
            "MCP-Protocol-Version": MODERN,
            "Mcp-Method": message["method"],
        }
        name = params.get("uri") if message["method"] == "resources/read" else params.get("name")
        if name is not None:
            headers["Mcp-Name"] = name
        headers.update(overrides)
        return {k: v for k, v in headers.items() if v is not None}

    def send(
        self, message: dict, **overrides: str | None
    ) -> tuple[int, http.client.HTTPMessage, list]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.request(
                "POST", self.path, json.dumps(message), self.headers(message, **overrides)
            )
            response = connection.getresponse()
            body = response.read().decode()
            kind = response.headers.get("Content-Type", "")
            if kind.startswith("text/event-stream"):
                messages = [
                    json.loads(line[5:])
                    for line in body.splitlines()
                    if line.startswith("data:") and line[5:].strip()
                ]
            else:
                messages = [json.loads(body)] if body else []
            return response.status, response.headers, messages
        finally:
            connection.close()


@pytest.fixture(scope="module")
def modern(kernel):
    served = start_server(kernel, SETUP)
    return Modern(served.url, served.token)


def reply_of(messages: list, request_id: Any = 1) -> dict:
    return next(m for m in messages if m.get("id") == request_id and "method" not in m)


def test_discover_names_both_eras_and_the_server(modern):
    status, headers, messages = modern.send(modern.message("server/discover"))
    assert status == 200 and "Mcp-Session-Id" not in headers
    reply = validate_reply("server/discover", reply_of(messages), MODERN)
    result = reply["result"]
    assert result["supportedVersions"][-1] == MODERN and "2025-11-25" in result["supportedVersions"]
    assert result["resultType"] == "complete" and result["ttlMs"] == 0
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-notebook"


@pytest.mark.parametrize(
    "method, params, definition",
    [
        ("tools/list", {}, "ListToolsResult"),
        ("prompts/list", {}, "ListPromptsResult"),
        ("resources/list", {}, "ListResourcesResult"),
        ("resources/templates/list", {}, "ListResourceTemplatesResult"),
        ("resources/read", {"uri": "text://notes"}, "ReadResourceResult"),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}, "CallToolResult"),
        ("prompts/get", {"name": "hello", "arguments": {"who": "you"}}, "GetPromptResult"),
    ],
)
def test_every_result_has_a_type_and_cacheable_ones_a_freshness(modern, method, params, definition):
    status, _, messages = modern.send(modern.message(method, params))
    assert status == 200
    result = reply_of(messages)["result"]
    validate(result, definition, MODERN)
    assert result["resultType"] == "complete"
    if method.endswith("list") or method == "resources/read":
        assert result["ttlMs"] == 0 and result["cacheScope"] == "private"


def test_tools_come_in_a_deterministic_order(modern):
    names = [
        [
            t["name"]
            for t in reply_of(modern.send(modern.message("tools/list"))[2])["result"]["tools"]
        ]
        for _ in range(3)
    ]
    assert names[0] == names[1] == names[2] == ["add", "where", "wait_long"]


def error_of(status_messages, status: int, code: int, request_id: Any = 1) -> dict:
    status_got, _, messages = status_messages
    assert status_got == status, messages
    reply = messages[0]
    assert reply["id"] == request_id and reply["error"]["code"] == code, reply
    validate(reply, "JSONRPCErrorResponse", MODERN)
    return reply["error"]


def test_meta_problems_are_400_invalid_params(modern):
    bare = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    error_of(modern.send(bare), 400, -32602, 7)
    no_caps = modern.message("tools/list", id=8)
    del no_caps["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert "clientCapabilities" in error_of(modern.send(no_caps), 400, -32602, 8)["message"]
    no_info = modern.message("tools/list", id=9)
    del no_info["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]
    assert modern.send(no_info)[0] == 200  # clientInfo is optional


def test_versions_unsupported_or_disagreeing_with_the_header(modern):
    future = modern.message(
        "tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion": "v9"}}
    )
    error = error_of(modern.send(future, **{"MCP-Protocol-Version": "v9"}), 400, -32022)
    assert error["data"] == {"supported": [MODERN], "requested": "v9"}
    error_of(modern.send(future), 400, -32020)  # header says 2026-07-28, _meta says v9
    plain = modern.message("tools/list")
    error_of(modern.send(plain, **{"MCP-Protocol-Version": None}), 400, -32020)


@pytest.mark.parametrize(
    "method, params, overrides",
    [
        ("tools/list", {}, {"Mcp-Method": "prompts/list"}),
        ("tools/list", {}, {"Mcp-Method": None}),
        ("tools/list", {}, {"Mcp-Method": "TOOLS/LIST"}),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}, {"Mcp-Name": "other"}),
        ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}, {"Mcp-Name": None}),
        ("resources/read", {"uri": "text://notes"}, {"Mcp-Name": "text://other"}),
        ("tools/call", {"name": "where", "arguments": {"region": "eu"}}, {}),
        (
            "tools/call",
            {"name": "where", "arguments": {"region": "eu"}},
            {"Mcp-Param-Region": "us"},
        ),
        (
            "tools/call",
            {"name": "where", "arguments": {"region": "Hello"}},
            {"Mcp-Param-Region": "=?base64?SGVsbG8?=", "Mcp-Name": "where"},
        ),
    ],
)
def test_headers_that_disagree_with_the_body_are_400(modern, method, params, overrides):
    error_of(modern.send(modern.message(method, params), **overrides), 400, -32020)


@pytest.mark.parametrize(
    "region, header",
    [("eu", "eu"), ("Hello", "=?base64?SGVsbG8=?="), ("SGVsbG8=", "SGVsbG8="), ("x y", "  x y  ")],
)
def test_mirrored_parameters_verbatim_or_base64(modern, region, header):
    message = modern.message("tools/call", {"name": "where", "arguments": {"region": region}})
    status, _, messages = modern.send(message, **{"Mcp-Param-Region": header})
    assert status == 200
    assert reply_of(messages)["result"]["content"][0]["text"] == region


def test_header_names_are_case_insensitive_and_values_trimmed(modern):
    message = modern.message("tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})
    status, _, messages = modern.send(message, **{"Mcp-Name": "  add  "})
    assert status == 200 and reply_of(messages)["result"]["content"][0]["text"] == "4"


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "nope/nope"]
)
def test_removed_and_unknown_methods_are_404(modern, method):
    error_of(modern.send(modern.message(method)), 404, -32601)


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_task_methods_without_mcp_name_are_a_header_mismatch(modern, method):
    """Mcp-Name mirrors params.taskId for the Tasks extension's methods (tests/kernel/
    test_tasks.py has the rest)."""
    error_of(modern.send(modern.message(method, {"taskId": "t-1"})), 400, -32020)


@pytest.mark.parametrize("verb", ["GET", "DELETE"])
def test_get_and_delete_are_405_for_this_revision(modern, verb):
    connection = http.client.HTTPConnection(modern.host, modern.port, timeout=30)
    connection.request(
        verb,
        modern.path,
        headers={
            "Accept": "text/event-stream",
            "Authorization": f"Bearer {modern.token}",
            "MCP-Protocol-Version": MODERN,
        },
    )
    response = connection.getresponse()
    assert response.status == 405
    assert response.headers["Allow"] == "POST"
    connection.close()


def test_closing_the_stream_cancels_the_call(modern, kernel):
    kernel.run("cancelled.clear()")
    message = modern.message(
        "tools/call", {"name": "wait_long", "arguments": {}, "_meta": {"progressToken": 5}}
    )
    connection = http.client.HTTPConnection(modern.host, modern.port, timeout=30)
    connection.request("POST", modern.path, json.dumps(message), modern.headers(message))
    response = connection.getresponse()
    assert response.headers["Content-Type"].startswith("text/event-stream")
    first = b""
    while b"notifications/progress" not in first:  # the tool is running
        first += response.readline()
    progress = json.loads(first.decode().split("data:", 1)[1])
    validate_notification(progress, MODERN)
    connection.sock.close()  # hang up: 2026-07-28's way to cancel
    connection.close()
    wait_until(lambda: kernel.eval("cancelled") == [True], "the tool to be cancelled", timeout=20)
    assert (
        kernel.eval("[c.status for c in mcp.calls if c.target == 'wait_long'][-1]") == "cancelled"
    )


def test_listen_acknowledges_tags_filters_and_delivers_changes(modern, kernel):
    message = modern.message(
        "subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id="listen-1"
    )
    connection = http.client.HTTPConnection(modern.host, modern.port, timeout=30)
    connection.request("POST", modern.path, json.dumps(message), modern.headers(message))
    response = connection.getresponse()
    frames: list[dict] = []

    def read() -> None:
        for raw in response:
            line = raw.decode().strip()
            if line.startswith("data:") and line[5:].strip():
                frames.append(json.loads(line[5:]))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    wait_until(lambda: frames, "the acknowledgement", timeout=10)
    kernel.run('mcp.prompt("ignored", "not asked for")')  # filtered out
    kernel.run(ADD_BARE)
    wait_until(lambda: len(frames) >= 2, "the change", timeout=10)
    connection.sock.shutdown(socket.SHUT_RDWR)  # hang up under the reader's feet
    reader.join(10)
    ack, change = frames[0], frames[1]
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["notifications"] == {"toolsListChanged": True}
    assert change["method"] == "notifications/tools/list_changed"
    for frame in frames:
        assert frame["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == "listen-1"
        validate_notification(frame, MODERN)
    assert all(f["method"] != "notifications/prompts/list_changed" for f in frames)


def test_a_base64_encoded_name_and_a_null_mirrored_argument_are_accepted(modern, kernel):
    kernel.run('mcp.resource("bonjour", name="cafe", uri="text://café")')
    message = modern.message("resources/read", {"uri": "text://café"})
    encoded = "=?base64?dGV4dDovL2NhZsOp?="  # "text://café"
    status, _, messages = modern.send(message, **{"Mcp-Name": encoded})
    assert status == 200 and reply_of(messages)["result"]["contents"][0]["text"] == "bonjour"
    null = modern.message("tools/call", {"name": "where", "arguments": {"region": None}})
    status, _, messages = modern.send(null)
    assert status == 200  # no Mcp-Param-Region for a null argument; the tool then says why
    assert reply_of(messages)["result"]["isError"] is True


def test_stopping_the_server_closes_listen_streams_gracefully(modern, kernel):
    """Runs last in this module: it stops the server, then serves again on the same port."""
    message = modern.message("subscriptions/listen", {"notifications": {}}, id=77)
    connection = http.client.HTTPConnection(modern.host, modern.port, timeout=30)
    connection.request("POST", modern.path, json.dumps(message), modern.headers(message))
    response = connection.getresponse()
    first = response.readline()
    while not first.strip().startswith(b"data:"):
        first = response.readline()
    kernel.run("%mcp stop")
    try:
        rest = response.read().decode()  # the stream ends: the listen request's own result
        final = [json.loads(line[5:]) for line in rest.splitlines() if line.startswith("data:")]
        assert final[-1]["id"] == 77
        assert final[-1]["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 77
        validate(final[-1]["result"], "SubscriptionsListenResult", MODERN)
    finally:
        connection.close()
        kernel.run(f"%mcp start --port {modern.port}")
