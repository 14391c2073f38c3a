"""A call's JSON response written from the kernel thread, straight to the client's socket.

Why: see :mod:`mcp_notebook.protocol.request`. Tornado owns a connection on the server's
thread, so before user code runs the handler detaches it (``RequestHandler.detach``, as
websockets do) and nobody else writes to it. The kernel thread sends the whole HTTP
response on a duplicate of the socket. Back on the server's thread, :meth:`finish` writes
what did not fit (or the whole response, if none went early) and hands the connection
back to tornado's HTTP server for the client's next request.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from typing import Any

import tornado.iostream

from .responses import json_response

logger = logging.getLogger(__name__)
_NO_SIGNAL = getattr(socket, "MSG_NOSIGNAL", 0)
# A response up to this size leaves in one TCP segment, which Nagle's algorithm does not
# hold back on an idle connection; a bigger one turns it off first, as tornado does.
_ONE_SEGMENT = 1400

__all__ = ["DirectReply", "always_ok", "duplicate_socket", "json_response"]


def always_ok(reply: dict[str, Any]) -> int:
    return 200


def duplicate_socket(sock: socket.socket, family: int) -> socket.socket:
    """A second, non-blocking socket object on ``sock``'s connection, for another thread.

    ``socket.dup`` (the module's function) works on every platform: dup() on POSIX, and
    WSADuplicateSocketW on Windows, where a socket is a handle and ``os.dup`` fails with
    EBADF. (The method ``socket.socket.dup`` would look the family up through slow enum
    properties; this costs what ``os.dup`` does.)
    """
    handle = socket.dup(sock.fileno())
    try:
        duplicate = socket.socket(family, socket.SOCK_STREAM, 0, handle)
    except BaseException:
        socket.close(handle)  # closesocket() on Windows, close() on POSIX
        raise
    try:
        duplicate.setblocking(False)  # a default timeout set by user code must not block
    except BaseException:
        duplicate.close()
        raise
    return duplicate


class DirectReply:
    """One POST whose response may be sent from another thread (a ReplyChannel)."""

    def __init__(
        self,
        lendable: Callable[[], tornado.iostream.IOStream | None],
        detach: Callable[[], object],
        reattach: Callable[[tornado.iostream.IOStream], None],
        family: int,
        lent: set[DirectReply],
        status: Callable[[dict[str, Any]], int] = always_ok,
        on_hang_up: Callable[[], None] | None = None,
    ) -> None:
        """``lendable`` gives the connection's stream if it may be lent, ``detach`` takes
        it from tornado; ``lent`` is the transport's register of lent connections;
        ``status`` gives a reply's HTTP status; ``on_hang_up`` runs if the client closes
        the connection while it is lent."""
        self._lendable, self._detach, self._reattach = lendable, detach, reattach
        self._family, self._lent = family, lent
        self._status, self._on_hang_up = status, on_hang_up
        self._lock = threading.Lock()
        self._stream: tornado.iostream.IOStream | None = None
        self._socket: socket.socket | None = None
        self._unsent: bytes | None = None  # None until a response is claimed
        self._broken = False
        self.armed = False

    # -- the server's thread -----------------------------------------------------------
    def arm(self) -> bool:
        stream = self._lendable()
        if stream is None:
            return False
        # Duplicate first: should that fail, nothing is detached and the usual path answers.
        try:
            sock = duplicate_socket(stream.socket, self._family)
        except Exception as exc:  # out of file descriptors (EMFILE), or anything else
            logger.debug("a call is answered the usual way: no duplicate socket: %r", exc)
            return False
        self._detach()
        self._stream, self._socket = stream, sock
        stream.set_close_callback(self._hung_up)  # detaching dropped tornado's watch
        self._lent.add(self)
        self.armed = True
        return True

    def _hung_up(self) -> None:
        """The client closed the connection while it was lent: let go of the socket now."""
        with self._lock:
            self._broken = True
            self._close_socket()
        if self._on_hang_up is not None:
            self._on_hang_up()

    async def finish(self, reply: dict[str, Any] | None) -> None:
        """Send what is still unsent (``reply``, if nothing went early) and hand back."""
        try:
            await self._finish(reply)
        except Exception:
            # Never leave the client waiting on a connection nobody will answer.
            logger.exception("could not answer on a connection lent to a call")
            self.abandon()
        except BaseException:
            self.abandon()
            raise

    async def _finish(self, reply: dict[str, Any] | None) -> None:
        stream = self._stream
        assert stream is not None
        with self._lock:
            if self._unsent is None and not self._broken:
                self._unsent = json_response(reply, self._status(reply) if reply else 200)
            self._close_socket()
        self._lent.discard(self)
        stream.set_close_callback(None)
        if self._broken or stream.closed():
            stream.close()
            return
        if self._unsent:
            stream.set_nodelay(True)  # the tail must not wait for an ACK (Nagle)
            try:
                await stream.write(self._unsent)
            except tornado.iostream.StreamClosedError:
                return
        self._reattach(stream)

    def abandon(self) -> None:
        """The request ends without a reply (its session or the server ended): close."""
        with self._lock:
            if self._unsent is None:
                self._unsent = b""
            self._close_socket()
        self._lent.discard(self)
        if self._stream is not None:
            self._stream.set_close_callback(None)
            self._stream.close()

    def shut_down(self) -> None:
        """The server stops: the call is abandoned, and the client sees the connection close."""
        if self._on_hang_up is not None:
            self._on_hang_up()
        self.abandon()

    def _done(self) -> bool:
        return self._unsent is not None or self._socket is None

    def _close_socket(self) -> None:  # under the lock
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    # -- any thread --------------------------------------------------------------------
    def send(self, reply: dict[str, Any]) -> bool:
        if self._done():
            return False  # answered already (e.g. cancelled meanwhile), or the client left
        data = json_response(reply, self._status(reply))
        with self._lock:
            sock = self._socket
            if self._unsent is not None or sock is None:
                return False
            if len(data) > _ONE_SEGMENT:  # several segments: no Nagle wait for the last
                with contextlib.suppress(OSError):  # not TCP (a Unix socket), or gone
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                sent = sock.send(data, _NO_SIGNAL)
            except BlockingIOError:
                sent = 0  # the socket's buffer is full: the server's thread sends it all
            except OSError:
                sent, self._broken = len(data), True  # the client is gone
            self._unsent = data[sent:]
        return True
