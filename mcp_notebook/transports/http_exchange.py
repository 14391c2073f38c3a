"""One request and its response on tornado's HTTP layer, without tornado.web.

The endpoint uses a small part of ``tornado.web.RequestHandler`` (status, headers, write,
flush, finish, detach, the close callback, prepare before a streamed body). Building a
RequestHandler per request (its UI namespaces, default headers, the Application's router)
cost about 0.1 ms a request on a 2-core VM (benchmarks/README.md); an HttpExchange does
the same on ``HTTP1Connection`` directly, with the same names, so the handlers read as
before. ``Routes`` picks the exchange class by path, as the Application's rules did.
"""

from __future__ import annotations

import asyncio
import http.client
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import tornado
import tornado.httputil
import tornado.iostream
from tornado.http1connection import HTTP1Connection
from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine, ResponseStartLine

from .endpoint import Endpoint
from .responses import http_date

logger = logging.getLogger(__name__)
_access = logging.getLogger("mcp_notebook.transports.http")  # access lines, as before

_SERVER = f"TornadoServer/{tornado.version}"
# What a header value may hold: no control characters (CR/LF would split the response).
_SAFE_VALUE = re.compile(r"[\x20-\x7e\x80-\xff\t]*")
_NO_BODY = frozenset({204, 304})


class HttpExchange:
    """The response side of one request, named as ``RequestHandler``'s."""

    SUPPORTED_METHODS: Sequence[str] = ("GET", "HEAD", "POST", "DELETE", "PATCH", "PUT", "OPTIONS")
    # True: prepare() runs when the headers arrive and data_received() gets the body as
    # it comes (tornado's stream_request_body); else the method runs on the whole body.
    streams_body = False

    def __init__(self, request: HTTPServerRequest, transport: Endpoint) -> None:
        self.request, self.transport = request, transport
        self._finished = False
        self._headers_written = False
        self._prepared_future: asyncio.Future[None] | None = None
        self.clear()
        self._connection().set_close_callback(self.on_connection_close)
        self.initialize()

    def initialize(self) -> None:
        """Set up what the subclass keeps (as ``RequestHandler.initialize``)."""

    def prepare(self) -> Awaitable[None] | None:
        """Runs before the method (and before a streamed body is read)."""
        return None

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        """A piece of a streamed body."""
        return None

    def on_connection_close(self) -> None:
        """The client closed the connection before the response finished."""
        if self.streams_body and not (body := self.request._body_future).done():  # start() set it
            body.set_exception(tornado.iostream.StreamClosedError())
            body.exception()  # retrieved: the method that waits for it ends quietly

    def on_finish(self) -> None:
        """The response has been handed to the connection."""

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.finish()

    # -- the response ------------------------------------------------------------------
    def clear(self) -> None:
        self._headers = HTTPHeaders()
        self._headers["Server"] = _SERVER
        self._write_buffer: list[bytes] = []
        self._status_code = 200
        self._reason = "OK"

    def set_status(self, status_code: int, reason: str | None = None) -> None:
        self._status_code = status_code
        self._reason = reason or http.client.responses.get(status_code, "Unknown")

    def get_status(self) -> int:
        return self._status_code

    def set_header(self, name: str, value: str | bytes | int) -> None:
        text = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        if _SAFE_VALUE.fullmatch(text) is None:
            raise ValueError(f"Unsafe header value {text!r}")
        self._headers[name] = text

    def write(self, chunk: str | bytes) -> None:
        if self._finished:
            raise RuntimeError("Cannot write() after finish()")
        self._write_buffer.append(chunk.encode() if isinstance(chunk, str) else chunk)

    def flush(self) -> asyncio.Future[None]:
        connection = self._connection()
        chunk = b"".join(self._write_buffer)
        self._write_buffer = []
        if self.request.method == "HEAD":
            chunk = b""
        if self._headers_written:
            return connection.write(chunk)
        self._headers_written = True
        self._headers["Date"] = http_date().decode()
        start = ResponseStartLine("", self._status_code, self._reason)
        return connection.write_headers(start, self._headers, chunk)

    def finish(self, chunk: str | bytes | None = None) -> asyncio.Future[None]:
        if self._finished:
            raise RuntimeError("finish() called twice")
        if chunk is not None:
            self.write(chunk)
        if not self._headers_written:
            if self._status_code in _NO_BODY or 100 <= self._status_code < 200:
                if any(self._write_buffer):
                    raise RuntimeError(f"Cannot send body with status code {self._status_code}")
                self._write_buffer = []
                self._headers.pop("Content-Type", None)
            elif "Content-Length" not in self._headers:
                size = sum(len(part) for part in self._write_buffer)
                self._headers["Content-Length"] = str(size)
        connection = self._connection()
        connection.set_close_callback(None)  # the connection may outlive this exchange
        future = self.flush()
        connection.finish()
        self._finished = True
        self._log()
        self.on_finish()
        return future

    def detach(self) -> tornado.iostream.IOStream:
        """Take the connection from tornado's HTTP server (for a reply from elsewhere)."""
        self._finished = True
        return self._connection().detach()

    def _connection(self) -> HTTP1Connection:
        """The request's connection. tornado annotates it as the abstract HTTPConnection;
        its HTTP server always gives an HTTP1Connection, which has the stream and context."""
        connection = self.request.connection
        if not isinstance(connection, HTTP1Connection):
            raise TypeError(f"not a connection of tornado's HTTP server: {connection!r}")
        return connection

    def _log(self) -> None:
        # Access lines would land in the notebook's stderr; keep them for debug logging.
        if _access.isEnabledFor(logging.DEBUG):
            request = self.request
            _access.debug("%s %s %s", self._status_code, request.method, request.uri)

    # -- serving -----------------------------------------------------------------------
    def start(self) -> asyncio.Future[None] | None:
        """Begin serving: for a streamed body once the headers are in, else once the body is.
        For a streamed body, the future tells tornado when prepare() is done."""
        if self.streams_body:
            self.request._body_future = asyncio.Future()
            self._prepared_future = asyncio.Future()
        task = asyncio.ensure_future(self._execute())
        task.add_done_callback(_retrieve)
        return self._prepared_future

    async def _execute(self) -> None:
        try:
            if self.request.method not in self.SUPPORTED_METHODS:
                self.set_status(405)
                self.write_error(405)
                return
            result = self.prepare()
            if result is not None:
                await result
            if self._prepared_future is not None and not self._prepared_future.done():
                self._prepared_future.set_result(None)  # tornado may read the body now
            if self._finished:
                return
            if self.streams_body:
                try:
                    await self.request._body_future
                except tornado.iostream.StreamClosedError:
                    return
            method = getattr(self, (self.request.method or "GET").lower())
            result = method()
            if result is not None:
                await result
            if not self._finished:
                self.finish()
        except Exception:
            self._failed()
        finally:
            prepared = self._prepared_future
            if prepared is not None and not prepared.done():
                prepared.set_result(None)

    def _failed(self) -> None:
        """An error nobody caught: logged, and answered with 500 if nothing was sent yet."""
        logger.exception("%s %s failed", self.request.method, self.request.uri)
        if self._finished:
            return
        if self._headers_written:
            try:
                self.finish()  # release the connection; the response is cut short
            except Exception:
                logger.exception("could not end the response")
            return
        self.clear()
        self.set_status(500)
        try:
            self.write_error(500)
        except Exception:
            logger.exception("could not write the error")
        if not self._finished:
            self.finish()


