"""A call's status as a person reads it: an icon, a colour class and words."""

from __future__ import annotations

from ..protocol import CallRecord

# status -> (icon, class, words). Each distinct, by icon as well as colour; the icons are
# in the fonts front ends fall back to (DejaVu Sans, and the platforms' own).
LOOKS: dict[str, tuple[str, str, str]] = {
    "done": ("\u2714", "done", "done"),
    "error": ("\u2716", "error", "error"),
    "denied": ("\u2298", "denied", "denied"),
    "interrupted": ("\u25a0", "interrupted", "interrupted"),
    "cancelled": ("\u21b6", "cancelled", "cancelled"),
    "dropped: client gone": ("\u2297", "dropped", "dropped: client gone"),
    "paused": ("\u2016", "paused", "paused in the debugger"),
    "awaiting confirmation": ("\u26a0", "waiting", "waiting for approval"),
    "queued behind": ("\u25f7", "queued", "queued behind a cell"),
    "queued": ("\u25f7", "queued", "queued"),
    "running": ("\u25b6", "running", "running"),
}
OTHER = ("\u2022", "other", "")
FAILED = frozenset({"error", "denied", "interrupted", "cancelled", "dropped: client gone"})


def look(record: CallRecord) -> tuple[str, str, str]:
    """(icon, class, words) of ``record``'s status as a person reads it."""
    if record.paused:
        return LOOKS["paused"]
    if record.status == "queued" and record.behind:
        icon, css, _ = LOOKS["queued behind"]
        return icon, css, f"queued behind {record.behind}"
    return LOOKS.get(record.status, (*OTHER[:2], record.status))
