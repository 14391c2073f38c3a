"""How ``%mcp`` reads its words and writes its sentences: counts, summaries, durations."""

from __future__ import annotations

from IPython.core.error import UsageError

from .. import commandline


def duration(text: str) -> float:
    """Seconds, from "2s", "500ms", "1.5" (seconds); a UsageError otherwise."""
    value = text.strip().lower()
    scale = 1.0
    if value.endswith("ms"):
        value, scale = value[:-2], 0.001
    elif value.endswith("s"):
        value = value[:-1]
    try:
        seconds = float(value) * scale
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds <= 86400:  # NaN fails too
        raise UsageError(f"%mcp tasks: --after needs a duration like 2s or 500ms, not {text!r}")
    return seconds


def count(n: int, noun: str) -> str:
    """A count in words: "no tools", "1 tool", "2 tools"."""
    if n == 0:
        return f"no {noun}s"
    return f"1 {noun}" if n == 1 else f"{n:,} {noun}s"


SUMMARY = 76  # characters of a description's first line shown by %mcp list


def summary(description: str | None) -> str:
    """A description's first line, with an ellipsis where the rest was left out."""
    lines = (description or "").strip().splitlines()
    if not lines:
        return ""
    first = lines[0].strip()
    if len(first) > SUMMARY:
        return first[: SUMMARY - 1].rstrip() + "\u2026"
    return first + (" \u2026" if len(lines) > 1 and any(x.strip() for x in lines[1:]) else "")


def words(line: str) -> list[str]:
    try:
        return commandline.split(line, comments=True)  # on Windows, backslashes in paths stay
    except ValueError as exc:  # an unclosed quote
        raise UsageError(f"%mcp: {exc}") from None
