"""Bad input over HTTP, in a real kernel: a precise 4xx with a JSON-RPC error, never a 500.

Every case here once took the server to a 500 with a traceback, lost its answer to a
connection reset, held a connection forever, or answered without the request's id.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import start_server
from tests.kernel.test_http_raw import (
    INVALID_REQUEST,
    LIMIT,
    PARSE_ERROR,
    Endpoint,
    Reply,
    assert_healthy,
    expect_error,
    ping_message,
    sse_events,
)
from tests.kernels import Kernel
from tests.sources import ADD_INTS

SETUP = (
    """
from mcp_notebook import Context, ToolResult

"""
    + ADD_INTS
    + '''
@mcp.tool
def mean() -> float:
    """The mean of nothing."""
    return float("nan")

@mcp.tool
def logs_nan(ctx: Context) -> str:
    """Logs a value JSON cannot carry, then answers."""
    ctx.info({"ratio": float("nan")})
    ctx.info("still here")
    return "done"

@mcp.tool
def odd_meta():
    """A result whose _meta holds what JSON cannot."""
    return ToolResult(content=["ok"], meta={"ratio": float("inf")})
'''
)


@pytest.fixture(scope="module")
def ep(kernel: Kernel) -> Endpoint:
    return Endpoint(start_server(kernel, SETUP))


@pytest.fixture
def session(ep: Endpoint) -> str:
    return ep.open_session()


# -- a raw socket, for what http.client will not send or would hide ---------------------
def raw_socket(ep: Endpoint) -> socket.socket:
    return socket.create_connection((ep.host, ep.port), timeout=60)


def head(ep: Endpoint, session: str | None, *lines: str) -> bytes:
    headers = ep.headers(session=session)
    text = f"POST {ep.path} HTTP/1.1\r\nHost: {ep.host}:{ep.port}\r\n"
    text += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    return (text + "".join(f"{line}\r\n" for line in lines) + "\r\n").encode("latin-1")


def strict_json(text: str) -> Any:
    def refuse(token: str) -> Any:
        raise AssertionError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


def read_reply(sock: socket.socket) -> Reply:
    """The whole response; the server closes the connection after it."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head_bytes, _, body = data.partition(b"\r\n\r\n")
    status_line, _, fields = head_bytes.partition(b"\r\n")
    headers = http.client.parse_headers(io.BytesIO(fields + b"\r\n\r\n"))
    return Reply(int(status_line.split()[1]), headers, body)


def chunked(data: bytes, size: int = 1 << 20) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        piece = data[start : start + size]
        yield b"%x\r\n" % len(piece) + piece + b"\r\n"
    yield b"0\r\n\r\n"


# -- item 1: what once gave HTTP 500 -----------------------------------------------------
def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    "body",
    [
        nested(100_000),
        '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"add","arguments":'
        + '{"a":'
        + nested(900)
        + ',"b":1}}}',
        '{"jsonrpc":"2.0","id":8,"method":"logging/setLevel","params":{"level":'
        + nested(960)
        + "}}",
    ],
    ids=["100000-deep", "900-deep-in-arguments", "960-deep-in-params"],
)
def test_deep_json_is_a_400_parse_error(ep: Endpoint, session: str, body: str) -> None:
    reply = ep.post(body.encode(), session=session)
    expect_error(reply, 400, PARSE_ERROR, "nested too deeply")
    assert_healthy(ep)


@pytest.mark.parametrize("request_id", [[1], {"a": 1}, None])
def test_a_cancel_with_a_request_id_that_is_no_id_is_400(
    ep: Endpoint, session: str, request_id: Any
) -> None:
    message = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request_id},
    }
    expect_error(ep.post(message, session=session), 400, -32602, "requestId")
    assert_healthy(ep)


@pytest.mark.parametrize("event_id", ["g." + "9" * 5000, "g.\u00b2", "no-dot", "p1.-1"])
def test_a_last_event_id_that_is_not_ours_is_400(ep: Endpoint, session: str, event_id: str) -> None:
    reply = ep.request(
        "GET", session=session, accept="text/event-stream", extra={"Last-Event-ID": event_id}
    )
    expect_error(reply, 400, INVALID_REQUEST, "Last-Event-ID")
    assert_healthy(ep)


@pytest.mark.parametrize("length", ["\u00b2", "1\u00b2", "-1", "+5", "0x10"])
def test_a_content_length_that_is_not_a_number_is_400(
    ep: Endpoint, session: str, length: str
) -> None:
    sock = raw_socket(ep)
    try:
        sock.sendall(head(ep, session, f"Content-Length: {length}") + b"{}")
        reply = read_reply(sock)
    finally:
        sock.close()
    expect_error(reply, 400, INVALID_REQUEST, "Content-Length")
    assert_healthy(ep)


def test_a_content_length_of_5000_digits_is_413(ep: Endpoint, session: str) -> None:
    sock = raw_socket(ep)
    try:
        sock.sendall(head(ep, session, "Content-Length: " + "9" * 5000) + b"{}")
        reply = read_reply(sock)
    finally:
        sock.close()
    expect_error(reply, 413, INVALID_REQUEST, "too large")
    assert_healthy(ep)


