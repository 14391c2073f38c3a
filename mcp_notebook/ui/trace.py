"""What passes through the server, for the monitor: raw JSON-RPC (``%mcp trace on|off``)
and the 2026-07-28 clients seen lately (they have no session to list).

Wraps a Server instance's ``handle`` (requests in, replies out) and every new session's
``outbound`` (notifications and server->client requests). Tracing off, the wrappers cost
an attribute check. Entries are kept in bounded deques; appending is thread-safe.
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


class Trace:
    def __init__(self, on_change: Callable[[], None]) -> None:
        self.enabled = False
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

    def wrap(self, server: Any) -> None:
        """Record what ``server`` receives and sends from now on (while enabled)."""
        handle, open_session = server.handle, server.open_session

        async def traced_handle(message: Any, session: Any, *args: Any) -> Any:
            self._seen(session)
            if not self.enabled:
                return await handle(message, session, *args)
            self.add("→", session, message)
            reply = await handle(message, session, *args)
            if reply is not None and self.enabled:
                self.add("←", session, reply)
            return reply

        def traced_open(session: Any) -> Any:
            send = session.outbound
            if send is not None:

                def outbound(message: Any, related: Any) -> bool:
                    if self.enabled:
                        self.add("←", session, message)
                    return send(message, related)

                session.outbound = outbound
            return open_session(session)

        server.handle, server.open_session = traced_handle, traced_open
