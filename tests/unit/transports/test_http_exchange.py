"""The endpoint on tornado's HTTP layer (transports/http_exchange.py): what RequestHandler did for
it, done without building one per request, with the same answers."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
import tornado.web

from mcp_notebook.transports.handler import McpHandler
from mcp_notebook.transports.http_exchange import HttpExchange
from tests.unit.transports.test_endpoint_cases import INITIALIZE, TOKEN, tornado_server

HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
}


@pytest.fixture
def port() -> Iterator[int]:
    yield from tornado_server()


def _post(connection: http.client.HTTPConnection, message: Any, **headers: str) -> Any:
    connection.request("POST", "/mcp", json.dumps(message), {**HEADERS, **headers})
    response = connection.getresponse()
    return response, response.read()


def _session(connection: http.client.HTTPConnection) -> str:
    response, _ = _post(connection, INITIALIZE)
    session: str = response.headers["Mcp-Session-Id"]
    notified, _ = _post(
        connection,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        **{"Mcp-Session-Id": session},
    )
    assert notified.status == 202
    return session


def test_no_request_builds_a_tornado_request_handler(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Building a RequestHandler per request was a quarter of a call's time on the server's
    # thread: every request of a session's life is served without one.
    built: list[type] = []
    original = tornado.web.RequestHandler.__init__

    def counting(self: tornado.web.RequestHandler, *args: Any, **kwargs: Any) -> None:
        built.append(type(self))
        original(self, *args, **kwargs)

    monkeypatch.setattr(tornado.web.RequestHandler, "__init__", counting)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    session = _session(connection)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call"}
    call["params"] = {"name": "add", "arguments": {"a": 2, "b": 3}}
    response, body = _post(connection, call, **{"Mcp-Session-Id": session})
    assert response.status == 200 and json.loads(body)["result"]["structuredContent"] == {
        "result": 5
    }
    connection.request("GET", "/nowhere", headers=HEADERS)
    missing = connection.getresponse()
    assert missing.status == 404 and json.loads(missing.read())["error"]["code"] == -32600
    connection.request("DELETE", "/mcp", headers={**HEADERS, "Mcp-Session-Id": session})
    deleted = connection.getresponse()
    deleted.read()
    assert deleted.status in (200, 204)
    assert built == []


def test_an_error_nobody_caught_is_a_500_and_the_connection_serves_on(
    port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = McpHandler._carry_out

    async def failing(self: McpHandler, decision: Any) -> None:
        post = decision.post
        if post is not None and post.message.get("method") == "ping":
            raise RuntimeError("a bug in the endpoint")
        await original(self, decision)

    monkeypatch.setattr(McpHandler, "_carry_out", failing)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    session = _session(connection)
    response, body = _post(
        connection, {"jsonrpc": "2.0", "id": 9, "method": "ping"}, **{"Mcp-Session-Id": session}
    )
    assert response.status == 500
    assert response.headers["Content-Type"] == "application/json"
    error = json.loads(body)
    assert error["id"] == 9 and error["error"]["code"] == -32600
    listed, body = _post(
        connection,
        {"jsonrpc": "2.0", "id": 10, "method": "tools/list"},
        **{"Mcp-Session-Id": session},
    )
    assert listed.status == 200 and json.loads(body)["id"] == 10


def test_a_header_value_that_would_split_the_response_is_refused() -> None:
    exchange = HttpExchange.__new__(HttpExchange)
    exchange.clear()
    exchange.set_header("Mcp-Session-Id", "abc")
    with pytest.raises(ValueError, match="Unsafe header value"):
        exchange.set_header("X-Echo", "a\r\nSet-Cookie: stolen=1")
    with pytest.raises(ValueError, match="Unsafe header value"):
        exchange.set_header("X-Echo", "a\nb")


def test_a_response_without_content_has_no_body_and_no_content_type(port: int) -> None:
    # OPTIONS answers 204; a 204 carries neither a body nor a Content-Type.
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("OPTIONS", "/mcp", headers=HEADERS)
    response = connection.getresponse()
    assert response.status == 204 and response.read() == b""
    assert response.headers["Content-Type"] is None
    assert response.headers["Date"] and response.headers["Server"]
    # and the connection is still good for the next request
    response, body = _post(connection, INITIALIZE)
    assert response.status == 200 and json.loads(body)["id"] == 1


def test_a_method_nobody_serves_elsewhere_is_a_405_with_a_json_error(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request("PROPFIND", "/nowhere", headers=HEADERS)
    response = connection.getresponse()
    assert response.status == 405
    assert response.headers["Content-Type"] == "application/json"
    assert json.loads(response.read())["error"]["code"] == -32600


def test_header_values_given_as_bytes_are_sent_as_their_text() -> None:
    exchange = HttpExchange.__new__(HttpExchange)
    exchange.clear()
    exchange.set_header("Content-Type", b"application/x-ndjson")
    assert exchange._headers["Content-Type"] == "application/x-ndjson"
    with pytest.raises(ValueError, match="Unsafe header value"):
        exchange.set_header("X-Echo", b"a\r\nb")
