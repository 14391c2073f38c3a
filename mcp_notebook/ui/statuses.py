"""A call's status as a person reads it: an icon, a colour class and words."""

from __future__ import annotations

from ..protocol import CallRecord

# status -> (icon, class, words). Each distinct, by icon as well as colour.
LOOKS: dict[str, tuple[str, str, str]] = {
    "done": ("\u2714", "done", "done"),
    "error": ("\u2716", "error", "error"),
    "denied": ("\u26d4", "denied", "denied"),
    "interrupted": ("\u25a0", "interrupted", "interrupted"),
    "cancelled": ("\u21b6", "cancelled", "cancelled"),
    "paused": ("\u23f8", "paused", "paused in the debugger"),
    "awaiting confirmation": ("\u270b", "waiting", "waiting for approval"),
    "queued behind": ("\u29d7", "queued", "queued behind a cell"),
    "queued": ("\u29d7", "queued", "queued"),
    "running": ("\u25b6", "running", "running"),
}
OTHER = ("\u2022", "other", "")
FAILED = frozenset({"error", "denied", "interrupted", "cancelled"})


def look(record: CallRecord) -> tuple[str, str, str]:
    """(icon, class, words) of ``record``'s status as a person reads it."""
    if record.paused:
        return LOOKS["paused"]
    if record.status == "queued" and record.behind:
        icon, css, _ = LOOKS["queued behind"]
        return icon, css, f"queued behind {record.behind}"
    return LOOKS.get(record.status, (*OTHER[:2], record.status))
