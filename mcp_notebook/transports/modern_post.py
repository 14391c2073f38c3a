"""2026-07-28 over Streamable HTTP: one self-contained POST per request, no sessions.

The endpoint policy (policy.py) admits a request (modern_checks.py: ``_meta``, the
version header, ``Mcp-Method``/``Mcp-Name``/``Mcp-Param-*``, the method); this serves it.
Closing the response stream cancels the request.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from ..protocol import Session
from ..protocol.jsonrpc import (
    Message,
)
from ..protocol.request import ANSWERED_EARLY
from . import relayed
from .modern_checks import reply_status
from .posts import Post
from .replying import ReplyingHandler
from .sse import SseStream

_stream_numbers = itertools.count(1)  # 2026 streams are never resumed: local names do


class ModernRequests(ReplyingHandler):
    """The 2026-07-28 part of the endpoint's handler (McpHandler builds on it)."""

    _call: asyncio.Future[Message | None] | None = None  # the request being served

    async def _call_modern(self, post: Post, session: Session) -> None:
        """Serve a request that passed the checks; its reply goes as JSON, early from the
        kernel thread, or on the request's SSE stream once something was streamed."""
        message, wants_json = post.message, post.wants_json
        stream = SseStream(f"m{next(_stream_numbers)}", numbered=False)
        stream.writer = self
        self._stream = stream
        session.transport = "http"
        session.via = relayed.via(self.request.headers, self.transport.guard)
        session.outbound = lambda outgoing, related: _sent(stream, outgoing)
        early = wants_json and message["method"] in ANSWERED_EARLY
        direct = self._direct_reply(reply_status, self._cancel_call) if early else None
        self._call = asyncio.ensure_future(self.transport.server.handle(message, session, direct))
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
        self.set_status(reply_status(reply) if reply else 200)
        return self._reply(reply, wants_json)

    def _cancel_call(self) -> None:
        call = self._call
        if call is not None and not call.done():
            call.cancel()


def _sent(stream: SseStream, message: dict[str, Any]) -> bool:
    stream.send(message)
    return True
