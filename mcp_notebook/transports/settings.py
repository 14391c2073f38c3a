"""What ``mcp.start`` configures an HTTP transport with, importable without tornado.

``import mcp_notebook`` reads these (``mcp.limits``, ``start``'s defaults); tornado is
imported only when a server starts (app.py imports transports/http.py there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_BODY = 4 * 1024 * 1024  # bytes of one request body


@dataclass
class Limits:
    """What the HTTP server allows clients; ``mcp.limits`` before ``%mcp start``.

    How each is enforced: transports/limits.py."""

    max_connections: int = 256
    max_connections_per_client: int = 128
    header_timeout: float = 10.0
    idle_timeout: float = 60.0
    body_timeout: float = 30.0
    write_timeout: float = 30.0
    max_sessions: int = 1000
    session_idle_timeout: float = 600.0
    session_rate: float = 10.0
    session_burst: int = 100

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ValueError(f"limits.{name} must be a positive number, not {value!r}")
        super().__setattr__(name, value)
