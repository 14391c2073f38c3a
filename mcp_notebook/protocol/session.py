"""What the server remembers about one connected client, and how it reaches that client.

A session lives on the server's event loop. Transports give it an ``outbound`` function
that delivers a server->client message, preferably on the stream of the request it
belongs to (``related``), else on the session's own stream.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

from ..errors import McpNotebookError
from .abbreviate import estimate
from .caller import Caller
from .jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, SERVER_ERROR, Message, RpcError
from .kinds import Era
from .names import META_SUBSCRIPTION_ID as SUBSCRIPTION_ID

logger = logging.getLogger(__name__)

# RFC 5424 severities, as MCP's logging utility names them, least severe first.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

Outbound = Callable[[Message, Any], bool]


class Cancellable(Protocol):
    """A request in flight (``protocol.request.RequestContext``)."""

    task: asyncio.Future[Any] | None  # the task serving it

    def cancel(self, by_client: bool = False) -> None: ...

    def drop(self) -> bool: ...


# An observer of the messages a server receives ("in") and sends ("out"): see Server.taps.
Tap = Callable[[str, "Session", Message], None]


class ClientUnavailable(McpNotebookError, RuntimeError):
    """The client cannot be reached with a request (no stream open, or it went away)."""


# Resource subscriptions one session keeps, at most: a template matches endless URIs, and
# every update is looked up among all of them. Their URIs are bounded in characters too,
# each and together: a session lives for minutes, and a URI is as long as a body allows.
MAX_SUBSCRIPTIONS = 1000
MAX_URI_LENGTH = 8 * 1024
MAX_SUBSCRIBED_CHARS = 256 * 1024
# What a session keeps of its client's ``initialize`` (``clientInfo`` and ``capabilities``)
# for its whole life, in estimated bytes of memory: real ones take a few hundred.
MAX_CLIENT_DESCRIPTION = 64 * 1024


@dataclass(eq=False)
class Session:
    """A handshake-era session, or (``era="modern"``) the context of one 2026-07-28 request.

    Modern requests carry their version, capabilities and log level in ``_meta``; the
    server builds a short-lived Session from it. A ``subscriptions/listen`` stream is such a
    Session too, kept open with a ``listen_filter`` and a ``subscription_id``.
    """

    id: str = field(default_factory=lambda: secrets.token_hex(16))
    era: Era = "handshake"
    protocol_version: str | None = None
    client_info: dict[str, Any] = field(default_factory=dict)
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    initialized: bool = False
    transport: str = "memory"
    # Who passed the client on, as the transport could verify: "Jupyter user alice".
    via: str | None = None
    # Who opened it, with OAuth on (transports/policy.py): only they may use it.
    caller: Caller | None = None
    created: float = field(default_factory=time.time)
    log_level: str | None = None
    subscriptions: set[str] = field(default_factory=set)
    # subscriptions/listen (2026-07-28): which list changes this stream asked for.
    listen_filter: dict[str, Any] | None = None
    subscription_id: Any = None
    ended: asyncio.Event | None = None  # set to close a listen stream gracefully
    # Set by the transport; returns False when the message could not be delivered.
    outbound: Outbound | None = None
    # Set by transports that can end a request's stream early for the client to resume it.
    close_stream: Callable[[Any, int | None], bool] | None = None
    # The server's taps, shared (Server.open_session): they see every message sent here.
    taps: Sequence[Tap] = ()
    pending: dict[Any, asyncio.Future[Any]] = field(default_factory=dict)
    # Requests that run user code, by id, while they run: the client may cancel them.
    in_flight: dict[Any, Cancellable] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def client_label(self) -> str:
        name = self.client_info.get("name") or "client"
        version = self.client_info.get("version")
        label = f"{name} {version}" if version else str(name)
        label = f"{label} via {self.via}" if self.via else label
        # Who holds the token (OAuth): the monitor, the panel and a confirmation show it.
        return f"{label} as {self.caller.who}" if self.caller is not None else label

    def send(self, message: Message, related: Any = None) -> bool:
        if self.outbound is None:
            return False
        if self.taps:
            tell_taps(self.taps, "out", self, message)
        return self.outbound(message, related)

    def notify(
        self, method: str, params: dict[str, Any] | None = None, related: Any = None
    ) -> bool:
        if self.subscription_id is not None:
            # Notifications on a listen stream name the subscription they belong to.
            meta = {**(params or {}).get("_meta", {}), SUBSCRIPTION_ID: self.subscription_id}
            params = {**(params or {}), "_meta": meta}
        message: Message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return self.send(message, related)

    def subscribe(self, uri: str) -> None:
        """``resources/subscribe``: -32602 for a URI past MAX_URI_LENGTH, -32000 past
        MAX_SUBSCRIPTIONS or MAX_SUBSCRIBED_CHARS (one kept already is fine)."""
        check_uri_length(uri)
        if uri in self.subscriptions:
            return
        if len(self.subscriptions) >= MAX_SUBSCRIPTIONS:
            raise RpcError(
                SERVER_ERROR,
                f"Too many resource subscriptions ({len(self.subscriptions)}) on this "
                "session: unsubscribe from some first",
            )
        if sum(map(len, self.subscriptions)) + len(uri) > MAX_SUBSCRIBED_CHARS:
            raise RpcError(
                SERVER_ERROR,
                f"The URIs this session subscribed to pass {MAX_SUBSCRIBED_CHARS} characters: "
                "unsubscribe from some first",
            )
        self.subscriptions.add(uri)

    def wants_log(self, level: str) -> bool:
        if self.log_level is None:
            # 2026-07-28: no logLevel in the request's _meta means no log messages at all.
            return self.era != "modern"
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)

    def wants_change(self, kind: str) -> bool:
        """Whether this session hears ``notifications/<kind>/list_changed``."""
        if self.listen_filter is None:
            return self.era != "modern"  # handshake sessions hear every change
        return bool(self.listen_filter.get(f"{kind}ListChanged"))

    async def request(
        self, method: str, params: dict[str, Any], related: Any = None, timeout: float | None = None
    ) -> dict[str, Any]:
        """Send a server->client request and wait for the client's response."""
        request_id = f"s-{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        try:
            if not self.send(message, related):
                raise ClientUnavailable(
                    f"cannot send {method} to the client: it has no open stream to receive it"
                )
            return await asyncio.wait_for(future, timeout)
        finally:
            self.pending.pop(request_id, None)

    def resolve(self, message: Message) -> None:
        """A client's response to one of our requests."""
        future = self.pending.get(message.get("id"))
        if future is None or future.done():
            return
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            code = error.get("code")
            if not _error_code(code):  # it may become our reply's: only a JSON-RPC code
                code = INTERNAL_ERROR
            future.set_exception(
                RpcError(code, str(error.get("message", "client error")), error.get("data"))
            )
        else:
            future.set_result(message.get("result") or {})

    def close(self) -> None:
        """The session ended: nothing it waits for will come."""
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ClientUnavailable("the client's session ended"))
        for request in list(self.in_flight.values()):
            request.cancel()


