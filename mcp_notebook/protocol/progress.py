"""One progress token's notifications, increasing whoever sends them.

The spec says a token's ``progress`` MUST increase with each notification. A tool call's
token has two senders: the server's own notices (``queueing.py``: waiting behind a running
cell, paused at a breakpoint), which carry no ``total``, and the tool's
``Context.report_progress``. What a client shows is the message, and the fraction
``progress / total`` when there is a total, so:

- a notice says a little more than the last value sent (:data:`STEP`, rounded to it), so
  notices stay near zero while the tool has said nothing;
- the tool's own values go out as they are while they exceed the last value sent (its
  "1 of 10" after a wait stays "1 of 10"). One that does not (its first "0 of 10" after a
  notice, its next step after a "paused" notice) is shifted up, with its total, by the
  least that makes it larger, to a :data:`STEP`; later values keep that shift. The
  fraction a client shows stays the tool's to about a thousandth, and still ends at 1.

All values are decided on the server's loop, where they are sent, so they leave in the
order they were decided. A request the stdio bridge held while the notebook started may
have heard the start's steps already: the bridge says how far they went
(``_meta["mcp-notebook/progressSent"]``) and the line starts there.
"""

from __future__ import annotations

import math

STEP = 0.001


class ProgressLine:
    """The last ``progress`` sent for one token, and the shift of the tool's own values."""

    __slots__ = ("_last", "_shift")

    def __init__(self, sent: float | None = None) -> None:
        self._last = sent  # what was already sent for the token elsewhere (the bridge)
        self._shift = 0.0

    def notice(self) -> float:
        """The ``progress`` of one of the server's own notices."""
        value = 0.0 if self._last is None else _above(self._last, round(self._last + STEP, 3))
        self._last = value
        return value

    def own(self, progress: float, total: float | None) -> tuple[float, float | None]:
        """The tool's ``progress`` and ``total`` as sent (shifted if they must be)."""
        value = progress + self._shift
        if self._last is not None and not value > self._last:  # NaN too
            self._shift = round(self._last - progress + STEP, 3)
            shifted = progress + self._shift
            value = _above(self._last, shifted)
            if value != shifted:  # past the resolution: the shift is what made it larger
                self._shift = value - progress
        self._last = value
        return value, None if total is None else total + self._shift


def _above(last: float, value: float) -> float:
    """``value``, or the next float above ``last`` where a step is below the resolution
    (past about 1e13 adding STEP changes nothing)."""
    return value if value > last else math.nextafter(last, math.inf)
