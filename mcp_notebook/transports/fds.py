"""How many more sockets this process may open: the connection cap is fitted under it
(transports/limits.py)."""

from __future__ import annotations

import os
import sys

# select() on Windows watches at most this many sockets in a call (CPython's FD_SETSIZE
# there), and the server's loop is a selector loop on Windows (http.new_server_loop).
WINDOWS_SELECT_LIMIT = 512


def fd_headroom() -> int | None:
    """How many more sockets the server may open, or None if unknown or unlimited."""
    if sys.platform == "win32":
        # No limit on socket handles, but the loop's select() raises ValueError past
        # its limit; the loop's own wake-up socket and the listening ones count too.
        return WINDOWS_SELECT_LIMIT - 3
    limit = open_file_limit()
    if limit is None:
        return None
    # Unknown only in a sandbox without /proc, /dev/fd or psutil: the reserve must do.
    return limit - (open_file_count() or 0)


def open_file_limit() -> int | None:
    """The soft limit on this process's open files; None if unlimited or unknown (Windows
    has no ``resource`` module)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, AttributeError, OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft


def open_file_count() -> int | None:
    """How many files (handles, on Windows) this process has open; None if it cannot
    tell. Linux lists them in /proc; elsewhere psutil (installed with ipykernel) asks
    the system; /dev/fd lists them on macOS (on FreeBSD, without fdescfs, only 0-2)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        pass
    try:
        import psutil

        process = psutil.Process()
        count: int = process.num_handles() if sys.platform == "win32" else process.num_fds()
        return count
    except Exception:  # not installed, or not allowed to ask
        pass
    try:
        return len(os.listdir("/dev/fd"))
    except OSError:
        return None
