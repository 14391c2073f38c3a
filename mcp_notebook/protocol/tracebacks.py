"""A tool's traceback as the person at the notebook reads it.

The frames of this package (the executor, the capture, the call path) come first in every
failed call and say nothing about the user's bug, so they are left out, as IPython leaves
out its own; a cell's temporary file is named as IPython names it (``Cell In[5], line 3``)
when the kernel side says how (``code_name``). The exception keeps every frame for
``%mcp debug``: only the text is trimmed. A failure with no frame of the user's (the
package's own error) keeps all of its frames, since then they are the story.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

# A path is the package's when it starts here (installed, editable or a checkout alike).
PACKAGE_DIR = str(Path(__file__).resolve().parent.parent) + os.sep

CodeName = Callable[[str], "str | None"]
"""A frame's file name → what a person calls it (``Cell In[5]``), or None to leave it."""


def user_traceback(error: BaseException, code_name: CodeName | None = None) -> str:
    """The text of ``error``'s traceback from the user's own frames, cells named."""
    summary = traceback.TracebackException.from_exception(error)
    files: set[str] = set()
    for part in _chain(summary):
        theirs = [frame for frame in part.stack if not _ours(frame.filename)]
        if theirs and len(theirs) < len(part.stack):
            part.stack = traceback.StackSummary.from_list(theirs)
        files.update(frame.filename for frame in part.stack)
    text = "".join(summary.format())
    if code_name is not None:
        for name in files:
            label = _label(code_name, name)
            if label:
                text = text.replace(f'File "{name}", line ', f"{label}, line ")
    return text


def _ours(filename: str) -> bool:
    try:
        return str(Path(filename).resolve()).startswith(PACKAGE_DIR)
    except (OSError, ValueError):  # "<string>", a NUL in a made-up name
        return False


def _label(code_name: CodeName, filename: str) -> str | None:
    try:
        return code_name(filename)
    except Exception:  # a namer's failure must not lose the traceback itself
        return None


def _chain(summary: traceback.TracebackException) -> Iterator[traceback.TracebackException]:
    """``summary`` and every exception chained to it (causes, contexts, group members)."""
    seen: set[int] = set()
    todo = [summary]
    while todo:
        part = todo.pop()
        if id(part) in seen:
            continue
        seen.add(id(part))
        yield part
        todo.extend(p for p in (part.__cause__, part.__context__) if p is not None)
        todo.extend(getattr(part, "exceptions", None) or ())  # ExceptionGroup (3.11+)
