"""Request checks that make a loopback server safe by default: token, Host and Origin."""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from ..auth.resource import ResourceServer

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> str:
    """``"[::1]:8000"`` -> ``"::1"``, ``"localhost:80"`` -> ``"localhost"``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def new_token() -> str:
    """A random bearer token that can follow ``--token`` on a command line: one in 64 of
    ``token_urlsafe``'s begin with "-", which argparse takes for an option."""
    while (token := secrets.token_urlsafe(24)).startswith("-"):
        pass
    return token


# What a refused request is told, by the handler and by the early refusal in limits.py.
AUTHENTICATE = 'Bearer realm="mcp-notebook"'
NOT_FOUND = "Not Found: the MCP endpoint is elsewhere"


class Guard:
    """Decides whether a request may reach the server; each check returns a reason or None."""

    def __init__(
        self,
        *,
        bind_host: str,
        token: str | None,
        allowed_hosts: list[str] | None = None,
        allowed_origins: list[str] | None = None,
        relay_key: str | None = None,
    ) -> None:
        self.token = token
        # With OAuth configured (auth/), it decides who may call; the token is not used.
        self.resource: ResourceServer | None = None
        self.relay_key = relay_key  # transports/relayed.py
        self._expected = f"Bearer {token}".encode() if token else b""
        hosts = {h.lower().strip("[]") for h in allowed_hosts or ()}
        # A wildcard bind serves whatever names reach it; only explicit lists restrict it.
        self.check_hosts = bool(hosts) or bind_host not in ("0.0.0.0", "::", "")
        if not is_loopback(bind_host):
            hosts.add(bind_host.lower().strip("[]"))
        self.allowed_hosts = hosts
        self.allowed_origins = {o.rstrip("/").lower() for o in allowed_origins or ()}
        self._hosts_seen_ok: set[str] = set()

    def host_problem(self, host_header: str | None) -> str | None:
        if not self.check_hosts or host_header in self._hosts_seen_ok:
            return None
        host = split_host(host_header or "")
        if is_loopback(host) or host in self.allowed_hosts:
            if host_header is not None and len(self._hosts_seen_ok) < 64:
                self._hosts_seen_ok.add(host_header)  # clients send the same one every time
            return None
        return f"Host {host_header!r} is not allowed"

    def origin_problem(self, origin: str | None) -> str | None:
        if origin is None:
            return None  # not a browser: nothing to rebind
        if origin.rstrip("/").lower() in self.allowed_origins:
            return None
        parts = urlsplit(origin)
        if parts.scheme in ("http", "https") and parts.hostname and is_loopback(parts.hostname):
            return None
        return f"Origin {origin!r} is not allowed"

    def auth_problem(self, authorization: str | None) -> str | None:
        if not self.token:
            return None
        if authorization and hmac.compare_digest(authorization.strip().encode(), self._expected):
            return None
        return "Missing or invalid bearer token" if authorization else "Missing bearer token"
