"""A 2025-11-25 task's hold on the requests its call sends the client.

The spec's tasks (basic/utilities/tasks) ask that a request the receiver sends while a
task needs input carries ``_meta["io.modelcontextprotocol/related-task"]`` naming the
task, and that the task be ``input_required`` until the answer is in. A call's requests
come from two places: its tool's ``Context`` and, before the tool runs, the confirmation
a headless server asks of the client's user (``confirmation.ask_client``). Both take the
same link, so questions that overlap count together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TaskLink:
    """Filled in when the task is stored (``TaskCalls._handshake_start``), before the
    call's work first runs."""

    task_id: str | None = None
    # Called with the task's new status ("input_required" or "working").
    moved: Callable[[str], None] | None = None
    _open: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def asking(self, waiting: bool) -> None:
        """A question went out (True) or was answered (False); any thread."""
        with self._lock:  # and while the move is applied: a later one never goes first
            self._open += 1 if waiting else -1
            status = "input_required" if self._open else "working"
            if self.moved is not None:
                self.moved(status)
