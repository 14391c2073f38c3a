"""Answer, drain, close: a refusal sent while the client is still sending its body.

Closing a connection with unread bytes in it makes the client's TCP stack reset it, and a
reset loses the answer. So the answer goes first, then FIN (the client sees it end), then
what the client still sends is read and dropped -- for at most ``LINGER_SECONDS`` and
``LINGER_BYTES`` -- and only then does the connection close. Used by the endpoint
(streamed.py) and by the Jupyter Server relay (serverext/handlers.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

import tornado.iostream

LINGER_SECONDS = 5.0
LINGER_BYTES = 16 * 1024 * 1024
_PIECE = 64 * 1024

_lingering: set[asyncio.Future[None]] = set()  # connections being drained


def answer_and_close(stream: tornado.iostream.IOStream, response: bytes) -> asyncio.Future[None]:
    """Answer on a connection taken from tornado (``RequestHandler.detach``), drain it,
    close it: in a task of its own (cancel it to close at once)."""
    task = asyncio.ensure_future(_linger(stream, response))
    _lingering.add(task)
    task.add_done_callback(_lingering.discard)
    return task


def shut_write(stream: tornado.iostream.IOStream) -> None:
    """Send FIN after the answer: the client sees it end, and we can still read."""
    with contextlib.suppress(OSError, AttributeError):
        if not stream.closed():
            stream.socket.shutdown(socket.SHUT_WR)


async def _linger(stream: tornado.iostream.IOStream, response: bytes) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LINGER_SECONDS
    dropped = 0
    try:
        await stream.write(response)
        shut_write(stream)
        while dropped <= LINGER_BYTES:
            read = stream.read_bytes(_PIECE, partial=True)
            dropped += len(await asyncio.wait_for(read, max(0.0, deadline - loop.time())))
    except (tornado.iostream.StreamClosedError, asyncio.TimeoutError, OSError):
        pass
    finally:
        stream.close()
