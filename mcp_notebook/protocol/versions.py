"""Protocol versions the package speaks, newest last: the server and the bridge both
read them here (the one list, so the bridge cannot know a version the server does not)."""

from typing import Any

from .names import META_VERSION

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]
TASKS_VERSION = "2025-11-25"  # the handshake revision with experimental tasks


def negotiate(requested: object) -> str:
    """Echo a version we support, otherwise offer our latest (the spec's rule)."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE


# 2026-07-28 and later: no handshake, every request says its version in _meta.
MODERN_VERSIONS = ("2026-07-28",)
FIRST_MODERN = MODERN_VERSIONS[0]  # the revision that removed the handshake
ALL_VERSIONS = (*HANDSHAKE_VERSIONS, *MODERN_VERSIONS)


def meta_version(message: Any) -> str | None:
    """The protocol version a request carries in ``params._meta``, if any."""
    params = message.get("params") if isinstance(message, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    value = meta.get(META_VERSION) if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def modern_version(message: Any) -> str | None:
    """The per-request version of a message (2026-07-28 and later): a ``_meta`` version
    that is not one of the handshake era's."""
    version = meta_version(message)
    return version if version is not None and version not in HANDSHAKE_VERSIONS else None