# -- item 5 (HTTP): error bodies carry the id when it is readable -----------------------
def test_http_errors_name_the_request_id_when_it_is_readable(ep: Endpoint, session: str) -> None:
    expect_error(
        ep.post(ping_message(21), session=session, content_type="text/plain"),
        415,
        INVALID_REQUEST,
        request_id=21,
    )
    expect_error(
        ep.post(ping_message("a-22"), session=session, accept="text/html"),
        406,
        INVALID_REQUEST,
        request_id="a-22",
    )
    for message in (
        {"jsonrpc": "2.0", "id": 5, "method": None},
        {"jsonrpc": "2.0", "id": 7},
        {"jsonrpc": "1.0", "id": 9, "method": "ping"},
        {"jsonrpc": "2.0", "id": 10, "method": "ping", "params": [1]},
    ):
        reply = ep.post(message, session=session)
        expect_error(reply, 400, INVALID_REQUEST, request_id=message["id"])
    # An id that is not one (null, a list) is not echoed: the error has no id at all.
    expect_error(ep.post({"jsonrpc": "2.0", "id": [5]}, session=session), 400, INVALID_REQUEST)


# -- item 10: one JSON policy ------------------------------------------------------------
@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_tokens_are_a_400_parse_error(
    ep: Endpoint, session: str, token: str
) -> None:
    arguments = '{"a":' + token + ',"b":1}'
    body = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":'
    body += arguments + "}}"
    expect_error(ep.post(body.encode(), session=session), 400, PARSE_ERROR, token)


def test_a_tool_returning_nan_is_a_tool_error_that_says_so(ep: Endpoint, session: str) -> None:
    reply = ep.rpc(session, "tools/call", {"name": "mean", "arguments": {}})
    result = reply["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "non-finite float (NaN or Infinity), which is not JSON" in text
    assert "None is not of type" not in text


def test_a_reply_that_is_not_json_is_an_error_with_the_request_id(
    ep: Endpoint, session: str
) -> None:
    """Not a closed connection and no reply: one error reply, with the id."""
    reply = ep.post(
        {"jsonrpc": "2.0", "id": 31, "method": "tools/call", "params": {"name": "odd_meta"}},
        session=session,
        accept="application/json",
    )
    body = expect_error(reply, 200, -32603, "not JSON", request_id=31, method="tools/call")
    assert body["id"] == 31
    assert_healthy(ep)


def test_a_notification_that_is_not_json_is_left_out_of_the_stream(
    ep: Endpoint, session: str
) -> None:
    """No NaN token on the wire (strict clients cannot read it): the event is dropped."""
    message = {"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {"name": "logs_nan"}}
    reply = ep.post(message, session=session)
    assert reply.status == 200 and reply.content_type == "text/event-stream", reply.body
    events = [e["data"] for e in sse_events(reply.body) if e.get("data")]
    messages = [strict_json(data) for data in events]  # raises on a NaN token
    logged = [m["params"]["data"] for m in messages if m.get("method") == "notifications/message"]
    assert logged == ["still here"]
    assert messages[-1]["id"] == 41 and messages[-1]["result"]["content"][0]["text"] == "done"


def test_the_413_for_an_announced_oversize_body_reaches_a_client_that_sends_it_all(
    ep: Endpoint, session: str
) -> None:
    """The client sends headers and the whole body, then reads: it gets the 413, no reset."""
    size = LIMIT + (1 << 20)
    sock = raw_socket(ep)
    try:
        sock.sendall(head(ep, session, f"Content-Length: {size}") + b" " * size)
        reply = read_reply(sock)
    finally:
        sock.close()
    expect_error(reply, 413, INVALID_REQUEST, "too large", str(LIMIT))
    assert reply.headers["Connection"] == "close"
    assert_healthy(ep)


def test_a_chunked_body_far_over_the_limit_is_413(ep: Endpoint, session: str) -> None:
    """20 MiB: past tornado's own limit, which answered a bare 400."""
    sock = raw_socket(ep)
    try:
        sock.sendall(head(ep, session, "Transfer-Encoding: chunked"))
        for piece in chunked(b"x" * (20 << 20)):
            sock.sendall(piece)
        reply = read_reply(sock)
    finally:
        sock.close()
    expect_error(reply, 413, INVALID_REQUEST, "too large", str(LIMIT))
    assert_healthy(ep)


def test_a_chunked_body_that_never_ends_gets_408_and_the_connection_closes(
    ep: Endpoint, session: str
) -> None:
    ep.kernel.run("_before = mcp.limits.body_timeout; mcp.limits.body_timeout = 1.0")
    sock = raw_socket(ep)
    try:
        sock.sendall(head(ep, session, "Transfer-Encoding: chunked"))
        sock.sendall(b"5\r\n[1, 2")  # and then nothing more, ever
        reply = read_reply(sock)  # returns once the server closed the connection
    finally:
        sock.close()
        ep.kernel.run("mcp.limits.body_timeout = _before")
    expect_error(reply, 408, INVALID_REQUEST, "body did not arrive")
    assert_healthy(ep)


def test_a_body_of_known_size_that_stops_arriving_gets_408(ep: Endpoint, session: str) -> None:
    ep.kernel.run("_before = mcp.limits.body_timeout; mcp.limits.body_timeout = 1.0")
    sock = raw_socket(ep)
    try:
        sock.sendall(head(ep, session, "Content-Length: 100"))
        sock.sendall(b'{"jsonrpc": "2.0",')  # 18 of the 100 bytes announced, then nothing
        reply = read_reply(sock)
    finally:
        sock.close()
        ep.kernel.run("mcp.limits.body_timeout = _before")
    expect_error(reply, 408, INVALID_REQUEST, "body did not arrive")
    assert_healthy(ep)
