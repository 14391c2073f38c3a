"""A bounded history of the calls clients made into user code, with observers.

Observers (the notebook's monitor, for instance) hear every change of a call's status.
They are called on whichever thread made the change and must return quickly: a monitor
queues the change and renders it on its own schedule, never on the server's time.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)
_ids = itertools.count(1)

# queued -> (awaiting confirmation) -> running -> done | error | denied | cancelled
FINAL = frozenset({"done", "error", "denied", "cancelled"})

Observer = Callable[["CallRecord"], None]
# Status changes are check-then-set: one lock for all records keeps them atomic (cheap,
# as nothing holds it for long).
_TRANSITION = threading.Lock()


@dataclass(eq=False)
class CallRecord:
    method: str
    target: str
    arguments: dict[str, Any]
    client: str
    id: int = field(default_factory=lambda: next(_ids))
    started: float = field(default_factory=time.time)
    status: str = "queued"
    result: Any = None
    error: BaseException | None = None
    traceback: str | None = None
    duration: float | None = None
    # What the user function printed or displayed during this call (filled by the kernel).
    output: list[dict[str, Any]] = field(default_factory=list)
    log: CallLog | None = field(default=None, repr=False)

    def set_status(self, status: str) -> None:
        with _TRANSITION:
            if self.status in FINAL:
                return  # a finished call stays finished (a late approval cannot revive it)
            self.status = status
        self._changed()

    def finish(self, status: str, result: Any = None, error: BaseException | None = None) -> None:
        with _TRANSITION:  # the kernel thread and the server's may both try
            if self.status in FINAL:
                return
            self.status, self.result, self.error = status, result, error
        self.duration = time.time() - self.started
        if error is not None:
            self.traceback = "".join(traceback.format_exception(error))
        self._changed()

    def _changed(self) -> None:
        if self.log is not None:
            self.log.notify(self)

    def __repr__(self) -> str:
        return f"<Call #{self.id} {self.method} {self.target} {self.status}>"


class CallLog:
    """The last ``maxlen`` calls, oldest first."""

    def __init__(self, maxlen: int = 1000) -> None:
        self._records: deque[CallRecord] = deque(maxlen=maxlen)
        self._observers: list[Observer] = []
        self._lock = threading.Lock()

    @property
    def maxlen(self) -> int:
        return self._records.maxlen or 0

    @maxlen.setter
    def maxlen(self, value: int) -> None:
        self._records = deque(self._records, maxlen=value)

    def add(self, record: CallRecord) -> CallRecord:
        record.log = self
        self._records.append(record)
        self.notify(record)
        return record

    def subscribe(self, observer: Observer) -> Callable[[], None]:
        with self._lock:
            self._observers = [*self._observers, observer]

        def unsubscribe() -> None:
            with self._lock:
                self._observers = [o for o in self._observers if o is not observer]

        return unsubscribe

    def notify(self, record: CallRecord) -> None:
        for observer in self._observers:
            try:
                observer(record)
            except Exception:  # an observer's bug must not break a call
                logger.debug("call observer %r failed", observer, exc_info=True)

    def find(self, call_id: int) -> CallRecord | None:
        return next((r for r in reversed(self._records) if r.id == call_id), None)

    def __iter__(self) -> Iterator[CallRecord]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> CallRecord:
        return list(self._records)[index]

    def __repr__(self) -> str:
        return f"<CallLog {len(self)} calls>"
