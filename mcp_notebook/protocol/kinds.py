"""The few closed sets of words the protocol core passes around as strings, named once.

They are ``Literal`` types, not enums: the values stay plain ``str`` on the request path
and in JSON, tests and the notebook's display, while mypy rejects a misspelt one.
``get_args(Era)`` etc. give the values at run time.
"""

from __future__ import annotations

from typing import Literal, get_args

# Which MCP a session speaks: the handshake era (initialize, then a session) or the
# 2026-07-28 one (each request stands alone). The notebook shows it as the "dialect".
Era = Literal["handshake", "modern"]

# A call's statuses: queued -> (awaiting confirmation) -> running -> a final one.
# DROPPED: it never started, as its client hung up and nothing could receive its reply.
FinalStatus = Literal["done", "error", "denied", "cancelled", "interrupted", "dropped: client gone"]
CallStatus = Literal["queued", "awaiting confirmation", "running", FinalStatus]

DROPPED: FinalStatus = "dropped: client gone"

ERAS: frozenset[str] = frozenset(get_args(Era))
FINAL_STATUSES: frozenset[str] = frozenset(get_args(FinalStatus))
CALL_STATUSES: frozenset[str] = frozenset(
    v for a in get_args(CallStatus) for v in (get_args(a) or (a,))
)
