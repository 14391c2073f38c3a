"""The monitor's "Insert as cell": a recorded call's code in a new cell below the current one.

A click reaches the kernel as a comm message, and no execute reply carries IPython's
``set_next_input`` then; nothing else a kernel sends makes JupyterLab 4 insert a cell. So
the click opens a comm on ``TARGET`` with ``{"code": ...}``, which mcp_notebook's
JupyterLab extension (js/labextension/) answers with ``{"inserted": true}`` (or
``{"inserted": false, "error": ...}``) before closing it. A front end without the
extension closes a comm on an unknown target without answering: the note says so, and the
code stays shown to copy. Nothing waits: the answer and the close are comm messages,
handled on the kernel's loop like the click.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import comm
import ipywidgets as widgets

TARGET = "mcp_notebook.cells"  # js/labextension/src/index.ts: TARGET
MAX_CODE = 4 * 1024 * 1024  # characters the extension accepts (index.ts: MAX_CODE)
LABEL = "Insert as cell"
ASKED = "<i>Asked the notebook to insert it…</i>"
INSERTED = "<i>Inserted below the current cell (not run yet).</i>"
NO_EXTENSION = (
    "<i class='mcp-error'>The notebook did not insert it: mcp_notebook's JupyterLab "
    "extension is not active in this front end (JupyterLab 4 and Notebook 7 load it when "
    "the package is installed where Jupyter runs; VS Code has none). Copy the code below, "
    "or run <code>mcp.calls.find({call}).to_cell()</code> in a cell.</i>"
)


class CellInsert(widgets.HBox):
    """The button and its note; ``show(code)`` sets what a click inserts (None: hidden).

    ``open_comm`` opens a comm as ``comm.create_comm`` does (tests pass a fake one)."""

    def __init__(self, open_comm: Callable[..., Any] | None = None) -> None:
        self._open = open_comm
        self._code: str | None = None
        self._call_id: int | None = None
        self.button = widgets.Button(
            description=LABEL,
            tooltip="A new cell below the current one, with this call's code (not run)",
            icon="plus",
            layout=widgets.Layout(width="auto", flex="0 0 auto"),  # the label whole
        )
        self.button.add_class("mcp-insert-cell")
        self.button.on_click(self._click)
        self.note = widgets.HTML()
        self.note.add_class("mcp-insert-note")
        super().__init__([self.button, self.note], layout=widgets.Layout(display="none"))

    def show(self, code: str | None, call_id: int | None = None) -> None:
        if (code, call_id) != (self._code, self._call_id):
            self.note.value = ""  # an answer about another call's code
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
        open_comm = self._open or comm.create_comm  # ipykernel sets comm.create_comm
        call = self._call_id
        answered = False

        def on_msg(msg: dict[str, Any]) -> None:
            nonlocal answered
            answered = True
            data = (msg.get("content") or {}).get("data")
            if isinstance(data, dict) and data.get("inserted") is True:
                self.note.value = INSERTED
            else:
                error = data.get("error") if isinstance(data, dict) else None
                self.note.value = (
                    "<i class='mcp-error'>The notebook did not insert it: "
                    f"{html.escape(str(error or 'no reason given'))}.</i>"
                )

        def on_close(_msg: Any) -> None:
            if not answered:
                self.note.value = NO_EXTENSION.format(call=call)

        self.note.value = ASKED
        channel = open_comm(target_name=TARGET, data={"code": code})
        channel.on_msg(on_msg)
        channel.on_close(on_close)
