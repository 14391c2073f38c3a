"""An endpoint made an OAuth 2.1 resource server: the one place both adapters (tornado's
http.py, the ASGI app) turn an :class:`~mcp_notebook.auth.config.AuthConfig` on.

The auth package, and joserfc with it, is imported here, when auth is configured: a
server without it never loads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..protocol import Server
from .security import Guard

if TYPE_CHECKING:
    from ..auth.config import AuthConfig
    from ..auth.resource import ResourceServer


def protect(guard: Guard, server: Server, config: AuthConfig, url: str) -> ResourceServer:
    """From now on ``guard`` lets through only holders of the issuer's tokens for this
    resource (``url`` is its audience unless the config names one), and tools that name
    ``scopes`` need them (protocol/scopes.py). The static token is not used."""
    from ..auth.resource import ResourceServer
    from ..protocol.scopes import check_scopes

    resource = ResourceServer(config.for_endpoint(url))
    guard.resource = resource
    server.intercept(check_scopes, before_record=True)
    return resource


def metadata_paths(guard: Guard, path: str) -> frozenset[str]:
    """Where the protected-resource metadata is served: the root well-known path, the
    path-aware one for the audience (RFC 9728 §3.1) and for the path served here (they
    differ behind a proxy that maps paths)."""
    resource = guard.resource
    if resource is None:
        return frozenset()
    from ..auth.challenge import WELL_KNOWN

    return resource.metadata_paths | {WELL_KNOWN + (path.rstrip("/"))}