def check_uri_length(uri: str) -> None:
    """-32602 for a URI longer than any a session keeps (before it is matched at all)."""
    if len(uri) > MAX_URI_LENGTH:
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid params: a URI of {len(uri)} characters is longer than {MAX_URI_LENGTH}",
        )


def kept_description(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``clientInfo`` and ``capabilities`` of an ``initialize`` a session keeps;
    -32602 if together they pass MAX_CLIENT_DESCRIPTION (no session is opened then)."""
    info, capabilities = params.get("clientInfo"), params.get("capabilities")
    info = info if isinstance(info, dict) else {}
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    if estimate([info, capabilities], MAX_CLIENT_DESCRIPTION) > MAX_CLIENT_DESCRIPTION:
        raise RpcError(
            INVALID_PARAMS,
            "Invalid params: clientInfo and capabilities are too large to keep for a "
            f"session (more than {MAX_CLIENT_DESCRIPTION // 1024} KiB)",
        )
    return info, capabilities


def kept_subscriptions(uris: list[Any]) -> list[str]:
    """What a ``subscriptions/listen`` stream keeps of the URIs it asked for: the first
    distinct strings within the bounds of a session's subscriptions (others are left
    out; the acknowledgement lists what was kept)."""
    kept: list[str] = []
    chars = 0
    for uri in dict.fromkeys(u for u in uris if isinstance(u, str) and len(u) <= MAX_URI_LENGTH):
        if len(kept) >= MAX_SUBSCRIPTIONS or chars + len(uri) > MAX_SUBSCRIBED_CHARS:
            break
        kept.append(uri)
        chars += len(uri)
    return kept


def _error_code(code: Any) -> TypeGuard[int]:
    """Whether a client's error code is one JSON-RPC allows: an integer (a 32-bit one, as
    every JSON-RPC library reads it)."""
    return isinstance(code, int) and not isinstance(code, bool) and -(2**31) <= code < 2**31


_failed_taps: weakref.WeakSet[Any] = weakref.WeakSet()


def tell_taps(taps: Sequence[Tap], direction: str, session: Session, message: Message) -> None:
    """Show ``message`` to each tap. A tap only watches: one that fails is logged, and the
    message goes on as if nobody had looked."""
    for tap in tuple(taps):  # a snapshot: another thread may add or remove a tap meanwhile
        try:
            tap(direction, session, message)
        except Exception:
            # Once with its traceback: a tap that always fails would otherwise log at the
            # rate of the traffic.
            try:
                repeated = tap in _failed_taps
                _failed_taps.add(tap)
            except TypeError:  # a callable that takes no weak reference: always in full
                repeated = False
            if repeated:
                logger.debug("a message tap failed again", exc_info=True)
            else:
                logger.exception("a message tap failed (further failures: debug level)")
