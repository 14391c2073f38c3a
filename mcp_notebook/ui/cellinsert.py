"""The monitor's "Insert as cell": a recorded call's code in a new cell below the current one.

A click reaches the kernel as a comm message, and no execute reply carries IPython's
``set_next_input`` then; nothing else a kernel sends makes JupyterLab 4 or Notebook 7
insert a cell. So mcp_notebook's extension (js/labextension/) does it, asked over a comm
by the kernel (ui/frontends.py): the front end the click came from is asked, and only it,
so a second tab or VS Code on the same kernel neither inserts a second copy nor hides the
answer. Without the extension there, the note says so and the code stays shown to copy.
Nothing waits: answers are comm messages, handled on the kernel's loop like the click.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

from . import frontends as fronts
from .guard import guard, sender

MAX_CODE = 4 * 1024 * 1024  # characters the extension accepts (index.ts: MAX_CODE)
LABEL = "Insert as cell"
ASKED = "<i>Asked the notebook to insert it…</i>"
INSERTED = "<i>Inserted below the current cell (not run yet).</i>"
_COPY = "Copy the code below, or run <code>mcp.calls.find({call}).to_cell()</code> in a cell.</i>"
NO_EXTENSION = (
    "<i class='mcp-error'>The notebook did not insert it: mcp_notebook's JupyterLab "
    "extension is not active in the front end you clicked in (JupyterLab 4 and Notebook 7 "
    "load it when the package is installed where Jupyter runs; VS Code has none). " + _COPY
)
NO_ANSWER = (
    "<i class='mcp-error'>No answer from the front end you clicked in within {wait:g} s: "
    "mcp_notebook's JupyterLab extension is not active there, it seems (JupyterLab 4 and "
    "Notebook 7 load it when the package is installed where Jupyter runs; VS Code has "
    "none). " + _COPY
)


class CellInsert(widgets.HBox):  # type: ignore[misc]  # ipywidgets has no types
    """The button and its note; ``show(code)`` sets what a click inserts (None: hidden).

    ``frontends`` asks the front ends (default: the kernel's own registry, made at the
    first click); ``lock`` is the one that renders hold (ui/guard.py)."""

    def __init__(
        self,
        frontends: fronts.Frontends | Callable[[], fronts.Frontends] | None = None,
        lock: Any = None,
    ) -> None:
        self._frontends = frontends
        self._lock = lock if lock is not None else threading.RLock()
        self._code: str | None = None
        self._call_id: int | None = None
        self._asked = 0  # the latest click: an earlier one's answer no longer shows
        self.button = widgets.Button(
            description=LABEL,
            tooltip="A new cell below the current one, with this call's code (not run)",
            icon="plus",
            layout=widgets.Layout(width="auto", flex="0 0 auto"),  # the label whole
        )
        self.button.add_class("mcp-insert-cell")
        self.button.on_click(self._click)
        guard(self._lock, self.button)  # and sender() tells who clicked
        self.note = widgets.HTML()
        self.note.add_class("mcp-insert-note")
        super().__init__([self.button, self.note], layout=widgets.Layout(display="none"))

    def _registry(self) -> fronts.Frontends:
        given = self._frontends
        if isinstance(given, fronts.Frontends):
            return given
        self._frontends = given() if given is not None else fronts.shared()
        return self._frontends

    def show(self, code: str | None, call_id: int | None = None) -> None:
        with self._lock:
            if (code, call_id) != (self._code, self._call_id):
                self.note.value = ""  # an answer about another call's code
                self._asked += 1  # and none will show
            self._code, self._call_id = code, call_id
            self.layout.display = None if code is not None else "none"

    def _click(self, _button: Any = None) -> None:
        code = self._code
        if code is None:
            return
        if len(code) > MAX_CODE:
            self.note.value = (
                f"<i class='mcp-error'>Too long to insert ({len(code)} characters, at most "
                f"{MAX_CODE}): copy it below.</i>"
            )
            return
        self._asked += 1
        asked, call = self._asked, self._call_id
        self.note.value = ASKED

        def done(outcome: fronts.Outcome) -> None:
            with self._lock:
                if asked == self._asked:
                    self.note.value = _note(outcome, call)

        self._registry().ask(sender(), code, done)


def _note(outcome: fronts.Outcome, call: int | None) -> str:
    if outcome.state == fronts.INSERTED:
        return INSERTED
    if outcome.state == fronts.NO_EXTENSION:
        return NO_EXTENSION.format(call=call)
    if outcome.state == fronts.NO_ANSWER:
        return NO_ANSWER.format(call=call, wait=fronts.WAIT)
    reason = html.escape(outcome.error or "no reason given")
    return f"<i class='mcp-error'>The notebook did not insert it: {reason}.</i>"
