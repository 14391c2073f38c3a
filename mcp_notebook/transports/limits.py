"""Bounds on what clients may hold: connections, idle time, and new sessions.

Without them, a client without the token could hold every file descriptor of the kernel
with idle sockets, and a flood of ``initialize`` could push live sessions out.

- **Connections** are counted from ``accept`` to close, including those lent to calls
  (transports/direct.py), against a total and a per-address cap. A connection is
  *trusted* once a request on it passed the endpoint's checks (the token, unless auth is
  off, and a loopback or allowed Host and Origin: security.Guard.refusal). At a
  cap, the oldest untrusted connection is closed to make room; if there is none, the
  trusted keep-alive connection idle the longest between two requests is (as nginx
  reuses idle keep-alive connections; its client opens a new one when it next sends);
  only when every connection is busy (a request or a stream in progress, or lent to a
  call) is the newcomer refused. So idle sockets of strangers never lock out a client
  that has the token, and neither do a token holder's own idle connections (a leaky
  pool: every loopback client counts as one address).
  A connection accepted in the current batch of accepts has not been read yet: before
  it is shed, its waiting request is peeked at, and if that carries the token it is
  trusted instead. Otherwise, under a connect flood, the token holder's new connection
  could be shed by the connections accepted right after it.
- **Bodies of refused requests are not read**: a request on an untrusted connection that
  the endpoint will refuse anyway (no token, a foreign Host or Origin, another path) gets
  its answer as soon as its headers are in, and the connection is closed; what the client
  still sends is read and dropped, never kept. Otherwise a client without the token could
  make the server hold a whole body per connection.
- **Timeouts**: a new connection has ``header_timeout`` seconds to become trusted; a
  trusted keep-alive connection may wait ``idle_timeout`` seconds for its next request;
  a body must arrive within ``body_timeout``; a client with bytes to read must read on
  (64 KiB, or what is left, every ``write_timeout`` seconds), or its connection closes
  and the reply that waited is freed.
- **Accepting** survives running out of file descriptors (``EMFILE``): it sheds an
  untrusted connection, or pauses a moment, instead of spinning on a readable socket.
- **Sessions**: each client origin (its address; every loopback address is one origin,
  as one process may bind any of them: admission.py) may open ``session_burst`` sessions
  at once and ``session_rate`` per second after that. Past that allowance, a new session
  ends the oldest session of the same origin that was never used after its
  ``initialize``; if there is none, the answer is 429. So a flooder that never uses its
  sessions recycles them, and other clients behind the same address (every local agent,
  on loopback) still get in. The table holds ``max_sessions``; when it is full a new
  session ends one idle past ``session_idle_timeout``, else one of the origin holding
  the most (its least recently used); that session answers 404 and
  its client initializes again. Only when every session has an open GET stream is the
  answer 503. Both refusals carry ``Retry-After``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

import tornado.httputil
import tornado.iostream

# Re-exported for their users (http.py, endpoint.py, tests): they live in a tornado-free module.
from .admission import Refusal as Refusal
from .admission import SessionAdmission as SessionAdmission
from .fds import fd_headroom
from .lingering import answer_and_close
from .settings import Limits

logger = logging.getLogger(__name__)

# File descriptors left to the kernel itself (ZMQ, user code, duplicates of lent sockets)
# when the connection cap is fitted under the process's limit.
RESERVED_FDS = 64
MIN_CONNECTIONS = 8
ACCEPT_BATCH = 128  # connections accepted per readiness event, like tornado
ACCEPT_PAUSE = 0.25  # seconds without accepting after EMFILE with nothing to shed
PEEK_BYTES = 16 * 1024  # enough for the headers of a request that carries the token
WRITE_PROGRESS = 64 * 1024  # bytes a client must read per write_timeout, when it has them
_OUT_OF_FDS = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class TrackedStream(tornado.iostream.IOStream):
    """An IOStream that tells the limiter when it closes, however that happens, and that
    closes when what it writes is not read (``write_timeout``; see WriteWatch)."""

    on_closed: Callable[[TrackedStream], None] | None = None
    write_timeout: float | None = None
    _watch: WriteWatch | None = None

    def write(self, data: bytes | memoryview) -> Any:
        future = super().write(data)
        # Only when the socket did not take it all: most replies leave at once, untimed.
        if self._write_buffer and self._watch is None and self.write_timeout:
            self._watch = WriteWatch(self, self.write_timeout)
        return future

    def close(self, exc_info: Any = False) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.stop()
        super().close(exc_info)
        callback, self.on_closed = self.on_closed, None
        if callback is not None:
            callback(self)

    def _write_progress(self) -> tuple[int, int]:
        """Bytes written to the socket so far, and bytes still waiting to be."""
        return self._total_write_done_index, len(self._write_buffer or ())


class WriteWatch:
    """While a stream has bytes its client does not take, it must take ``WRITE_PROGRESS``
    of them (or all, if fewer) every ``seconds``, or the connection closes and what
    waited is freed: a client that never reads its replies held them for ever."""

    __slots__ = ("_handle", "_mark", "_seconds", "_stream")

    def __init__(self, stream: TrackedStream, seconds: float) -> None:
        self._stream, self._seconds = stream, seconds
        self._mark = stream._write_progress()[0]
        self._handle = stream.io_loop.call_later(seconds, self._check)

    def stop(self) -> None:
        self._stream.io_loop.remove_timeout(self._handle)

    def _check(self) -> None:
        stream = self._stream
        done, waiting = stream._write_progress()
        if not waiting:
            stream._watch = None  # all taken: the next buffered write starts a new watch
            return
        if done - self._mark < min(WRITE_PROGRESS, waiting):
            logger.info("closed a connection whose client did not read its reply")
            stream.close()
            return
        self._mark = done
        self._handle = stream.io_loop.call_later(self._seconds, self._check)


class Connection:
    __slots__ = ("batch", "client", "deadline", "idle_since", "stream")

    def __init__(self, stream: TrackedStream, client: str, batch: int) -> None:
        self.stream, self.client, self.batch = stream, client, batch
        self.deadline: asyncio.TimerHandle | None = None
        # When a trusted connection began waiting for its next request (None: busy).
        self.idle_since: float | None = None


class ConnectionLimiter:
    """Accepts connections and keeps them within the caps; lives on the server's loop."""

    def __init__(
        self,
        limits: Limits,
        serve: Callable[[tornado.iostream.IOStream, Any], None],
        screen: Screen,
    ) -> None:
        self.limits = limits
        self._serve, self.screen = serve, screen
        headroom = fd_headroom()
        cap = limits.max_connections
        if headroom is not None:  # fit under the process's file limit, leaving a reserve
            cap = min(cap, max(MIN_CONNECTIONS, headroom - RESERVED_FDS))
        self.max_connections = cap
        self.open: dict[TrackedStream, Connection] = {}
        self.untrusted: dict[TrackedStream, Connection] = {}  # oldest first
        self.per_client: dict[str, int] = {}
        self.shed = self.refused = self.accepted = 0  # for status and tests
        self.shed_idle = 0  # of those shed, trusted keep-alive connections idle between requests
        self._sockets: list[socket.socket] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._paused = False
        self._warned = 0.0
        self._refusing: set[asyncio.Future[None]] = set()  # answers being sent
        self._batch = 0  # how many times accepting began

    # -- accepting ---------------------------------------------------------------------
    def listen(self, sockets: list[socket.socket], loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._sockets = list(sockets)
        for sock in self._sockets:
            sock.setblocking(False)
            self._loop.add_reader(sock.fileno(), self._accept, sock)

    def close(self) -> None:
        """Stop accepting and close the listening sockets (open connections stay, but for
        those being refused)."""
        loop, self._loop = self._loop, None
        for task in self._refusing:
            task.cancel()  # its connection closes
        for sock in self._sockets:
            if loop is not None and not self._paused:
                loop.remove_reader(sock.fileno())
            sock.close()
        self._sockets = []

    def _accept(self, sock: socket.socket) -> None:
        self._batch += 1
        for _ in range(ACCEPT_BATCH):
            try:
                connection, address = sock.accept()
            except BlockingIOError:
                return
            except ConnectionAbortedError:
                continue
            except OSError as exc:
                # The listening socket stays readable: returning now would spin the loop.
                if exc.errno in _OUT_OF_FDS and self._shed_one(None):
                    continue  # a file descriptor is free again
                self._warn(exc)
                self._pause()
                return
            self._admit(connection, address)

    def _warn(self, exc: OSError) -> None:
        now = time.monotonic()
        if now - self._warned > 60:
            self._warned = now
            logger.warning("cannot accept connections for a moment: %s", exc)

    def _pause(self) -> None:
        loop = self._loop
        if loop is None or self._paused:
            return
        self._paused = True
        for sock in self._sockets:
            loop.remove_reader(sock.fileno())
        loop.call_later(ACCEPT_PAUSE, self._resume)

    def _resume(self) -> None:
        loop = self._loop
        if loop is None or not self._paused:
            return
        self._paused = False
        for sock in self._sockets:
            loop.add_reader(sock.fileno(), self._accept, sock)

    def _admit(self, connection: socket.socket, address: Any) -> None:
        client = address[0] if isinstance(address, tuple) and address else str(address)
        limits = self.limits
        crowded = self.per_client.get(client, 0) >= limits.max_connections_per_client
        if crowded and not self._shed_one(client):
            return self._refuse(connection)
        if len(self.open) >= self.max_connections and not self._shed_one(None):
            return self._refuse(connection)
        try:
            stream = TrackedStream(connection)
        except BaseException:
            connection.close()
            raise
        stream.write_timeout = limits.write_timeout
        record = Connection(stream, client, self._batch)
        self.accepted += 1
        self.open[stream] = record
        self.untrusted[stream] = record
        self.per_client[client] = self.per_client.get(client, 0) + 1
        stream.on_closed = self._closed
        if self._loop is not None:
            record.deadline = self._loop.call_later(limits.header_timeout, stream.close)
        self._serve(stream, address)

    def _refuse(self, connection: socket.socket) -> None:
        self.refused += 1
        with contextlib.suppress(OSError):
            connection.close()

    def _shed_one(self, client: str | None) -> bool:
        """Close the oldest untrusted connection (of ``client``, if given), else the
        trusted one idle the longest between requests; False if every one is busy."""
        victim, proven = None, []
        for record in self.untrusted.values():
            if client is not None and record.client != client:
                continue
            if record.batch == self._batch and self._shows_token(record):
                proven.append(record)
                continue
            victim = record
            break
        for record in proven:
            self.trust(record)
        if victim is None:
            victim = self._idlest(client)
            if victim is None:
                return False
            self.shed_idle += 1
            logger.info("closed the keep-alive connection idle the longest to make room")
        self.shed += 1
        victim.stream.close()  # _closed forgets it
        return True

    def _idlest(self, client: str | None) -> Connection | None:
        """The trusted connection (of ``client``, if given) waiting longest for its next
        request: closing it between requests loses nothing."""
        idle = [
            record
            for record in self.open.values()
            if record.idle_since is not None
            and (client is None or record.client == client)
            and not _has_input(record.stream)
        ]
        return min(idle, key=lambda record: record.idle_since or 0.0, default=None)

    def _shows_token(self, record: Connection) -> bool:
        """Whether the request waiting, unread, on a new connection carries the token."""
        try:
            data = record.stream.socket.recv(PEEK_BYTES, socket.MSG_PEEK)
            head, complete, _ = data.partition(b"\r\n\r\n")
            if not complete:
                return False
            first, _, rest = head.decode("latin-1").lstrip("\r\n").partition("\r\n")
            start_line = tornado.httputil.parse_request_start_line(first)
            headers = tornado.httputil.HTTPHeaders.parse(rest)
        except (OSError, ValueError, tornado.httputil.HTTPInputError):
            return False
        return self.screen(start_line, headers) is None

    def _closed(self, stream: TrackedStream) -> None:
        record = self.open.pop(stream, None)
        if record is None:
            return
        self.untrusted.pop(stream, None)
        if record.deadline is not None:
            record.deadline.cancel()
        left = self.per_client.get(record.client, 1) - 1
        if left > 0:
            self.per_client[record.client] = left
        else:
            self.per_client.pop(record.client, None)

    # -- trust -------------------------------------------------------------------------
    def wrap(
        self,
        stream: Any,
        request_conn: tornado.httputil.HTTPConnection,
        delegate: tornado.httputil.HTTPMessageDelegate,
    ) -> Any:
        """The request's delegate; on a connection not yet trusted, one that looks first.

        tornado asks for it before it reads the request's headers: from now until they
        arrive, a trusted connection is idle (and may make room at a cap)."""
        record = self.untrusted.get(stream)
        if record is not None:
            return _FirstRequest(delegate, self, record, request_conn)
        record = self.open.get(stream)
        if record is None:
            return delegate
        record.idle_since = time.monotonic()
        return _Busy(delegate, record)

    def trust(self, record: Connection) -> None:
        if self.untrusted.pop(record.stream, None) is not None and record.deadline is not None:
            record.deadline.cancel()
            record.deadline = None

    def refuse(self, stream: tornado.iostream.IOStream, answer: bytes) -> None:
        """Send ``answer`` on a detached connection, drain what the client still sends (a
        body is never read), then close it (lingering.py)."""
        task = answer_and_close(stream, answer)
        self._refusing.add(task)
        task.add_done_callback(self._refusing.discard)


# What the endpoint makes of a request's headers: None if they carry the token (and may
# reach it), else the complete HTTP response it would answer.
Screen = Callable[[tornado.httputil.RequestStartLine, tornado.httputil.HTTPHeaders], bytes | None]


def _has_input(stream: TrackedStream) -> bool:
    """Whether part of a next request is in (read by tornado, or waiting in the socket):
    its headers may be half there, so the connection is not idle."""
    if getattr(stream, "_read_buffer_size", 0):  # tornado's own buffer (no public API)
        return True
    try:
        return bool(stream.socket.recv(1, socket.MSG_PEEK))  # b"": closed, nothing to lose
    except (OSError, AttributeError):  # nothing yet (non-blocking), or no socket any more
        return False


def has_body(headers: tornado.httputil.HTTPHeaders) -> bool:
    return "Transfer-Encoding" in headers or headers.get("Content-Length", "0").strip() != "0"


class _Busy(tornado.httputil.HTTPMessageDelegate):
    """Passes a request on a trusted connection through, noting that it is no longer
    idle once its headers are in."""

    def __init__(self, delegate: tornado.httputil.HTTPMessageDelegate, record: Connection) -> None:
        self._delegate, self._record = delegate, record

    def headers_received(self, start_line: Any, headers: tornado.httputil.HTTPHeaders) -> Any:
        self._record.idle_since = None
        return self._delegate.headers_received(start_line, headers)

    def data_received(self, chunk: bytes) -> Any:
        return self._delegate.data_received(chunk)

    def finish(self) -> None:
        self._delegate.finish()

    def on_connection_close(self) -> None:
        self._delegate.on_connection_close()


class _FirstRequest(tornado.httputil.HTTPMessageDelegate):
    """Passes a request through, trusting its connection if the request carries the token;
    answers a request that will be refused, and has a body, before the body is read."""

    def __init__(
        self,
        delegate: tornado.httputil.HTTPMessageDelegate,
        limiter: ConnectionLimiter,
        record: Connection,
        request_conn: tornado.httputil.HTTPConnection,
    ) -> None:
        self._delegate, self._limiter, self._record = delegate, limiter, record
        self._request_conn = request_conn
        self._answered = False

    def headers_received(self, start_line: Any, headers: tornado.httputil.HTTPHeaders) -> Any:
        answer = self._limiter.screen(start_line, headers)
        if answer is None:
            self._limiter.trust(self._record)
        elif has_body(headers) and hasattr(self._request_conn, "detach"):
            # tornado would read the whole body before the handler refuses the request.
            self._answered = True
            self._limiter.refuse(self._request_conn.detach(), answer)
            return None
        return self._delegate.headers_received(start_line, headers)

    def data_received(self, chunk: bytes) -> Any:
        return None if self._answered else self._delegate.data_received(chunk)

    def finish(self) -> None:
        if not self._answered:
            self._delegate.finish()

    def on_connection_close(self) -> None:
        if not self._answered:
            self._delegate.on_connection_close()
