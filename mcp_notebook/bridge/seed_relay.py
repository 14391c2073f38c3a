"""The "MCP v1.0" dialect of seed 000 on stdio, translated onto the notebook's standard MCP.

One :class:`~mcp_notebook.protocol.seed.SeedSession` per connection (docs/seed-dialect.md,
"Integration"). It runs on an event loop thread of its own; its standard requests go
through the bridge's :class:`~.upstream.Upstream` on worker threads, so they follow the
notebook across kernel restarts like a standard client's do (the session's own
``initialize`` is replayed, then ``standard_reconnected()`` tells the client to refresh).

The relay of the dialect's plug-in (seed_dialect.py), made for a connection whose first
message is in the dialect.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ..protocol import jsonrpc
from ..protocol.jsonrpc import INTERNAL_ERROR, METHOD_NOT_FOUND, RpcError
from ..protocol.seed import SeedSession, error_reply
from ..threads import start_thread
from .channel import Channel, readable_id
from .channel import error_reply as bridge_error
from .link import Message
from .upstream import BRIDGE_ERROR, Target, Upstream
from .workers import Workers

logger = logging.getLogger(__name__)

T = TypeVar("T")
CLOSE_TIMEOUT = 5.0


class SeedRelay:
    def __init__(self, target: Target, channel: Channel) -> None:
        self.channel = channel
        self.upstream = Upstream(target, deliver=self._deliver, reconnected=self._reconnected)
        self.workers = Workers("bridge-seed-call")
        self._pending: set[concurrent.futures.Future[None]] = set()  # messages being handled
        self._pending_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.loop = asyncio.new_event_loop()
        self._thread = start_thread(self._run_loop, name="bridge-seed")
        self.session = SeedSession(self._call, channel.write, notify_standard=self._notify)

    def _run_loop(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    # -- the client -> the session -----------------------------------------------------
    def feed(self, message: Any) -> None:
        # One task per message, started in arrival order; each reply goes out when ready.
        handled = asyncio.run_coroutine_threadsafe(self._handle(message), self.loop)
        with self._pending_lock:
            self._pending.add(handled)
        handled.add_done_callback(self._handled)

    def _handled(self, handled: concurrent.futures.Future[None]) -> None:
        with self._pending_lock:
            self._pending.discard(handled)

    def settle(self, timeout: float) -> bool:
        """Wait until every message fed so far is handled and its reply written."""
        with self._pending_lock:
            pending = list(self._pending)
        _, waiting = concurrent.futures.wait(pending, timeout)
        return not waiting

    async def _handle(self, message: Any) -> None:
        try:
            reply = await self.session.handle(message)
        except Exception:  # a bug must cost one reply, not silence
            logger.exception("mcp-notebook bridge: the dialect session failed")
            request_id = readable_id(message)
            if request_id is None or not isinstance(message, dict) or "method" not in message:
                return
            reply = bridge_error(request_id, INTERNAL_ERROR, "mcp-notebook bridge: internal error")
        if reply is not None:  # None for notifications: they are never answered
            self.channel.write(reply)

    # -- the session -> the notebook ---------------------------------------------------
    async def _call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        message = {
            "jsonrpc": "2.0",
            "id": f"mcp-notebook-seed-{next(self._ids)}",
            "method": method,
            "params": params,
        }
        reply = await self._off_loop(self.upstream.request, message)
        if reply is None:
            raise RpcError(BRIDGE_ERROR, f"mcp-notebook bridge: no reply to {method}")
        error = reply.get("error")
        if isinstance(error, dict):
            code = error.get("code")
            raise RpcError(
                code if isinstance(code, int) else INTERNAL_ERROR,
                str(error.get("message", "")),
                error.get("data"),
            )
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        await self._off_loop(self.upstream.send, jsonrpc.notification(method, params))

    def _off_loop(self, blocking: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run blocking HTTP on a worker thread; the loop only waits for its result."""
        future: asyncio.Future[T] = self.loop.create_future()

        def settle(outcome: Callable[[], None]) -> None:
            if not future.done():  # the waiting task may have been cancelled
                outcome()

        def run() -> None:
            try:
                result = blocking(*args)
            except BaseException as exc:
                self.loop.call_soon_threadsafe(settle, lambda e=exc: future.set_exception(e))
            else:
                self.loop.call_soon_threadsafe(settle, lambda: future.set_result(result))

        self.workers.submit(run)
        return future

    # -- the notebook -> the session (on bridge threads) -------------------------------
    def _deliver(self, message: Message) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            return  # a stray response: we send the notebook no requests of our own here
        if "id" in message:
            # Sampling, elicitation, roots: the dialect has no way to ask its client.
            detail = f"The MCP v1.0 client behind this bridge cannot answer {method}"
            refusal = RpcError(METHOD_NOT_FOUND, "Method not found", detail)
            self.upstream.send(error_reply(message["id"], refusal))
            return
        self.loop.call_soon_threadsafe(self.session.on_standard_notification, message)

    def _reconnected(self) -> None:
        self.loop.call_soon_threadsafe(self.session.standard_reconnected)

    # -- EOF -----------------------------------------------------------------------------
    def end_streams(self) -> None:
        """Nothing stays open on its own in this dialect: subscriptions end with close."""

    def close(self) -> None:
        async def stop() -> None:
            self.session.close()  # cancels its background work

        done = asyncio.run_coroutine_threadsafe(stop(), self.loop)
        with contextlib.suppress(concurrent.futures.TimeoutError, RuntimeError):
            done.result(CLOSE_TIMEOUT)
        self.upstream.close()  # the standard session ends as a standard client's does
        self.loop.call_soon_threadsafe(self.loop.stop)
