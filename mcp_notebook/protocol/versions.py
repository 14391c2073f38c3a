"""Protocol versions this server speaks, newest last."""

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[-1]


def negotiate(requested: object) -> str:
    """Echo a version we support, otherwise offer our latest (the spec's rule)."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE


# 2026-07-28 and later: no handshake, every request says its version in _meta.
MODERN_VERSIONS = ("2026-07-28",)
ALL_VERSIONS = (*HANDSHAKE_VERSIONS, *MODERN_VERSIONS)
