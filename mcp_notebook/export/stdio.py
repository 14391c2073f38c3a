"""MCP over stdio for an exported notebook: newline-delimited JSON-RPC on stdin/stdout.

One handshake-era session for the process; a 2026-07-28 request (``_meta`` names its
version) gets a session of its own, built from that ``_meta``. Requests are served
concurrently, so a ``notifications/cancelled`` reaches a call still running. stdout
carries protocol messages only; logs go to stderr.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
from typing import Any, BinaryIO

from ..protocol import Server, Session, jsonrpc, modern
from ..protocol.jsonrpc import INVALID_REQUEST, PARSE_ERROR, RpcError
from ..wire.framing import FrameRefused, FramingError, NdjsonFramer

logger = logging.getLogger(__name__)
READ_CHUNK = 64 * 1024
MAX_IN_FLIGHT = 256  # requests served at once; the next ones wait for stdin to be read


async def serve_stdio(
    server: Server, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> None:
    """Serve until stdin ends, then wait for the calls still running."""
    reader = stdin or sys.stdin.buffer
    writer = stdout or sys.stdout.buffer
    framer = NdjsonFramer()
    lock = threading.Lock()  # replies may be written from a worker thread's callback too

    def write(message: Any) -> bool:
        with lock:
            writer.write(framer.encode(message))
            writer.flush()
        return True

    def announce(kind: str, detail: str | None) -> None:  # a registry change, any thread
        if kind == "updated" and detail is not None:
            loop.call_soon_threadsafe(server.resource_updated, detail)
        elif kind != "updated":
            loop.call_soon_threadsafe(server.list_changed, kind)

    loop = asyncio.get_running_loop()
    unsubscribe = server.registry.subscribe(announce)
    session = server.open_session(Session(transport="stdio"))
    session.outbound = lambda message, related: write(message)
    busy = asyncio.Semaphore(MAX_IN_FLIGHT)
    tasks: set[asyncio.Task[None]] = set()

    async def answer(message: Any) -> None:
        try:
            reply = await server.handle(message, _session_of(message, session, write))
        except RpcError as error:  # the request's _meta is unusable
            reply = jsonrpc.error_response(jsonrpc.readable_id(message), error)
        finally:
            busy.release()
        if reply is not None:
            write(reply)

    read = getattr(reader, "read1", reader.read)  # read1: whatever is there, not a full chunk
    while True:
        chunk: bytes = await loop.run_in_executor(None, read, READ_CHUNK)
        items = framer.feed(chunk) if chunk else framer.eof()
        for item in items:
            if isinstance(item, FramingError):
                write(_framing_error(item))
                continue
            await busy.acquire()
            task = asyncio.ensure_future(answer(item))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if not chunk:
            break
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)
    unsubscribe()
    server.close_session(session.id)


def _session_of(message: Any, session: Session, write: Any) -> Session:
    """The process's session, or a 2026-07-28 request's own (RpcError if its _meta is bad)."""
    if not isinstance(message, dict) or modern.requested_version(message) is None:
        return session
    if jsonrpc.kind(message) != "request":
        return session
    own = modern.open_request(message)
    own.transport = "stdio"
    own.outbound = lambda outgoing, related: write(outgoing)
    return own


def _framing_error(error: FramingError) -> dict[str, Any]:
    if isinstance(error, FrameRefused):
        return jsonrpc.error_response(error.request_id, RpcError(INVALID_REQUEST, str(error)))
    return jsonrpc.error_response(None, RpcError(PARSE_ERROR, str(error)))
