"""The stdio bridge: MCP over stdin/stdout, relayed to a notebook's HTTP endpoint."""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from .relay import Bridge, Target

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
