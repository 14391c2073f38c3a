"""Who can reach a server bound to a given address, said plainly, and what is refused.

Serving the notebook without a token runs code for anyone who can connect. On loopback
that is this machine's users and processes; on any other address it is every host that
can route to it. The second needs a deliberate ``--allow-remote-no-auth``.
"""

from __future__ import annotations

import socket

from .errors import McpNotebookError
from .transports.security import is_loopback

ALLOW_FLAG = "--allow-remote-no-auth"
WILDCARDS = frozenset({"0.0.0.0", "::", ""})


class UnsafeBind(McpNotebookError, ValueError):
    """No token on an address other hosts can reach, without the deliberate flag."""


def is_remote(host: str) -> bool:
    """Whether other hosts may be able to connect to a socket bound to ``host``."""
    return not is_loopback(host)


def check(host: str, auth: bool, allow_remote_no_auth: bool) -> None:
    """Refuse serving without a token on a non-loopback address unless told so on purpose."""
    if not auth and is_remote(host) and not allow_remote_no_auth:
        raise UnsafeBind(
            f"refusing to serve without a token on {host or '0.0.0.0'}: every host that can "
            f"route to this machine could run code in the notebook. Drop --no-auth (a token "
            f"is required), bind 127.0.0.1, or pass {ALLOW_FLAG} if that is what you want."
        )


def addresses(host: str) -> list[str]:
    """The addresses a socket bound to ``host`` answers on (all interfaces for a wildcard)."""
    if host not in WILDCARDS:
        return [host]
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    found: set[str] = set()
    try:
        import psutil  # optional: the most complete list

        for entries in psutil.net_if_addrs().values():
            found.update(e.address for e in entries if e.family == family)
    except Exception:  # no psutil, or no permission to list interfaces
        try:
            infos = socket.getaddrinfo(socket.gethostname(), None, family)
            found.update(str(info[4][0]) for info in infos)
        except OSError:
            pass
    return sorted(found, key=lambda a: (is_loopback(a), a)) or [host or "0.0.0.0"]


def who_can_reach(
    host: str, port: int | None, token: str | None, oauth: bool = False
) -> str | None:
    """One sentence on who can call the tools; None for loopback with a token (the default)
    or an OAuth issuer's access tokens."""
    if not is_remote(host):
        if token or oauth:
            return None
        return (
            "Authentication is off (--no-auth): any user or program on this machine can call "
            "your tools."
        )
    where = ", ".join(addresses(host))
    reach = f"every host that can route to {where} on port {port}"
    if oauth:
        return (
            f"Reachable from the network: {reach} can connect; the issuer's access tokens "
            "are what keep them out, and plain HTTP sends them unencrypted."
        )
    if token:
        return (
            f"Reachable from the network: {reach} can connect; the bearer token is what keeps "
            "them out, and plain HTTP sends it unencrypted."
        )
    return (
        f"Authentication is off on a network address ({ALLOW_FLAG}): {reach} can call your "
        "tools and run code in this notebook, with no token."
    )
