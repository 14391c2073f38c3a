"""Claim the process's standard output for protocol messages (stdio servers and the bridge).

Imports nothing of the package: the bridge and an exported notebook's stdio server both
use it, and the runtime distribution carries it without the bridge.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import BinaryIO

logger = logging.getLogger(__name__)


def protocol_stdout() -> BinaryIO:
    """Claim the process's standard output for protocol messages only.

    The returned file writes to the real stdout; fd 1 and ``sys.stdout`` are pointed at
    stderr, so a stray print (ours, a library's, native code's, a child process's) cannot
    corrupt the stream.
    """
    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    if sys.platform == "win32":
        _point_std_output_handle_at_stderr()
    sys.stdout = sys.stderr
    return protocol


def _point_std_output_handle_at_stderr() -> None:
    """On Windows, native code and child processes write to the standard output *handle*
    (``GetStdHandle``), which is not fd 1 of the C runtime: point it at stderr too."""
    import ctypes
    import msvcrt

    std_output_handle = -11  # STD_OUTPUT_HANDLE, (DWORD)-11
    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined]  # Windows only; mypy checks as Linux
    kernel32.SetStdHandle.argtypes = (ctypes.c_ulong, ctypes.c_void_p)  # DWORD, HANDLE
    if not kernel32.SetStdHandle(std_output_handle, msvcrt.get_osfhandle(2)):  # type: ignore[attr-defined]  # Windows only; mypy checks as Linux
        logger.warning("could not point the standard output handle at stderr")
