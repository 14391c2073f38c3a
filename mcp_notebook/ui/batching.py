"""Many changes, few messages: what changed is noted from any thread, and sent at most once
every ``interval`` seconds, as one batch.

The call log's observers run on the server's thread and the kernel's, once per status
change of every call; a front end must not get one message per change (200 calls a second
would be 600 messages). ``Batcher.note`` only adds to a set under a lock and, the first
time after a flush, schedules the next one; the flush takes the set and hands it to
``send``. Whatever the rate, ``send`` runs at most 1 / ``interval`` times a second.

Where the flush runs is the caller's ``schedule(delay, callback)``: on the kernel's loop, or
on a timer thread while a cell holds that loop, including a flush that was waiting on the
loop when the cell started (ui/later.py; the monitors' renders go the same way).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Any

Schedule = Callable[[float, Callable[[], None]], Any]


class Batcher:
    """Collects keys (call ids, "state", ...) and sends them in batches; ``send(keys)``
    returns the keys it could not send this time (a bound on a message's size), which go
    out with the next batch."""

    def __init__(
        self,
        send: Callable[[set[Hashable]], set[Hashable]],
        schedule: Schedule,
        interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send, self._schedule = send, schedule
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()  # the set and the armed flag
        self._flushing = threading.Lock()  # one flush at a time, whichever thread
        self._keys: set[Hashable] = set()
        self._armed = False
        self._last = -interval  # the first batch leaves at once

    def note(self, key: Hashable) -> None:
        """``key`` changed (any thread, cheap: nothing is sent from here)."""
        with self._lock:
            self._keys.add(key)
            if self._armed:
                return
            self._armed = True
        self._arm()

    def _arm(self) -> None:
        delay = max(0.0, self._last + self.interval - self._clock())
        try:
            self._schedule(delay, self.flush)
        except RuntimeError:  # the loop is closing: nothing will be sent any more
            with self._lock:
                self._armed = False

    def flush(self) -> None:
        """Send what changed since the last batch (normally called by the schedule)."""
        with self._flushing:
            with self._lock:
                keys, self._keys = self._keys, set()
            self._last = self._clock()
            left = self._send(keys) if keys else set()
            with self._lock:
                self._keys |= left
                again = bool(self._keys)
                self._armed = again
        if again:
            self._arm()

    def discard(self) -> None:
        """Forget what is waiting (nobody listens any more)."""
        with self._lock:
            self._keys.clear()
