"""What the server remembers about one connected client."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


@dataclass(eq=False)
class Session:
    id: str = field(default_factory=lambda: secrets.token_hex(16))
    protocol_version: str | None = None
    client_info: dict[str, Any] = field(default_factory=dict)
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    initialized: bool = False
    transport: str = "memory"
    created: float = field(default_factory=time.time)
    # Set by a transport while it can deliver server->client messages (e.g. a GET stream).
    send: Callable[[Message], None] | None = None

    @property
    def client_label(self) -> str:
        name = self.client_info.get("name") or "client"
        version = self.client_info.get("version")
        return f"{name} {version}" if version else str(name)
