"""The stdio bridge: MCP over stdin/stdout, relayed to a notebook's HTTP endpoint.

Modules: ``relay`` (the entry point, standard MCP), ``seed_relay`` (seed 000's dialect),
``modern`` and ``headers`` (2026-07-28 requests), ``upstream`` (the session with the
notebook), ``link`` and ``sse`` (HTTP), ``channel`` (stdio framing), ``workers``.
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from .relay import Bridge
from .upstream import Target

__all__ = ["Bridge", "Target", "protocol_stdout"]


def protocol_stdout() -> BinaryIO:
    """Claim fd 1 for protocol messages only.

    The returned file writes to the real stdout; fd 1 and ``sys.stdout`` are pointed at
    stderr, so a stray print (ours, a library's, a child process's) cannot corrupt the
    stream.
    """
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol
