"""An in-memory transport: the official SDK client talks to a sans-IO ``Server``, no sockets.

``Client(MemoryTransport(server))`` connects the SDK's client to ``server`` through two
anyio memory object streams. Every message in either direction is encoded to JSON text and
decoded again (with the SDK's own parser on its side, ours on the server's), so nothing
passes by reference and what arrives is what a socket would have carried.

It behaves like a real stream transport (stdio, say):

- each request is handled in a task of its own, so a tool that waits for the client (an
  elicitation, a sampling request) does not hold up the client's answer to it;
- notifications and responses are handled in arrival order, on the reading task;
- a handshake-era connection has one :class:`Session`, opened on the server (where change
  notifications reach it) once ``initialize`` succeeds;
- a 2026-07-28 request (its version in ``_meta``) runs in a Session of its own built from
  that ``_meta``; ``notifications/cancelled`` for it ends its task, as closing the response
  does over HTTP. Handshake-era cancellations go to the server, which cancels the call.

Server->client requests come from the handshake session only (2026-07-28 servers ask
through results instead), so every client response is resolved there.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_notebook.protocol import Server, Session, jsonrpc, modern
from mcp_notebook.protocol.versions import modern_version

logger = logging.getLogger(__name__)

ToClient = MemoryObjectSendStream[SessionMessage | Exception]


class MemoryTransport:
    """A ``Transport`` for ``mcp.Client``: ``Client(MemoryTransport(server), ...)``.

    ``session`` is the connection's handshake-era Session (its ``client_info``,
    ``log_level``... after ``initialize``). One transport serves one connection.
    """

    def __init__(self, server: Server) -> None:
        self.server = server
        self.session = Session(transport="memory")
        self.session.outbound = self._outbound
        self._to_client: ToClient | None = None
        self._tasks: TaskGroup | None = None
        # 2026-07-28 requests in flight: a client's cancellation ends their scope.
        self._modern_calls: dict[Any, anyio.CancelScope] = {}
        self._connection: AbstractAsyncContextManager[TransportStreams] | None = None

    async def __aenter__(self) -> TransportStreams:
        if self._connection is not None:
            raise RuntimeError("a MemoryTransport serves one connection")
        self._connection = self._connect()
        return await self._connection.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._connection is not None
        await self._connection.__aexit__(exc_type, exc, traceback)

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[TransportStreams]:
        # Unbounded buffers: the server sends from synchronous code (Session.outbound),
        # which must not block, and a real transport's socket buffer does not block it
        # either for the few messages of a test.
        to_server, from_client = anyio.create_memory_object_stream[SessionMessage](math.inf)
        to_client, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](
            math.inf
        )
        self._to_client = to_client
        try:
            async with anyio.create_task_group() as tasks:
                self._tasks = tasks
                tasks.start_soon(self._serve, from_client)
                try:
                    yield from_server, to_server
                finally:
                    # The client is gone: what it started ends with it.
                    tasks.cancel_scope.cancel()
        finally:
            self.server.close_session(self.session.id)
            self.session.close()  # also when initialize never opened it
            to_client.close()
            from_server.close()
            to_server.close()

    # -- client -> server -------------------------------------------------------------
    async def _serve(self, from_client: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with from_client:
            async for item in from_client:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await self._route(jsonrpc.parse(text))

    async def _route(self, message: Any) -> None:
        assert self._tasks is not None
        try:
            kind = jsonrpc.kind(message)
        except jsonrpc.RpcError:
            kind = "invalid"  # the server answers it with the precise error
        if kind == "request" and modern_version(message) is not None:
            self._tasks.start_soon(self._modern_request, message)
        elif kind == "request":
            self._tasks.start_soon(self._handshake_request, message)
        elif not self._cancelled_modern(message):
            # Notifications and responses in order, as they arrived.
            await self._reply(await self.server.handle(message, self.session))

    async def _handshake_request(self, message: dict[str, Any]) -> None:
        reply = await self.server.handle(message, self.session)
        if message["method"] == "initialize" and reply is not None and "result" in reply:
            self.server.open_session(self.session)  # change notifications reach it now
        await self._reply(reply)

    async def _modern_request(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        try:
            session = modern.open_request(message)
        except jsonrpc.RpcError as error:
            await self._reply(jsonrpc.error_response(request_id, error))
            return
        session.transport = "memory"
        session.outbound = self._outbound
        with anyio.CancelScope() as scope:
            self._modern_calls[request_id] = scope
            try:
                reply = await self.server.handle(message, session)
            finally:
                if self._modern_calls.get(request_id) is scope:
                    del self._modern_calls[request_id]
        if not scope.cancelled_caught:
            await self._reply(reply)

    def _cancelled_modern(self, message: Any) -> bool:
        """End a 2026-07-28 request the client cancelled; False for any other message."""
        if message.get("method") != "notifications/cancelled":
            return False
        params = message.get("params")
        request_id = params.get("requestId") if isinstance(params, dict) else None
        scope = self._modern_calls.get(request_id) if jsonrpc.valid_id(request_id) else None
        if scope is None:
            return False
        logger.info("client cancelled 2026-07-28 request %r", request_id)
        scope.cancel()
        return True

    # -- server -> client -------------------------------------------------------------
    async def _reply(self, reply: dict[str, Any] | None) -> None:
        if reply is not None:
            self._deliver(jsonrpc.encode_reply(reply))

    def _outbound(self, message: dict[str, Any], related: Any) -> bool:
        """Session.outbound: one stream, so ``related`` needs no routing. On the server's
        loop, like every Session method."""
        try:
            text = jsonrpc.dumps(message)
        except (TypeError, ValueError) as exc:
            logger.error("not sent to the client, not JSON: %s (%s)", message.get("method"), exc)
            return False
        return self._deliver(text)

    def _deliver(self, text: bytes | str) -> bool:
        """Hand JSON text to the client, parsed as the SDK parses what it reads."""
        item: SessionMessage | Exception
        try:
            item = SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
        except ValidationError as exc:
            item = exc  # the SDK's stream transports hand such messages on as exceptions
        if self._to_client is None:
            return False
        try:
            self._to_client.send_nowait(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False  # the client hung up
        return True
