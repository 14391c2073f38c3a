"""Which way a POST to the HTTP endpoint goes (transports/posts.py ``classify``).

The order matters to clients: a seed-dialect body is only the dialect without a session,
a ``_meta`` version makes a request stateless even without the header (and even beside a
session header), and a body that is
not JSON-RPC is refused before any era is chosen. End-to-end, each way is in
test_http_*.py, test_modern.py and test_seed_dialect.py; this is the table in one place.
"""

import json

import pytest
import tornado.httputil

from mcp_notebook.transports.posts import classify

JSON = "application/json"
BOTH = "application/json, text/event-stream"
CALL = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "add"}}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
}
MODERN = {
    **CALL,
    "params": {"name": "add", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}},
}
SEED = {"jsonrpc": "2.0", "id": 1, "method": "mcp/listTools"}


def post(body, content_type=JSON, accept=BOTH, **headers):
    fields = {"Content-Type": content_type, "Accept": accept, **headers}
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return classify(tornado.httputil.HTTPHeaders(fields), raw)


def test_a_handshake_call_on_a_session_goes_the_handshake_way_with_what_it_accepts():
    way = post(CALL, **{"Mcp-Session-Id": "s1"})
    assert (way.way, way.kind, way.wants_json, way.wants_sse) == (
        "handshake",
        "request",
        True,
        True,
    )
    assert way.message == CALL


def test_initialize_opens_a_session_and_a_notification_goes_to_its_session():
    assert post(INITIALIZE).way == "initialize"
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    way = post(notification, **{"Mcp-Session-Id": "s1"})
    assert (way.way, way.kind) == ("handshake", "notification")


@pytest.mark.parametrize(
    "body, headers",
    [
        (MODERN, {}),  # _meta says so, no header needed
        (CALL, {"MCP-Protocol-Version": "2026-07-28"}),  # the header says so
    ],
)
def test_a_stateless_request_goes_the_modern_way(body, headers):
    assert post(body, **headers).way == "modern"


def test_modern_meta_is_served_statelessly_even_beside_a_session_header():
    # The 2026-07-28 versioning rules: a request carrying modern _meta is served
    # statelessly, and the transport ignores an Mcp-Session-Id. Before, it went to the
    # session (404 for an old one, or a 400 that named only the handshake versions).
    assert post(MODERN, **{"Mcp-Session-Id": "s1"}).way == "modern"
    with_header = {"Mcp-Session-Id": "s1", "MCP-Protocol-Version": "2026-07-28"}
    assert post(MODERN, **with_header).way == "modern"


def test_a_session_header_keeps_a_request_without_modern_meta_in_the_handshake_era():
    assert post(CALL, **{"Mcp-Session-Id": "s1"}).way == "handshake"
    handshake_meta = {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    old_meta = {**CALL, "params": {"name": "add", "_meta": handshake_meta}}
    assert post(old_meta, **{"Mcp-Session-Id": "s1"}).way == "handshake"  # not modern
    assert post(CALL, **{"Mcp-Session-Id": "s1", "MCP-Protocol-Version": "2026-07-28"}).way == (
        "handshake"  # the version header alone does not make it modern: its session answers
    )


def claimed(way):
    """The dialect plug-in that took a POST, the shape of its replies and its messages."""
    assert way.way == "dialect"
    messages, shape = way.claimed.claim
    return way.claimed.dialect.name, shape, list(messages)


def test_seed_dialect_bodies_single_batch_and_lines():
    assert claimed(post(SEED)) == ("seed", "single", [SEED])
    assert claimed(post([SEED, SEED]))[:2] == ("seed", "batch")
    lines = post(b"\n".join(json.dumps(m).encode() for m in (SEED, SEED)), "application/x-ndjson")
    assert claimed(lines) == ("seed", "lines", [SEED, SEED])


def test_a_seed_body_with_a_session_is_not_the_dialect():
    way = post([SEED, SEED], **{"Mcp-Session-Id": "s1"})
    assert (way.way, way.status, way.error.code) == ("refused", 400, -32600)


@pytest.mark.parametrize(
    "body, content_type, accept, status, code",
    [
        (CALL, "text/plain", BOTH, 415, -32600),
        (CALL, JSON, "text/html", 406, -32600),
        (b"{not json", JSON, BOTH, 400, -32700),
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, JSON, BOTH, 400, -32600),
    ],
)
def test_what_the_endpoint_cannot_take_is_refused_with_its_status(
    body, content_type, accept, status, code
):
    way = post(body, content_type, accept, **{"Mcp-Session-Id": "s1"})
    assert (way.way, way.status, way.error.code) == ("refused", status, code)
