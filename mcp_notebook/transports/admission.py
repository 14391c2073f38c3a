"""Who may open a handshake-era session now, and how a refusal for load is told.

No tornado: the tornado transport (limits.py, http.py) and the ASGI app (asgi.py) share it.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ..protocol.codes import SERVER_ERROR
from .settings import Limits


@dataclass
class Refusal:
    status: int
    message: str
    retry_after: int
    code: int = SERVER_ERROR  # refused for load: retry later


class SessionAdmission:
    """Who may open a session now: a token bucket per client address, a bounded table."""

    # Buckets remembered; the least recently charged is forgotten first, and a client
    # forgotten starts again with a full allowance.
    MAX_CLIENTS = 4096

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        # Handshake sessions by id, with when they were last used.
        self.last_used: dict[str, float] = {}
        # Sessions not used since their initialize, oldest first, with their client.
        self.unused: OrderedDict[str, str] = OrderedDict()

    def refusal(
        self, client: str, now: float | None = None, busy: Callable[[str], bool] | None = None
    ) -> Refusal | None:
        """Charge ``client`` for a new session; why it may not open one, or None."""
        now = time.monotonic() if now is None else now
        limits = self.limits
        tokens, since = self._buckets.pop(client, (float(limits.session_burst), now))
        tokens = min(float(limits.session_burst), tokens + (now - since) * limits.session_rate)
        self._buckets[client] = (tokens - 1 if tokens >= 1 else tokens, now)
        while len(self._buckets) > self.MAX_CLIENTS:
            self._buckets.popitem(last=False)
        if tokens < 1:
            wait = (1 - tokens) / limits.session_rate if limits.session_rate > 0 else 60
            return Refusal(
                429,
                "Too Many Requests: this client opens sessions too fast; retry later",
                max(1, math.ceil(wait)),
            )
        if len(self.last_used) >= limits.max_sessions and self.expirable(now, busy) is None:
            oldest = min(self.last_used.values(), default=now)
            wait = oldest + limits.session_idle_timeout - now
            return Refusal(
                503,
                f"Service Unavailable: {limits.max_sessions} sessions are in use; retry later",
                max(1, math.ceil(wait)),
            )
        return None

    def expirable(
        self, now: float | None = None, busy: Callable[[str], bool] | None = None
    ) -> str | None:
        """The least recently used session not in use for longer than allowed, if any.

        A scan, run only when the table is full, keeps ``touch`` (every request) cheap."""
        now = time.monotonic() if now is None else now
        idle = [
            (used, session_id)
            for session_id, used in self.last_used.items()
            if now - used > self.limits.session_idle_timeout
        ]
        for _, session_id in sorted(idle):
            if busy is None or not busy(session_id):
                return session_id
        return None

    def oldest_unused(self, client: str) -> str | None:
        """The oldest session ``client`` opened and never used, if any."""
        return next((sid for sid, owner in self.unused.items() if owner == client), None)

    def add(self, session_id: str, client: str = "") -> None:
        self.last_used[session_id] = time.monotonic()
        self.unused[session_id] = client

    def touch(self, session_id: str) -> None:
        if session_id in self.last_used:
            self.last_used[session_id] = time.monotonic()
            self.unused.pop(session_id, None)

    def forget(self, session_id: str) -> None:
        self.last_used.pop(session_id, None)
        self.unused.pop(session_id, None)
