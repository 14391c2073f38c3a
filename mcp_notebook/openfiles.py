"""Enough open files that the connection caps, not ``EMFILE``, limit clients.

macOS starts processes with a soft ``RLIMIT_NOFILE`` of 256: fewer than the server's
connection cap (transports/limits.py) plus the kernel's own files. Jupyter Server raises
the soft limit for the kernels it starts; ``serve`` (whose kernel inherits it) and
``mcp.start()`` (in a kernel some other front end started) do the same. Only the soft
limit moves, never above the hard one, which any process may do.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)

TARGET = 4096  # Jupyter Server's min_open_files_limit


def raise_open_file_limit(target: int = TARGET) -> None:
    """Raise the soft open-file limit to ``min(hard, target)``; never lower it, never fail."""
    try:
        import resource
    except ImportError:  # Windows: no rlimits (sockets are handles, not C runtime files)
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ValueError, OSError) as exc:
        logger.debug("could not read the open-file limit: %s", exc)
        return
    wanted = target if hard == resource.RLIM_INFINITY else min(hard, target)
    if soft == resource.RLIM_INFINITY:
        return
    # macOS refuses a soft limit above kern.maxfilesperproc (ValueError): ask for less.
    while soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as exc:
            logger.debug("could not raise the open-file limit to %d: %s", wanted, exc)
            wanted //= 2
            continue
        logger.debug("raised the soft open-file limit from %d to %d", soft, wanted)
        return
