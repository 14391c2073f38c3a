"""What a refused client is told, and where it learns how to get a token.

``WWW-Authenticate`` (RFC 6750 §3, MCP authorization "Protected Resource Metadata
Discovery" and "Scope Challenge Handling") and the protected-resource metadata document
(RFC 9728) with its two well-known paths.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from .config import AuthConfig

WELL_KNOWN = "/.well-known/oauth-protected-resource"


def metadata_path(resource: str) -> str:
    """RFC 9728 §3.1: the well-known part inserted before the resource's path."""
    return WELL_KNOWN + urlsplit(resource).path.rstrip("/")


def metadata_url(resource: str) -> str:
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{metadata_path(resource)}"


def metadata_paths(resource: str) -> frozenset[str]:
    """Where the document is served: the path-aware one and the root one."""
    return frozenset({WELL_KNOWN, metadata_path(resource)})


def metadata_document(config: AuthConfig) -> dict[str, Any]:
    document: dict[str, Any] = {
        "resource": config.resource,
        "authorization_servers": [config.issuer],
        "bearer_methods_supported": ["header"],
    }
    if config.scopes:
        document["scopes_supported"] = list(config.scopes)
    return document


def _quoted(value: str) -> str:
    # RFC 6750 §3: auth-param values are quoted strings; error_description uses
    # %x20-21 / %x23-5B / %x5D-7E only, so quotes and backslashes are dropped, not escaped.
    kept = "".join(c for c in value if 0x20 <= ord(c) <= 0x7E and c not in '"\\')
    return f'"{kept}"'


def challenge(
    config: AuthConfig,
    *,
    error: str | None = None,
    description: str | None = None,
    scopes: Iterable[str] = (),
) -> str:
    """``Bearer resource_metadata="...", scope="...", error=..., error_description=...``."""
    params = [f"resource_metadata={_quoted(metadata_url(config.resource))}"]
    scope = " ".join(sorted(set(scopes) or set(config.scopes)))
    if scope:
        params.append(f"scope={_quoted(scope)}")
    if error is not None:
        params.append(f"error={_quoted(error)}")
    if description:
        params.append(f"error_description={_quoted(description[:200])}")
    return "Bearer " + ", ".join(params)
