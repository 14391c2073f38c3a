"""A bounded history of the calls clients made into user code."""

from __future__ import annotations

import itertools
import time
import traceback
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

_ids = itertools.count(1)


@dataclass(eq=False)
class CallRecord:
    method: str
    target: str
    arguments: dict[str, Any]
    client: str
    id: int = field(default_factory=lambda: next(_ids))
    started: float = field(default_factory=time.time)
    status: str = "running"
    result: Any = None
    error: BaseException | None = None
    traceback: str | None = None
    duration: float | None = None

    def finish(self, status: str, result: Any = None, error: BaseException | None = None) -> None:
        self.status, self.result, self.error = status, result, error
        self.duration = time.time() - self.started
        if error is not None:
            self.traceback = "".join(traceback.format_exception(error))

    def __repr__(self) -> str:
        return f"<Call #{self.id} {self.method} {self.target} {self.status}>"


class CallLog:
    """The last ``maxlen`` calls, oldest first."""

    def __init__(self, maxlen: int = 1000) -> None:
        self._records: deque[CallRecord] = deque(maxlen=maxlen)

    def add(self, record: CallRecord) -> CallRecord:
        self._records.append(record)
        return record

    def __iter__(self) -> Iterator[CallRecord]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> CallRecord:
        return list(self._records)[index]

    def __repr__(self) -> str:
        return f"<CallLog {len(self)} calls>"
