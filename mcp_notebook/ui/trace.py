"""What passes through the server, for the monitor: raw JSON-RPC (``%mcp trace on|off``)
and the 2026-07-28 clients seen lately (they have no session to list).

A tap on the server (``Server.add_tap``) shows it every message in and out: requests and
notifications in, replies, notifications and server->client requests out; it is on the
server only while tracing, so that a server not traced takes its untapped path. The
stateless clients are remembered always, through ``Server.stateless_seen`` (one test per
request). Entries are kept in bounded deques; appending is thread-safe.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from typing import Any

MAX_ENTRY = 2_000  # characters of one message kept
KEEP = 300  # messages kept
KEEP_CLIENTS = 20  # stateless clients remembered
ARROWS = {"in": "→", "out": "←"}


class Trace:
    def __init__(self, on_change: Callable[[], None]) -> None:
        self._enabled = False
        self._server: Any = None  # the server attached last
        self._entries: deque[tuple[float, str, str, str]] = deque(maxlen=KEEP)
        self._on_change = on_change
        # (name, version, protocol) -> the last 2026-07-28 session seen from that client
        self._stateless: dict[tuple[str, str, str], Any] = {}

    def stateless_clients(self) -> list[Any]:
        return list(self._stateless.values())

    def _seen(self, session: Any) -> None:
        if getattr(session, "era", None) != "modern" or session.subscription_id is not None:
            return  # handshake sessions and listen streams are in server.sessions
        info = session.client_info or {}
        key = (str(info.get("name")), str(info.get("version")), str(session.protocol_version))
        self._stateless.pop(key, None)
        self._stateless[key] = session
        while len(self._stateless) > KEEP_CLIENTS:
            self._stateless.pop(next(iter(self._stateless)))

    def snapshot(self) -> list[tuple[float, str, str, str]]:
        return list(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def add(self, arrow: str, session: Any, message: Any) -> None:
        try:
            text = json.dumps(message, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(message)
        if len(text) > MAX_ENTRY:
            text = text[:MAX_ENTRY] + f"… ({len(text)} characters)"
        self._entries.append((time.time(), arrow, getattr(session, "client_label", "?"), text))
        self._on_change()

    def attach(self, server: Any) -> None:
        """Record what ``server`` receives and sends from now on (while enabled)."""
        self._server = server
        server.stateless_seen = self._seen
        if self._enabled and self.tap not in server.taps:  # attached again: one tap
            server.add_tap(self.tap)

    @property
    def enabled(self) -> bool:
        return self._enabled

    @enabled.setter
    def enabled(self, on: bool) -> None:
        was, self._enabled = self._enabled, on
        server = self._server
        if server is None or was == on:
            return
        if on:
            server.add_tap(self.tap)
        else:
            server.remove_tap(self.tap)

    def tap(self, direction: str, session: Any, message: Any) -> None:
        """The server's tap (``Server.add_tap``) while tracing, on the server's thread."""
        if self._enabled:
            self.add(ARROWS[direction], session, message)
