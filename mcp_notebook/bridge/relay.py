"""The stdio <-> Streamable HTTP bridge to a notebook's server.

:class:`Bridge` reads the client on stdin (``channel.py`` finds its framing) and lets the
connection's first message pick the dialect: one a dialect plug-in sniffs (dialects.py)
goes to that plug-in's relay; standard MCP to :class:`StandardRelay`, which relays each
message to the notebook as it is:

- handshake-era messages over the bridge's own session (``upstream.py``), which survives
  kernel restarts and carries server->client messages back on its GET stream;
- 2026-07-28 requests (protocol version in ``_meta``) without a session (``modern.py``).

Every request with a readable id gets exactly one reply with that id, whatever the
notebook does (answers, refuses with an HTTP error with or without a JSON-RPC body, goes
away). What is neither a request, a notification nor a response (``"method": null``, no
method and no result) is answered here with ``-32600``, as the notebook's server would,
instead of being posted as if it were a notification.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from ..protocol import jsonrpc
from ..protocol.versions import modern_version
from . import dialects
from .channel import Channel, error_reply, readable_id
from .dialects import Relay
from .link import Message
from .modern import ModernRelay
from .startup import Startup
from .upstream import BRIDGE_ERROR, Target, Upstream
from .workers import Workers

if TYPE_CHECKING:
    from ..protocol.forwarding import Forwarding

logger = logging.getLogger(__name__)

REFRESH = ("tools", "resources", "prompts")

__all__ = ["Bridge", "StandardRelay", "Target"]


EOF_GRACE = 5.0  # seconds for requests in flight to be answered once stdin closed


class Bridge:
    """``startup``: the notebook behind ``target`` is still starting (``serve --transport
    stdio``): standard MCP goes through :class:`~.held.HeldRelay` until it serves."""

    def __init__(
        self,
        target: Target,
        output: BinaryIO,
        eof_grace: float = EOF_GRACE,
        startup: Startup | None = None,
        *,
        dispatcher: bool = False,
        tracing: Forwarding | None = None,
    ) -> None:
        self.target = target
        self.tracing = tracing  # a span per forwarded request (tracing.py), or none
        self.startup = startup
        self.dispatcher = dispatcher  # ask the notebook for the dispatcher's tools
        self.channel = Channel(output)
        self.relay: Relay | None = None
        self.eof_grace = eof_grace
        self._closing = threading.Lock()
        self._closed = False

    def run(self, stdin: BinaryIO) -> None:
        """Relay until stdin closes; answer what is in flight, for a moment; end the session."""
        try:
            self.relay_stdin(stdin)
        finally:
            self.close()

    def relay_stdin(self, stdin: BinaryIO) -> None:
        """Relay until stdin closes; then answer what is in flight, for a moment. The
        session stays: :meth:`close` ends it."""
        self.channel.pump(stdin, self.feed)
        # A client that wrote its requests and closed stdin still reads the replies,
        # for a moment; listen streams never end by themselves: they end now.
        logger.debug("stdin closed; up to %g s for the replies in flight", self.eof_grace)
        deadline = time.monotonic() + self.eof_grace
        if self.startup is not None and not self.startup.settled:
            if self.relay is not None and getattr(self.relay, "holds_requests", True):
                self.startup.wait(self.eof_grace)  # the notebook may be up in a moment
            # What still waits for the notebook gets its error now.
            self.startup.fail(f"the client closed stdin before {self.target.describe()} started")
        if self.relay is not None:
            self.relay.end_streams()
        self.settle(max(0.0, deadline - time.monotonic()))

    def feed(self, message: Any) -> None:
        if self.relay is None:
            dialect = dialects.sniff(message)
            if dialect is not None:
                logger.info("the client speaks the %s dialect", dialect.name)
                # It waits for the notebook (in the target), as a dialect's relay does.
                self.relay = dialect.relay(self.target, self.channel)
            elif self.startup is not None:
                from .held import HeldRelay

                standard = self._standard()
                self.relay = HeldRelay(standard, self.startup, self.channel)
            else:
                self.relay = self._standard()
        self.relay.feed(message)

    def _standard(self) -> StandardRelay:
        return StandardRelay(self.target, self.channel, self.dispatcher, self.tracing)

    def settle(self, timeout: float) -> bool:
        """Wait for the requests in flight to be answered (an error, if the notebook is
        gone: its connections break at once); False on timeout."""
        return self.relay is None or self.relay.settle(timeout)

    def close(self) -> None:
        """End the session with the notebook; once, whoever calls it first (the main thread,
        or a console handler on Windows, which returns only when the session is ended)."""
        with self._closing:
            if self._closed:
                return
            self._closed = True
            if self.relay is not None:
                self.relay.close()


class StandardRelay:
    """Standard MCP, message for message."""

    def __init__(
        self,
        target: Target,
        channel: Channel,
        dispatcher: bool = False,
        tracing: Forwarding | None = None,
    ) -> None:
        self.channel = channel
        self.tracing = tracing
        self.asking: Callable[[Message], Message] | None = None
        if dispatcher:  # it imports the registry (pydantic): not on the bridge's start path
            from ..protocol.dispatcher_tools import asking

            self.asking = asking
        self.upstream = Upstream(target, deliver=channel.write, reconnected=self._refresh)
        self.modern = ModernRelay(self.upstream, channel.write)
        self.workers = Workers("bridge-call")

    def feed(self, message: Any) -> None:
        if isinstance(message, list):
            self._refuse_batch(message)
            return
        try:
            kind = jsonrpc.kind(message)
        except jsonrpc.RpcError as error:
            self.channel.write(error_reply(readable_id(message), error.code, error.message))
            return
        method = message.get("method")
        if kind == "request":
            if self.asking is not None:  # as a client that asks: in initialize and each _meta
                message = self.asking(message)
            if modern_version(message):
                handle = functools.partial(self.modern.handle, abort=self.modern.admit(message))
                self.workers.submit(self._guarded, handle, message)
            elif method == "initialize":
                # On this thread: what follows waits for the session.
                self._guarded(self._request, message)
            else:
                # Each request on a worker, so a slow tool does not hold up the others.
                self.workers.submit(self._guarded, self._request, message)
            return
        # Notifications and responses go in order, on this thread.
        if method == "notifications/cancelled":
            params = message.get("params")
            if isinstance(params, dict) and self.modern.cancel(params.get("requestId")):
                return  # a 2026-07-28 request: closing its response is the cancellation
        if self.modern.used and self.upstream.session_id is None:
            # 2026-07-28 has no other client notifications over HTTP, and no session to
            # send them in.
            logger.debug("not relayed without a session: %s", method or "a response")
            return
        self.upstream.send(message)

    def _refuse_batch(self, batch: list[Any]) -> None:
        # MCP has no batches since 2025-06-18: one error for each request in it.
        problem = "Invalid Request: batches are not supported"
        ids = [readable_id(m) for m in batch if isinstance(m, dict) and "method" in m]
        replies = [error_reply(i, jsonrpc.INVALID_REQUEST, problem) for i in ids if i is not None]
        self.channel.write(replies or error_reply(None, jsonrpc.INVALID_REQUEST, problem))

    def _request(self, message: Message) -> None:
        reply = self.upstream.request(message, forward=self.channel.write)
        if reply is not None:
            self.channel.write(reply)

    def _guarded(self, work: Callable[[Message], None], message: Message) -> None:
        try:
            if self.tracing is None:
                work(message)  # as the client sent it
            else:
                self.tracing.forward(work, message)
        except Exception:
            logger.exception("bridge worker failed")
            error = {"code": BRIDGE_ERROR, "message": "mcp-notebook bridge: internal error"}
            self.channel.write({"jsonrpc": "2.0", "id": message.get("id"), "error": error})

    def _refresh(self) -> None:
        # A new session on a restarted kernel: whatever the client listed may have changed.
        for kind in REFRESH:
            self.channel.write({"jsonrpc": "2.0", "method": f"notifications/{kind}/list_changed"})

    def settle(self, timeout: float) -> bool:
        return self.workers.settle(timeout)

    def end_streams(self) -> None:
        self.modern.end_listens()

    def close(self) -> None:
        self.modern.close()
        self.upstream.close()
