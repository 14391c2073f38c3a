"""Who may open a handshake-era session now, and how a refusal for load is told.

No tornado: the tornado transport (limits.py, http.py) and the ASGI app (asgi.py) share it.

Clients are counted by *origin*: the address, except that every loopback address
(127.0.0.0/8, ``::1``, ``::ffff:127.x.x.x``) is one origin, since one local process may
bind any of them: the allowance of new sessions is per origin, and when the table is full,
room is made for a new session by ending the least recently used session idle past
``session_idle_timeout``, else the least recently used session of the origin holding the
most. A session with an open GET stream is never ended for room. So a client that fills
the table cannot lock out newcomers; a session ended for room answers 404 and its client
initializes again, as the spec says.
"""

from __future__ import annotations

import ipaddress
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


def origin_of(client: str) -> str:
    """The origin sessions of the client at address ``client`` count against."""
    try:
        address = ipaddress.ip_address(client.split("%", 1)[0])  # drop an IPv6 zone
    except ValueError:
        return client  # not an IP address (a Unix socket path, say): as it is
    mapped = getattr(address, "ipv4_mapped", None)
    if mapped is not None:
        address = mapped
    return "loopback" if address.is_loopback else str(address)


Busy = Callable[[str], bool]


class SessionAdmission:
    """Who may open a session now: a token bucket per origin, a bounded table."""

    # Buckets remembered; the least recently charged is forgotten first, and a client
    # forgotten starts again with a full allowance.
    MAX_CLIENTS = 4096

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        # Handshake sessions by id, with when they were last used.
        self.last_used: dict[str, float] = {}
        # Sessions not used since their initialize, oldest first, with their origin.
        self.unused: OrderedDict[str, str] = OrderedDict()
        self.origin: dict[str, str] = {}  # every session's origin

    def admit(
        self, client: str, end: Callable[[str], None], busy: Busy | None = None
    ) -> Refusal | None:
        """:meth:`refusal`, except that past its allowance a client still gets in by
        ending (``end``) the oldest session its origin opened and never used."""
        refusal = self.refusal(client, busy=busy)
        if refusal is not None and refusal.status == 429:
            unused = self.oldest_unused(client)
            if unused is not None:  # its allowance went on sessions nobody used
                end(unused)  # ... so one makes room: the table is not full
                refusal = None
        return refusal

    def refusal(
        self, client: str, now: float | None = None, busy: Busy | None = None
    ) -> Refusal | None:
        """Charge ``client``'s origin for a new session; why it may not open one, or None."""
        now = time.monotonic() if now is None else now
        limits = self.limits
        origin = origin_of(client)
        tokens, since = self._buckets.pop(origin, (float(limits.session_burst), now))
        tokens = min(float(limits.session_burst), tokens + (now - since) * limits.session_rate)
        self._buckets[origin] = (tokens - 1 if tokens >= 1 else tokens, now)
        while len(self._buckets) > self.MAX_CLIENTS:
            self._buckets.popitem(last=False)
        if tokens < 1:
            wait = (1 - tokens) / limits.session_rate if limits.session_rate > 0 else 60
            return Refusal(
                429,
                "Too Many Requests: this client opens sessions too fast; retry later",
                max(1, math.ceil(wait)),
            )
        if len(self.last_used) >= limits.max_sessions and self.room(now, busy) is None:
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

    def room(self, now: float | None = None, busy: Busy | None = None) -> str | None:
        """The session to end for a new one when the table is full (see above), if any.

        A scan, run only when the table is full."""
        expired = self.expirable(now, busy)
        if expired is not None:
            return expired
        held: dict[str, list[str]] = {}  # what each origin holds that may end
        for session_id, origin in self.origin.items():
            if busy is None or not busy(session_id):
                held.setdefault(origin, []).append(session_id)
        if not held:
            return None
        biggest: list[str] = max(held.values(), key=len)
        # Least recently used: a client at work keeps its session.
        return min(biggest, key=self.last_used.__getitem__)

    def oldest_unused(self, client: str) -> str | None:
        """The oldest session ``client``'s origin opened and never used, if any."""
        origin = origin_of(client)
        return next((sid for sid, owner in self.unused.items() if owner == origin), None)

    def add(self, session_id: str, client: str = "") -> None:
        origin = origin_of(client)
        self.last_used[session_id] = time.monotonic()
        self.unused[session_id] = origin
        self.origin[session_id] = origin

    def touch(self, session_id: str) -> None:
        if session_id in self.last_used:
            self.last_used[session_id] = time.monotonic()
            self.unused.pop(session_id, None)

    def forget(self, session_id: str) -> None:
        self.last_used.pop(session_id, None)
        self.unused.pop(session_id, None)
        self.origin.pop(session_id, None)
