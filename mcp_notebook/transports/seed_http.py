"""The seed-000 "MCP v1.0" dialect on the same HTTP endpoint (docs/seed-dialect.md).

A POST without a session whose first message is in the dialect is one dialect session:
its messages are translated onto a standard session of the in-process server, in order.
The answer is plain JSON, or — when the client accepts ``application/x-ndjson`` — a
chunked stream of JSON lines that stays open for notifications after a full handshake.

A plug-in of the endpoint (dialects.py): it registers itself when imported, and the
registry imports it on first use, so it is on by default.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

from ..protocol import Server, Session, jsonrpc
from ..protocol.jsonrpc import RpcError
from ..protocol.seed import SeedSession, is_seed_message
from ..wire.framing import FramingError, NdjsonFramer
from . import dialects

NDJSON = "application/x-ndjson"


def ndjson_messages(body: bytes) -> list[Any] | None:
    """The messages of a newline-delimited JSON body, or None if it is not one."""
    framer = NdjsonFramer()
    items = [*framer.feed(body if body.endswith(b"\n") else body + b"\n"), *framer.eof()]
    if not items or any(isinstance(item, FramingError) for item in items):
        return None
    return items


def first_is_seed(messages: list[Any]) -> bool:
    first = messages[0] if messages else None
    return is_seed_message(first[0] if isinstance(first, list) and first else first)


def claim(body: bytes, message: Any) -> tuple[list[Any], str] | None:
    """The dialect's messages and the shape of their replies (single, batch or lines),
    when the first message of this session-less POST is in the dialect."""
    if message is dialects.UNPARSED:
        lines = ndjson_messages(body)
        return (lines, "lines") if lines and first_is_seed(lines) else None
    if not first_is_seed([message]):
        return None
    return [message], "batch" if isinstance(message, list) else "single"


async def serve(handler: Any, server: Server, claimed: tuple[list[Any], str]) -> None:
    messages, shape = claimed
    await answer(handler, server, messages, shape)


async def answer(handler: Any, server: Server, messages: Sequence[Any], shape: str) -> None:
    """Serve one dialect session over this POST; ``shape`` is single, batch or lines."""
    stream = NDJSON in handler.request.headers.get("Accept", "").lower()
    standard = server.open_session(Session(transport="http-seed", initialized=True))
    ids = itertools.count(1)

    async def call(method: str, params: dict[str, Any]) -> Any:
        request = {"jsonrpc": "2.0", "id": f"seed-{next(ids)}", "method": method, "params": params}
        reply = await server.handle(request, standard)
        if reply is None:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"{method} was cancelled")
        if "error" in reply:
            error: jsonrpc.ErrorObject = reply["error"]
            raise RpcError(error["code"], error["message"], error.get("data"))
        return reply["result"]

    async def notify_standard(method: str, params: dict[str, Any] | None = None) -> None:
        await server.handle(jsonrpc.notification(method, params), standard)

    def write_line(message: Any) -> None:
        if not handler.request.connection.stream.closed():
            handler.write(_encoded(message) + b"\n")
            handler.flush()

    seed = SeedSession(
        call,
        write_line if stream else None,
        require_handshake=False,
        notify_standard=notify_standard,
    )
    standard.outbound = lambda message, related: _forward(seed, message)
    try:
        if stream:
            handler.set_header("Content-Type", NDJSON)
            handler.flush()  # chunked from here on
        replies = []
        for message in messages:
            reply = await seed.handle(message)
            if reply is None:
                continue
            if stream:
                write_line(reply)
            else:
                replies.append(reply)
        if stream:
            if seed.handshake_complete:
                handler.held_open = asyncio.Event()
                await handler.held_open.wait()  # notifications until the client hangs up
            return
        _finish(handler, replies, shape)
    finally:
        seed.close()
        server.close_session(standard.id)
        if not handler._finished:
            handler.finish()


def _forward(seed: SeedSession, message: dict[str, Any]) -> bool:
    seed.on_standard_notification(message)
    return "id" not in message  # the dialect cannot answer requests from the server


def _finish(handler: Any, replies: list[Any], shape: str) -> None:
    if not replies:
        handler.set_status(202)
        return
    handler.set_header("Content-Type", "application/json")
    if shape == "single":
        handler.write(_encoded(replies[0]))
    elif shape == "batch":
        flat = replies[0] if len(replies) == 1 and isinstance(replies[0], list) else replies
        handler.write(_encoded(flat))
    else:
        handler.write(b"".join(_encoded(r) + b"\n" for r in replies))


def _encoded(message: Any) -> bytes:
    """One message or batch by the one JSON policy; a reply that is not JSON becomes an
    error to its id (``jsonrpc.encode_reply``)."""
    if isinstance(message, list):
        return b"[" + b",".join(_encoded(m) for m in message) + b"]"
    if "method" in message:
        return jsonrpc.dumps(message)
    return jsonrpc.encode_reply(message)


dialects.register(dialects.Dialect("seed", NDJSON, claim, serve))
