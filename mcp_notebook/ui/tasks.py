"""The monitor's task list: what clients poll for (status, progress, age, client), with a
Cancel button for the selected one.

Built and updated on the kernel's loop (the Hub refreshes it with the rest of a monitor);
the store (``protocol/tasks.py``) is read here, and changed only by :meth:`TaskView.cancel`.
Hidden while there are no tasks.
"""

from __future__ import annotations

import time
from typing import Any

import ipywidgets as widgets

from .render import NBSP, cut

COLUMNS = (("#", 5), ("status", 15), ("age", 7), ("client", 16), ("target", 30))


def header() -> str:
    return " ".join(t.ljust(w) for t, w in COLUMNS) + " progress"


def age(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def progress(task: Any) -> str:
    if task.progress is None:
        return task.message or ""
    done, total = task.progress
    shown = f"{done:g}/{total:g}" if total else f"{done:g}"
    return f"{shown} {task.message or ''}".strip()


def row(task: Any, now: float | None = None) -> str:
    """One line of the task table, padded into columns."""
    cells = (f"#{task.number}", task.status, age(task.age(now)), task.client, task.target)
    padded = [cut(str(c), w).ljust(w) for c, (_, w) in zip(cells, COLUMNS, strict=True)]
    return " ".join([*padded, progress(task)]).replace(" ", NBSP)


class TaskView(widgets.VBox):  # type: ignore[misc]  # ipywidgets has no types
    """The tasks of ``store``, newest first; select one and Cancel it."""

    def __init__(self, store: Any, rows: int = 5) -> None:
        self.store = store
        self._ids: list[str] = []
        self.heading = widgets.HTML(
            f"<b>tasks</b> (clients poll these)<pre class='mcp-mono'>{header()}</pre>"
        )
        self.table = widgets.Select(options=[], rows=rows, layout=widgets.Layout(width="100%"))
        self.table.add_class("mcp-task-table")  # not mcp-calls: that is the call table
        self.cancel_button = widgets.Button(
            description="Cancel task", disabled=True, button_style="warning"
        )
        self.cancel_button.on_click(lambda _: self.cancel())
        self.table.observe(self._on_value, "value")
        super().__init__([self.heading, self.table, self.cancel_button])
        self.add_class("mcp-tasks")

    def refresh(self) -> None:
        tasks = self.store.list()[::-1]
        now = time.time()
        options = tuple((row(t, now), t.id) for t in tasks)
        self.layout.display = None if tasks else "none"
        if options != tuple(self.table.options):
            selected = self.table.value
            with self.table.hold_sync():
                self.table.options = options
                self._ids = [t.id for t in tasks]
                self.table.value = selected if selected in self._ids else None
        self._on_value()

    def _selected(self) -> Any:
        task_id = self.table.value
        if task_id is None:
            return None
        return next((t for t in self.store.list() if t.id == task_id), None)

    def _on_value(self, change: dict[str, Any] | None = None) -> None:
        task = self._selected()
        self.cancel_button.disabled = task is None or task.done

    def cancel(self) -> bool:
        """Cancel the selected task (as a client's ``tasks/cancel`` would)."""
        task = self._selected()
        if task is None or task.done:
            return False
        changed = self.store.cancel(task, "cancelled from the notebook")
        self.refresh()
        return bool(changed)