def _retrieve(task: asyncio.Future[None]) -> None:
    # _execute answers what it catches; what escapes (an error while answering an error)
    # is only logged: the client sees its connection close.
    if not task.cancelled() and (error := task.exception()) is not None:
        logger.error("an exchange failed while answering an error", exc_info=error)


# A route: whether it takes a request (by its path and headers), and the exchange it gets.
Route = tuple[Callable[[HTTPServerRequest], bool], type[HttpExchange]]


class Routes(tornado.httputil.HTTPServerConnectionDelegate):
    """Which exchange serves a request: the first route that takes it, else ``fallback``."""

    def __init__(
        self, routes: Sequence[Route], fallback: type[HttpExchange], transport: Endpoint
    ) -> None:
        self.routes, self.fallback, self.transport = list(routes), fallback, transport

    def start_request(self, server_conn: object, request_conn: Any) -> _Routed:
        return _Routed(self, server_conn, request_conn)

    def exchange_for(self, request: HTTPServerRequest) -> HttpExchange:
        for takes, kind in self.routes:
            if takes(request):
                return kind(request, self.transport)
        return self.fallback(request, self.transport)


class _Routed(tornado.httputil.HTTPMessageDelegate):
    """Feeds one request to the exchange its route names."""

    def __init__(self, routes: Routes, server_conn: object, request_conn: Any) -> None:
        self.routes, self.server_conn, self.request_conn = routes, server_conn, request_conn
        self.exchange: HttpExchange | None = None
        self.chunks: list[bytes] = []
        self.request: HTTPServerRequest | None = None

    def headers_received(self, start_line: Any, headers: HTTPHeaders) -> Any:
        assert isinstance(start_line, RequestStartLine)
        request = HTTPServerRequest(
            connection=self.request_conn,
            server_connection=self.server_conn,
            start_line=start_line,
            headers=headers,
        )
        self.request = request
        exchange = self.routes.exchange_for(request)
        self.exchange = exchange
        return exchange.start() if exchange.streams_body else None

    def data_received(self, chunk: bytes) -> Any:
        exchange = self.exchange
        assert exchange is not None
        if exchange.streams_body:
            return exchange.data_received(chunk)
        self.chunks.append(chunk)
        return None

    def finish(self) -> None:
        exchange = self.exchange
        assert exchange is not None and self.request is not None
        if exchange.streams_body:
            body: asyncio.Future[None] = self.request._body_future
            if not body.done():
                body.set_result(None)
            return
        self.request.body = b"".join(self.chunks)
        self.chunks = []
        exchange.start()

    def on_connection_close(self) -> None:
        exchange = self.exchange
        if exchange is not None and exchange.streams_body:
            exchange.on_connection_close()
        self.chunks = []
