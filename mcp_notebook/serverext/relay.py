"""One HTTP exchange relayed to a kernel's loopback endpoint, streamed both ways.

A raw HTTP/1.1 connection (tornado's ``HTTP1Connection`` as a client) rather than
``AsyncHTTPClient``: the response is passed on as it arrives, each chunk flushed to the
client before the next is read (a slow client slows the kernel's stream instead of
growing a buffer here), and closing the client's connection closes the kernel's, which
is how a client cancels a 2026-07-28 request or ends a listen stream.
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
from tornado.iostream import IOStream

from ..errors import McpNotebookError
from ..transports.security import is_loopback

# Request headers a client's request keeps; everything else (cookies, Jupyter's token,
# Origin, X-XSRF) was for Jupyter Server alone. Mcp-* covers Mcp-Session-Id, Mcp-Method,
# Mcp-Name and Mcp-Param-*; MCP-Protocol-Version is one of them too.
PASSED_REQUEST = ("accept", "content-type", "last-event-id", "user-agent")
PASSED_PREFIX = "mcp-"
# Response headers that describe the kernel's connection, not the client's.
HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server"}
)
CHUNK = 64 * 1024
UNLIMITED = 2**62  # a GET or listen stream may run for days; each chunk is passed on at once


class UpstreamError(McpNotebookError, ConnectionError):
    """The kernel's endpoint could not be reached, or was not a loopback one."""


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    path: str  # the endpoint's path, e.g. /mcp
    token: str | None

    @classmethod
    def of(cls, url: str, token: str | None) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or not is_loopback(parts.hostname):
            # The kernel's token must not travel over a network: loopback only.
            raise UpstreamError(f"not a loopback endpoint: {url}")
        return cls(parts.hostname, parts.port or 80, parts.path or "/", token)


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

    def headers_received(
        self,
        start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
        headers: httputil.HTTPHeaders,
    ) -> None:
        assert isinstance(start_line, httputil.ResponseStartLine)
        self.sink.start(start_line.code, start_line.reason, headers)

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        return self.sink.chunk(chunk)  # its Future holds the next read back: flow control


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


class Exchange:
    """One request to the kernel and its response, into ``sink``; :meth:`close` aborts it."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._stream: IOStream | None = None
        self._closed = False

    async def run(
        self,
        method: str,
        headers: httputil.HTTPHeaders,
        body: bytes,
        sink: Sink,
    ) -> None:
        target = self.target
        try:
            stream = await _connect(target.host, target.port)
        except OSError as exc:
            raise UpstreamError(f"the kernel's server does not answer: {exc}") from None
        self._stream = stream
        if self._closed:  # the client left while we connected
            stream.close()
            return
        connection = HTTP1Connection(
            stream,
            True,
            HTTP1ConnectionParameters(
                no_keep_alive=True, decompress=False, chunk_size=CHUNK, max_body_size=UNLIMITED
            ),
        )
        headers["Host"] = (
            f"{target.host}:{target.port}"
            if ":" not in target.host
            else (f"[{target.host}]:{target.port}")
        )
        headers["Connection"] = "close"
        if target.token:
            headers["Authorization"] = f"Bearer {target.token}"
        if body or method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        start = httputil.RequestStartLine(method, target.path, "HTTP/1.1")
        await connection.write_headers(start, headers)
        if body:
            await connection.write(body)
        connection.finish()
        try:
            await connection.read_response(_Delegate(sink))
        finally:
            stream.close()

    def close(self) -> None:
        """The client went away: close the kernel's connection too (cancels its request)."""
        self._closed = True
        if self._stream is not None:
            self._stream.close()
