"""Standard MCP while the notebook starts: the handshake answered at once, the rest held.

What a server says in ``initialize`` and ``server/discover`` does not depend on the
notebook (protocol/lifecycle.py), so :class:`HeldRelay` answers them (and ``ping``) from
the first moment, from the same code the notebook's server runs. Everything else waits in
arrival order until the notebook has run; then the ``initialize`` answered here is
replayed to open the session upstream (its reply is checked against ours and dropped),
and what waited is relayed as if it had just arrived. Meanwhile a request that carries a
``progressToken`` hears each step of the start (``notifications/progress``), and so does
the session's log (``notifications/message``, at ``info``). A held request the client
cancels is dropped unanswered (as the notebook's server would); if the notebook fails,
each held request gets one error reply, and so does any request after it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Any, Protocol

from ..protocol import jsonrpc, modern
from ..protocol.names import META_LOG_LEVEL, META_PROGRESS_SENT, META_PROGRESS_TOKEN
from ..protocol.session import LOG_LEVELS
from ..protocol.versions import modern_version
from ..wire import jsontext
from .channel import Channel, readable_id
from .dialects import Relay
from .link import Message
from .startup import Startup, Step
from .upstream import Upstream


class Forwarding(Relay, Protocol):
    """The relay the held one hands over to (relay.py's StandardRelay), as it drives it:
    named by what it does, so the two modules need not import each other."""

    upstream: Upstream


logger = logging.getLogger(__name__)

MAX_HELD = 1000  # messages waiting for the notebook; beyond this requests are refused
MAX_HELD_BYTES = 64 * 1024 * 1024  # ... and their bytes (one message may be 16 MiB)
LOGGER_NAME = "mcp-notebook"
LEVEL = "info"  # of the start's log messages


class HeldRelay:
    def __init__(
        self, relay: Forwarding, startup: Startup, channel: Channel, limit: int | None = None
    ) -> None:
        self.relay, self.startup, self.channel = relay, startup, channel
        self.limit = MAX_HELD if limit is None else limit
        self._lock = threading.Lock()
        self._state = "holding"  # -> "open" (relaying) or "failed"
        self._let_go = threading.Event()  # what was held has been relayed or refused
        self._held: deque[Message] = deque()
        self._held_bytes = 0
        self._initialize: Message | None = None  # answered here: replayed upstream
        self._answered: dict[str, Any] | None = None  # what we answered it
        self._log_level: str | None = None  # the client's logging/setLevel, held for later
        self._progress: dict[str, int] = {}  # held request -> the last progress it heard
        startup.watch(self._changed)
        self._changed()  # it may have settled before this connection's first message

    # -- the client ----------------------------------------------------------------------
    def feed(self, message: Any) -> None:
        if not _well_formed(message):
            self.relay.feed(message)  # answered there without the notebook (-32600 ...)
            return
        with self._lock:
            if self._state == "holding":
                self._hold(message)
                return
            if self._state == "failed":
                self._refuse(message)
                return
        self.relay.feed(message)

    def _hold(self, message: Message) -> None:
        kind = jsonrpc.kind(message)
        if kind == "request" and self._answer_early(message):
            return
        if kind == "notification" and message["method"] == "notifications/cancelled":
            params = message.get("params") or {}
            if self._cancel(params.get("requestId")):
                return  # the notebook never saw it: nothing to tell it
        size = _size(message)
        if len(self._held) >= self.limit or self._held_bytes + size > MAX_HELD_BYTES:
            if kind == "request":
                problem = f"too many requests wait for {self.startup.name} to start"
                self.channel.write(self._error(message["id"], problem))
            else:
                logger.warning("dropped a %s while the notebook starts", kind)
            return
        self._held.append(message)
        self._held_bytes += size
        if kind != "request":
            return
        params = message.get("params") or {}
        if message["method"] == "logging/setLevel" and params.get("level") in LOG_LEVELS:
            self._log_level = params["level"]
        if _progress_token(message) is not None:
            self._progress[_key(message["id"])] = -1
            self._report(self.startup.step, [message])

    def _answer_early(self, message: Message) -> bool:
        """Answer what does not depend on the notebook; False to hold the request."""
        identity = self.startup.identity
        if identity is None:
            return False
        method, params = message["method"], message.get("params") or {}
        try:
            if modern_version(message):
                if method != "server/discover":
                    return False
                modern.open_request(message)  # a malformed _meta: the notebook answers it
                result = modern.shape(method, identity.discover_result())
            elif method == "initialize" and self._initialize is None:
                result = identity.initialize_result(params)
                self._initialize, self._answered = message, result
            elif method == "ping" and self._initialize is not None:
                result = {}
            else:
                return False
        except jsonrpc.RpcError:
            return False  # the notebook's server gives the error, once it is up
        self.channel.write(jsonrpc.response(message["id"], result))
        if method == "initialize":
            self._log(self.startup.step)  # the session exists: say where the start is
        return True

    def _cancel(self, request_id: Any) -> bool:
        if not jsonrpc.valid_id(request_id):
            return False
        for held in self._held:
            if "method" in held and "id" in held and _key(held["id"]) == _key(request_id):
                self._held.remove(held)
                self._held_bytes -= _size(held)
                self._progress.pop(_key(request_id), None)
                logger.info("client cancelled request %r before the notebook started", request_id)
                return True
        return False

    def _refuse(self, message: Message) -> None:
        request_id = readable_id(message)
        if "method" in message and request_id is not None:
            self.channel.write(self._error(request_id, self.startup.failure or "not started"))

    def _error(self, request_id: Any, problem: str) -> Message:
        return self.relay.upstream.error(request_id, problem)

    # -- the notebook's start --------------------------------------------------------------
    def _changed(self) -> None:
        with self._lock:
            if self._state != "holding":
                return
            if self.startup.failure is not None:
                self._fail()
            elif self.startup.address is not None:
                self._open()
            else:
                self._report(self.startup.step, list(self._held))
                self._log(self.startup.step)

    def _open(self) -> None:
        """Relay what waited, in order (the stdin thread waits on the lock meanwhile)."""
        if self._initialize is not None:
            reply = self.relay.upstream.request(self._initialize)
            result = reply.get("result") if reply is not None else None
            if result != self._answered:
                logger.warning(
                    "the notebook's server answered initialize differently from the answer "
                    "given while it started: %s",
                    (reply or {}).get("error") or result,
                )
        held, self._held, self._held_bytes = self._held, deque(), 0
        progress, self._progress = self._progress, {}
        for message in held:
            sent = progress.get(_key(message.get("id"))) if "id" in message else None
            if sent is not None and sent >= 0:  # its progress goes on above the start's
                params = message.get("params") or {}
                meta = {**_meta(message), META_PROGRESS_SENT: sent}
                message = {**message, "params": {**params, "_meta": meta}}
            self.relay.feed(message)
        self._state = "open"
        self._let_go.set()

    def _fail(self) -> None:
        self._state = "failed"
        held, self._held, self._held_bytes = self._held, deque(), 0
        self._progress.clear()
        for message in held:
            self._refuse(message)
        self._let_go.set()

    def _report(self, step: Step, messages: list[Message]) -> None:
        """Progress to the held requests that asked for it: each hears each step once."""
        for message in messages:
            key = _key(message.get("id"))
            last = self._progress.get(key)
            token = _progress_token(message)
            if last is None or token is None or step.done <= last:
                continue
            self._progress[key] = step.done
            params = {
                "progressToken": token,
                "progress": step.done,
                "total": step.total,
                "message": f"{self.startup.name}: {step.text}",
            }
            self.channel.write(jsonrpc.notification("notifications/progress", params))

    def _log(self, step: Step) -> None:
        """The step as a log message: to the session (handshake era), else when a held
        2026-07-28 request asked for log messages in its ``_meta``."""
        if self._initialize is not None:
            wanted = self._log_level is None or _at_least(self._log_level)
        else:
            wanted = any(_at_least(_meta(m).get(META_LOG_LEVEL)) for m in self._held)
        if wanted:
            text = f"{self.startup.name}: {step.text}"
            params = {"level": LEVEL, "logger": LOGGER_NAME, "data": text}
            self.channel.write(jsonrpc.notification("notifications/message", params))

    # -- the Relay interface -----------------------------------------------------------------
    @property
    def holds_requests(self) -> bool:
        with self._lock:
            return any("method" in m and "id" in m for m in self._held)

    def settle(self, timeout: float) -> bool:
        # Once the start settled, what was held must have left before the relay's calls
        # in flight say anything: the replayed handshake may still be on its way.
        deadline = time.monotonic() + timeout
        if self.startup.settled and not self._let_go.wait(timeout):
            return False
        return self.relay.settle(max(0.0, deadline - time.monotonic()))

    def end_streams(self) -> None:
        self.relay.end_streams()

    def close(self) -> None:
        self.relay.close()


def _well_formed(message: Any) -> bool:
    if isinstance(message, list):
        return False
    try:
        jsonrpc.kind(message)
    except jsonrpc.RpcError:
        return False
    return True


def _size(message: Message) -> int:
    """About what a held message costs: its length as JSON."""
    try:
        return len(jsontext.dumps(message))
    except ValueError:  # inf, say: refused when relayed, as it would be at once
        return 0


def _meta(message: Message) -> dict[str, Any]:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else {}


def _progress_token(message: Message) -> Any:
    token = _meta(message).get(META_PROGRESS_TOKEN)
    valid = isinstance(token, str) or (isinstance(token, int) and not isinstance(token, bool))
    return token if valid else None


def _at_least(level: Any) -> bool:
    """Whether a client that asked for ``level`` hears our ``info`` messages."""
    return level in LOG_LEVELS and LOG_LEVELS.index(level) <= LOG_LEVELS.index(LEVEL)


def _key(request_id: Any) -> str:
    return repr((type(request_id).__name__, request_id))  # 1 and "1" are different requests
