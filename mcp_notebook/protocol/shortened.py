"""What the call history keeps of a call too big to keep whole: its error's message cut
(and its frames dropped once it is no longer among the debuggable), its outputs cut or
replaced by a note. :class:`~.calls.CallLog` decides when; this is how.
"""

from __future__ import annotations

import copy as copy_module
from typing import Any

from .abbreviate import abbreviate, estimate

_NOTE = 512  # room for a note that replaces an output too big to keep (a dict of 3 str)
_SLOT = 8  # an item of a list


def message_of(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # a user's exception whose __str__ fails
        return f"<{type(error).__name__}: str() failed>"


def short_error(
    error: BaseException, message: str, limit: int, frames: bool = False
) -> BaseException:
    """An exception like ``error`` whose message is cut to ``limit`` characters; with its
    traceback (the frames) if ``frames``."""
    short = abbreviate(message, limit)
    try:
        copy = type(error)(short)
    except Exception:  # a constructor that wants other arguments
        copy = RuntimeError(f"{type(error).__name__}: {short}")
    if len(message_of(copy)) > limit + len(type(error).__name__) + 2:
        copy = RuntimeError(f"{type(error).__name__}: {short}")
    if frames:
        copy.__traceback__ = error.__traceback__
    return copy


def without_frames(error: BaseException) -> BaseException:
    """A copy of ``error`` without its traceback and chained exceptions (their frames hold
    memory). A copy: user code may raise one exception object again and again (one made
    at module level), and what it holds is not the history's to change."""
    try:
        copy = copy_module.copy(error)
    except Exception:  # an exception that does not copy
        copy = RuntimeError(f"{type(error).__name__}: {message_of(error)}")
    if copy is error:
        copy = RuntimeError(f"{type(error).__name__}: {message_of(error)}")
    copy.__traceback__ = copy.__cause__ = copy.__context__ = None
    return copy


def short_output(outputs: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Outputs within about ``limit``: stream text cut, displays too big replaced by a
    note, and once not even a note fits, one last note of how many more there were."""
    kept: list[dict[str, Any]] = []
    used = estimate([], 0)
    reserve = _NOTE * min(len(outputs), max(limit // (2 * _NOTE), 1))
    for index, output in enumerate(outputs):
        reserve = max(reserve - _NOTE, 0)
        left = limit - _NOTE - used - reserve  # the last _NOTE: for a last note
        if left < _NOTE:
            kept.append(_note(f"[{len(outputs) - index} more outputs left out of the history]"))
            break
        size = estimate(output, left)
        if size > left:
            if output.get("output_type") == "stream":
                text = abbreviate(output.get("text", ""), left - _NOTE)
                output = {**output, "text": text}
            else:
                kind = output.get("output_type", "output")
                output = _note(f"[{kind} left out of the history: over {left} bytes]")
            size = estimate(output, limit)
        kept.append(output)
        used += _SLOT + size
    return kept


def _note(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text + "\n"}
