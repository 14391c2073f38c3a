"""One HTTP exchange relayed to a kernel's loopback endpoint, streamed both ways.

A raw HTTP/1.1 connection (tornado's ``HTTP1Connection`` as a client) rather than
``AsyncHTTPClient``: the response is passed on as it arrives, each chunk flushed to the
client before the next is read (a slow client slows the kernel's stream instead of
growing a buffer here), and closing the client's connection closes the kernel's, which
is how a client cancels a 2026-07-28 request or ends a listen stream. A connection whose
response was a whole plain body is kept for the next request (pool.py).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from tornado import httputil
from tornado.http1connection import HTTP1Connection, HTTP1ConnectionParameters
from tornado.iostream import IOStream, StreamClosedError

from ..errors import McpNotebookError
from ..transports.security import is_loopback
from . import pool

# Request headers a client's request keeps; everything else (cookies, Jupyter's token,
# Origin, X-XSRF) was for Jupyter Server alone. Mcp-* covers Mcp-Session-Id, Mcp-Method,
# Mcp-Name and Mcp-Param-*; MCP-Protocol-Version is one of them too. The W3C trace context
# goes on, so a client that sends it as headers only stays in its trace in the kernel.
PASSED_REQUEST = (
    "accept",
    "content-type",
    "last-event-id",
    "user-agent",
    "traceparent",
    "tracestate",
)
PASSED_PREFIX = "mcp-"
# Response headers that describe the kernel's connection, not the client's.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server"}
)
SSE = "text/event-stream"
CHUNK = 64 * 1024
UNLIMITED = 2**62  # a GET or listen stream may run for days; each chunk is passed on at once


class UpstreamError(McpNotebookError, ConnectionError):
    """The kernel's endpoint could not be reached, or was not a loopback one."""


class Unreachable(UpstreamError):
    """No connection to the kernel's endpoint: nothing of the request was sent."""


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    path: str  # the endpoint's path, e.g. /mcp
    token: str | None
    keep: float = pool.KEEP_IDLE  # seconds an idle connection to it may be pooled

    @classmethod
    def of(cls, url: str, token: str | None, idle_timeout: float | None = None) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or not is_loopback(parts.hostname):
            # The kernel's token must not travel over a network: loopback only.
            raise UpstreamError(f"not a loopback endpoint: {url}")
        keep = pool.keep_for(idle_timeout)
        return cls(parts.hostname, parts.port or 80, parts.path or "/", token, keep)

    @property
    def key(self) -> pool.Key:
        return (self.host, self.port)


def request_headers(incoming: httputil.HTTPHeaders, extra: dict[str, str]) -> httputil.HTTPHeaders:
    headers = httputil.HTTPHeaders()
    for name, value in incoming.get_all():
        lower = name.lower()
        if lower in PASSED_REQUEST or lower.startswith(PASSED_PREFIX):
            headers.add(name, value)
    for name, value in extra.items():
        headers[name] = value
    return headers


def response_headers(headers: httputil.HTTPHeaders) -> Iterable[tuple[str, str]]:
    return ((n, v) for n, v in headers.get_all() if n.lower() not in HOP_BY_HOP)


class Sink(Protocol):
    """Where the response goes: the Jupyter handler."""

    def start(self, status: int, reason: str, headers: httputil.HTTPHeaders) -> None: ...
    def chunk(self, data: bytes) -> Awaitable[None] | None: ...


class _Delegate(httputil.HTTPMessageDelegate):
    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.reusable = False  # the response leaves its connection fit for another
        self.finished = False

    def headers_received(
        self,
        start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
        headers: httputil.HTTPHeaders,
    ) -> None:
        assert isinstance(start_line, httputil.ResponseStartLine)
        self.reusable = (
            start_line.version == "HTTP/1.1"
            and headers.get("Connection", "").lower() != "close"
            and not headers.get("Content-Type", "").startswith(SSE)
            and ("Content-Length" in headers or "Transfer-Encoding" in headers)
            and start_line.code != 401
        )
        self.sink.start(start_line.code, start_line.reason, headers)

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        return self.sink.chunk(chunk)  # its Future holds the next read back: flow control

    def finish(self) -> None:
        self.finished = True


async def _connect(host: str, port: int) -> IOStream:
    """A connection to a loopback address, without a resolver: tornado's TCPClient asks
    getaddrinfo on a thread even for 127.0.0.1, a thread hop on every relayed request."""
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:  # "localhost": the one name worth resolving
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        host = str(address[0])
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stream = IOStream(sock)
    try:
        await stream.connect((host, port))
    except BaseException:
        stream.close()
        raise
    return stream


POOL = pool.Pool()  # Jupyter Server's, on its loop


class Exchange:
    """One request to the kernel and its response, into ``sink``; :meth:`close` aborts it."""

    def __init__(self, target: Target, connections: pool.Pool = POOL) -> None:
        self.target = target
        self.pool = connections
        self._stream: IOStream | None = None
        self._closed = False

    async def run(
        self,
        method: str,
        headers: httputil.HTTPHeaders,
        body: bytes,
        sink: Sink,
    ) -> None:
        """Relay the request; ``Unreachable`` if no connection could be made (nothing was
        sent), other ``OSError``s (``StreamClosedError``) if the kernel's server closed
        the connection: then the request may have run, and it is not sent again."""
        target = self.target
        headers["Host"] = (
            f"{target.host}:{target.port}"
            if ":" not in target.host
            else (f"[{target.host}]:{target.port}")
        )
        if target.token:
            headers["Authorization"] = f"Bearer {target.token}"
        if body or method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        start = httputil.RequestStartLine(method, target.path, "HTTP/1.1")
        stream = self.pool.take(target.key)
        while True:
            reused = stream is not None
            if stream is None:
                stream = await self._connect()
            self._stream = stream
            if self._closed:  # the client left while we connected
                stream.close()
                return
            connection = HTTP1Connection(stream, True, PARAMETERS)
            try:
                # Headers and body in one write: one segment for a small request.
                await connection.write_headers(start, headers, body or None)
            except StreamClosedError:
                # Not all of it reached the kernel, which acts on whole requests only:
                # on a pooled connection the kernel closed just now, send it once more.
                if reused and not self._closed:
                    stream = None
                    continue
                raise
            break
        connection.finish()
        stream.set_nodelay(True)  # finish() turned Nagle's algorithm back on
        delegate = _Delegate(sink)
        try:
            still_open = await connection.read_response(delegate)
        except BaseException:
            stream.close()
            raise
        self._stream = None
        if still_open and delegate.finished and delegate.reusable and not self._closed:
            self.pool.give(target.key, stream, target.keep)
        else:
            stream.close()

    async def _connect(self) -> IOStream:
        try:
            stream = await _connect(self.target.host, self.target.port)
        except OSError as exc:
            raise Unreachable(f"the kernel's server does not answer: {exc}") from None
        self.pool.opened += 1
        return stream

    def close(self) -> None:
        """The client went away: close the kernel's connection too (cancels its request)."""
        self._closed = True
        if self._stream is not None:
            self._stream.close()


PARAMETERS = HTTP1ConnectionParameters(decompress=False, chunk_size=CHUNK, max_body_size=UNLIMITED)
