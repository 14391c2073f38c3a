"""A pool of daemon threads that grows when every thread is busy with a slow call."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

from ..threads import start_thread

logger = logging.getLogger(__name__)

Job = tuple[Callable[..., Any], tuple[Any, ...]]


class Workers:
    """Runs jobs at once, however many are in flight (a slow tool holds up no other).

    Daemon threads, unlike ``concurrent.futures``: a call still running when stdin closes
    must not keep the bridge alive. Idle threads are reused.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._idle = 0
        self._busy = 0  # jobs submitted and not yet finished
        self._lock = threading.Condition()

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        with self._lock:
            if self._idle == 0:
                self._idle += 1
                start_thread(self._work, name=self.name)
            self._idle -= 1
            self._busy += 1
        self._jobs.put((fn, args))

    def settle(self, timeout: float) -> bool:
        """Wait until every job submitted so far has finished; False on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self._busy == 0, timeout)

    def _work(self) -> None:
        while True:
            fn, args = self._jobs.get()
            try:
                fn(*args)
            except Exception:
                logger.exception("%s: a job failed", self.name)
            finally:
                with self._lock:
                    self._idle += 1
                    self._busy -= 1
                    self._lock.notify_all()
