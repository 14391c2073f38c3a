"""`mcp-notebook bridge` on stdio: every request with a readable id gets exactly one reply,
with that id, whatever it is and whatever the notebook answers; bad frames never end it.

Against a scripted HTTP endpoint (no kernel), so each upstream answer is exact; the same
path under `serve --transport stdio` with a real kernel is in test_stdio_serve.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.stdio import FakeNotebook, FramedStdio, Seen, json_body

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}
BAD = {"code": -32600, "message": "Bad request"}

# What the notebook's endpoint answers, by the request's "how" parameter.
UPSTREAM: dict[str, tuple[int, str, bytes]] = {
    "400-null-id": (
        400,
        "application/json",
        json_body({"jsonrpc": "2.0", "id": None, "error": BAD}),
    ),
    "400-no-id": (400, "application/json", json_body({"jsonrpc": "2.0", "error": BAD})),
    "400-other-id": (
        400,
        "application/json",
        json_body({"jsonrpc": "2.0", "id": "x", "error": BAD}),
    ),
    "400-text": (400, "text/plain", b"Bad Request"),
    "404-empty": (404, "application/json", b""),
    "500-html": (500, "text/html", b"<html>Internal Server Error</html>"),
    "503-empty": (503, "application/json", b""),
    "202-for-a-request": (202, "application/json", b""),
    "200-not-an-object": (200, "application/json", b"[1, 2]"),
    "200-not-json": (200, "application/json", b"{not json"),
    "200-nan": (200, "application/json", b'{"jsonrpc":"2.0","id":1,"result":{"x":NaN}}'),
    # An older notebook's reply, to the request's own id (<id>), with a lone surrogate.
    "200-lone-surrogate": (
        200,
        "application/json",
        b'{"jsonrpc":"2.0","id":<id>,"result":{"x":"\\udfff"}}',
    ),
}


def answer(seen: Seen) -> tuple[Any, ...]:
    body = seen.body if isinstance(seen.body, dict) else {}
    how = (body.get("params") or {}).get("how")
    if how in UPSTREAM:
        status, kind, data = UPSTREAM[how]
        return status, kind, data.replace(b"<id>", json.dumps(body.get("id")).encode())
    if "id" not in body:
        return 202, "application/json", b""
    return 200, "application/json", json_body({"jsonrpc": "2.0", "id": body["id"], "result": {}})


@pytest.fixture
def notebook() -> Iterator[FakeNotebook]:
    fake = FakeNotebook(answer)
    try:
        yield fake
    finally:
        fake.close()


def bridge(notebook: FakeNotebook, framing: str = "ndjson") -> FramedStdio:
    return FramedStdio("bridge", "--url", notebook.url, "--token", "t0k", framing=framing)


def only_reply(raw: FramedStdio, request_id: Any) -> dict[str, Any]:
    raw.reply_to(request_id)
    replies = raw.replies_to(request_id)
    assert len(replies) == 1, replies
    return replies[0]


def test_invalid_requests_get_one_error_with_their_id_and_are_not_relayed(notebook):
    raw = bridge(notebook)
    try:
        raw.send({"jsonrpc": "2.0", "id": 5, "method": None})
        raw.send({"jsonrpc": "2.0", "id": 7})
        raw.send({"jsonrpc": "2.0", "id": "p", "method": "ping", "params": [1]})
        raw.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})
        assert only_reply(raw, 8)["result"] == {}
        for request_id in (5, 7, "p"):
            assert only_reply(raw, request_id)["error"]["code"] == -32600
        assert [seen.body["id"] for seen in notebook.seen] == [8]
    finally:
        assert raw.close() == 0
    assert raw.bad == []


@pytest.mark.parametrize("era", ["handshake", "2026"])
def test_whatever_the_notebook_answers_each_request_gets_one_reply_with_its_id(notebook, era):
    raw = bridge(notebook)
    try:
        for number, how in enumerate(UPSTREAM, start=1):
            params: dict[str, Any] = {"how": how}
            if era == "2026":
                params["_meta"] = META
            raw.send({"jsonrpc": "2.0", "id": number, "method": "tools/list", "params": params})
        for number, how in enumerate(UPSTREAM, start=1):
            reply = only_reply(raw, number)
            assert "error" in reply, (how, reply)
        # Nothing else reached the client: no reply under another id, nothing with NaN.
        assert len(raw.messages) == len(UPSTREAM), raw.messages
    finally:
        assert raw.close() == 0
    assert raw.bad == []


def test_deep_and_oversize_lines_are_answered_and_the_bridge_carries_on(notebook):
    raw = bridge(notebook)
    try:
        raw.write(b"[" * 100_000 + b"]" * 100_000 + b"\n")
        parse_error = raw.wait_for(lambda m: m.get("error", {}).get("code") == -32700)
        assert "id" not in parse_error  # MCP forbids a null id
        raw.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert only_reply(raw, 1)["result"] == {}
        # 17 MB: over the 16 MiB limit; the id is read from the line's start.
        big = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"pad": "a" * 17_000_000},
        }
        raw.write(json.dumps(big).encode() + b"\n")
        raw.send({"jsonrpc": "2.0", "id": 10, "method": "ping"})
        assert only_reply(raw, 9)["error"]["code"] == -32600
        assert only_reply(raw, 10)["result"] == {}
        assert 9 not in [seen.body["id"] for seen in notebook.seen]
    finally:
        assert raw.close() == 0
    stderr = b"".join(raw.stderr).decode()
    assert "nested too deeply" in stderr and "Line longer than 16777216 bytes" in stderr


def test_content_length_lies_and_giant_lengths_are_answered_and_reading_goes_on(notebook):
    raw = bridge(notebook, framing="content-length")
    ping = json.dumps({"jsonrpc": "2.0", "id": 3, "method": "ping"}).encode()
    try:
        # A length far beyond the body must not swallow the messages after it.
        raw.write(b"Content-Length: 99999999999\r\n\r\n" + ping)
        raw.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert only_reply(raw, 3)["error"]["code"] == -32600
        assert only_reply(raw, 4)["result"] == {}
        # 5,000 digits: over Python's int-digit limit.
        five = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}).encode()
        raw.write(b"Content-Length: " + b"7" * 5000 + b"\r\n\r\n" + five)
        raw.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
        assert only_reply(raw, 5)["error"]["code"] == -32600
        assert only_reply(raw, 6)["result"] == {}
        # A header that cannot be read at all: a clear line on stderr, and on it goes.
        raw.write(b"Content-Length: -1\r\n\r\n{}")
        raw.send({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        assert only_reply(raw, 7)["result"] == {}
    finally:
        assert raw.close() == 0
    stderr = b"".join(raw.stderr).decode()
    assert "Content-Length 99999999999 exceeds the limit" in stderr
    assert "Content-Length of 5000 digits exceeds the limit" in stderr
    assert "Invalid Content-Length '-1': negative" in stderr
    assert raw.bad == []
