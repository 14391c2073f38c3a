"""Keep the kernel machine's file paths out of error messages that go to a client.

A reader that raises ``FileNotFoundError('/home/alice/secret/x')`` would otherwise tell
the agent (and whoever reads its transcript) the user's name and folder layout. The full
message stays in the notebook (``mcp.calls``); the client gets ``<path>`` in its place.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from functools import lru_cache

PLACEHOLDER = "<path>"
# A path runs until whitespace, a quote, or a bracket that closes around it.
_REST = r"[^\s'\"`<>()\[\]{},;]*"
# Any absolute path with at least two parts: "/a/b", "C:\a", "\\server\share". Not a URL's
# path ("scheme://host/a/b"): the slash may not follow a word character, ":", "/" or ".".
_ABSOLUTE = re.compile(
    r"(?<![\w:/.~\\-])(?:/[^\s/'\"`<>()\[\]{},;]+/" + _REST + r"|[A-Za-z]:\\" + _REST + r"|\\\\"
    r"[^\s\\]+\\" + _REST + r")"
)


@lru_cache(maxsize=8)
def _known_roots(cwd: str) -> re.Pattern[str]:
    """Folders whose names give the machine away, wherever they appear (even in a URL)."""
    roots = set()
    for folder in (os.path.expanduser("~"), cwd, tempfile.gettempdir(), sys.prefix):
        for variant in (folder, os.path.realpath(folder)):
            if len(variant) > 1 and os.path.isabs(variant):
                roots.add(variant.rstrip("/\\"))
    ordered = [re.escape(r) for r in sorted(roots, key=len, reverse=True)]  # longest first
    ordered.append(r"/(?:home|Users)/[^\s/'\"`<>()\[\]{},;]+")  # anyone's home folder
    # A root ends at a separator or the path's end: "/srv/app" is not inside "/srv/ap".
    return re.compile("(?:" + "|".join(ordered) + r")(?![\w.-])" + _REST)


def redact(message: str) -> str:
    """``message`` with absolute paths (home, working folder, temp, any other) replaced."""
    if "/" not in message and "\\" not in message:
        return message  # the common case, and cheap
    message = _known_roots(os.getcwd()).sub(PLACEHOLDER, message)
    return _ABSOLUTE.sub(PLACEHOLDER, message)
