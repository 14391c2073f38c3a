"""2026-07-28 over Streamable HTTP: one self-contained POST per request, no sessions.

Checked in the order the revision gives: ``_meta`` (-32602), the version header against
``_meta`` (-32020), the version (-32022), ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*``
(-32020), then the method (404). Closing the response stream cancels the request.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from ..protocol import modern
from ..protocol.jsonrpc import (
    HEADER_MISMATCH,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    UNSUPPORTED_VERSION,
    RpcError,
)
from ..protocol.names import SESSION_HEADER, VERSION_HEADER
from ..protocol.request import ANSWERED_EARLY
from ..protocol.versions import HANDSHAKE_VERSIONS
from . import headers
from .sse import SseStream

_stream_numbers = itertools.count(1)  # 2026 streams are never resumed: local names do


class ModernRequests:
    """Mixed into the endpoint's RequestHandler."""

    # -- POST, 2026-07-28: one self-contained request ---------------------------------
    def _is_modern(self, message: Any) -> bool:
        """A request of the stateless revision: its _meta or its header says so."""
        if modern.requested_version(message) is not None:
            return True
        header = self.request.headers.get(VERSION_HEADER)
        return header is not None and header not in HANDSHAKE_VERSIONS

    async def _post_modern(self, message: dict[str, Any], kind: str, wants_json: bool) -> None:
        if kind != "request":
            self.set_status(202)  # nothing a client sends besides requests needs an answer
            return self.finish()
        request_id, method = message["id"], message["method"]
        server = self.transport.server
        try:
            session = modern.open_request(message)
        except RpcError as error:
            if error.code == UNSUPPORTED_VERSION and self._version_header_mismatch(message):
                return self._header_mismatch(request_id)
            return self.fail(400, error.message, error.code, request_id, error.data)
        if self._version_header_mismatch(message):
            return self._header_mismatch(request_id)
        problem = headers.mismatch(
            message,
            self.request.headers,
            server.registry.tools,
            lambda name: server.serves(name, "modern"),
        )
        if problem is not None:
            return self.fail(400, f"Header mismatch: {problem}", HEADER_MISMATCH, request_id)
        if not server.serves(method, "modern"):
            return self.fail(404, f"Method not found: {method}", METHOD_NOT_FOUND, request_id)
        stream = SseStream(f"m{next(_stream_numbers)}", numbered=False)
        stream.writer = self
        self._stream = stream
        session.transport = "http"
        session.outbound = lambda outgoing, related: _sent(stream, outgoing)
        early = wants_json and method in ANSWERED_EARLY
        direct = self._direct_reply(_status, self._cancel_call) if early else None
        self._call = asyncio.ensure_future(server.handle(message, session, direct))
        try:
            reply = await self._call
        except asyncio.CancelledError:
            if direct is not None and direct.armed:
                direct.abandon()
            return None  # the client closed the stream: that is how it cancels
        if direct is not None and direct.armed:
            return await direct.finish(reply)  # the response may have left already
        if stream.resumable or stream.writer is not self:
            if reply is not None:
                stream.send(reply)
            stream.finish()
            return None
        self.set_status(_status(reply) if reply else 200)
        return self._reply(reply, wants_json)

    def _cancel_call(self) -> None:
        call = getattr(self, "_call", None)
        if call is not None and not call.done():
            call.cancel()

    def _version_header_mismatch(self, message: dict[str, Any]) -> bool:
        return self.request.headers.get(VERSION_HEADER) != modern.requested_version(message)

    def _header_mismatch(self, request_id: Any) -> None:
        self.fail(
            400,
            f"Header mismatch: {VERSION_HEADER} must equal _meta's protocol version",
            HEADER_MISMATCH,
            request_id,
        )

    def _refuse_modern_stream(self) -> bool:
        """2026-07-28 has no GET stream and no sessions to DELETE: 405 for its clients."""
        version = self.request.headers.get(VERSION_HEADER)
        if self.request.headers.get(SESSION_HEADER) or version is None:
            return False
        if version in HANDSHAKE_VERSIONS:
            return False
        self.set_header("Allow", "POST")
        self.fail(405, f"Method Not Allowed: {self.request.method} is not part of {version}")
        return True


def _status(reply: dict[str, Any]) -> int:
    """The HTTP status of a 2026-07-28 reply: some errors have their own."""
    error = reply.get("error") or {}
    return {MISSING_CAPABILITY: 400, METHOD_NOT_FOUND: 404}.get(error.get("code"), 200)


def _sent(stream: SseStream, message: dict[str, Any]) -> bool:
    stream.send(message)
    return True
