"""Confirmation widgets: Approve / Deny with the arguments as editable JSON.

One ``ConfirmPanel`` per pending call; the same widget is shown in every open monitor (or
in the ``PromptArea`` under the cell that started the server), so an edit in one view is
seen in all. Clicks arrive as comm messages on the kernel's loop, between cells; they only
settle the ``Decision`` -- the call itself waits on the server's loop.
"""

from __future__ import annotations

import html
import json
import threading
import time
from typing import Any

import ipywidgets as widgets

from . import render
from .decision import APPROVED, DENIED, Decision
from .guard import guard

_OUTCOMES = {
    APPROVED: "Approved: running it.",
    DENIED: "Denied: the client was told the user declined.",
}


class ConfirmPanel(widgets.VBox):  # type: ignore[misc]  # ipywidgets has no types
    """``lock``: the one the Hub's renders hold; clicks and edits are handled under it."""

    def __init__(self, decision: Decision, lock: Any = None) -> None:
        self.decision = decision
        tool = decision.tool
        hints, summary = render.asking(tool)
        about = html.escape(summary)
        self.title = widgets.HTML(
            f"{render.STYLE}<b>{html.escape(decision.client)}</b> asks to run "
            f"<b>{html.escape(tool.name)}</b> (call #{decision.id}"
            f"{', ' + ', '.join(hints) if hints else ''})"
            + (f"<br><i>{about}</i>" if about else "")
        )
        text = render.pretty(decision.arguments)
        self.editor = widgets.Textarea(
            value=text,
            rows=min(max(text.count("\n") + 1, 2), 14),
            layout=widgets.Layout(width="100%"),
        )
        self.editor.add_class("mcp-mono")
        self.approve = widgets.Button(description="Approve", button_style="success", icon="check")
        self.deny = widgets.Button(description="Deny", button_style="danger", icon="times")
        deadline = time.strftime("%H:%M:%S", time.localtime(decision.deadline))
        self.note = widgets.HTML(
            f"Edit the arguments if needed. Unanswered, it is denied at {deadline}."
        )
        self.approve.on_click(self._on_approve)
        self.deny.on_click(self._on_deny)
        guard(lock if lock is not None else threading.RLock(), self.approve, self.deny, self.editor)
        super().__init__(
            [self.title, self.editor, widgets.HBox([self.approve, self.deny, self.note])]
        )
        self.add_class("mcp-confirm")
        self.add_class(f"mcp-call-{decision.id}")

    def _on_approve(self, _: Any = None) -> None:
        try:
            arguments = json.loads(self.editor.value)
        except ValueError as exc:
            self._say(f"Not valid JSON: {exc}", error=True)
            return
        if not isinstance(arguments, dict):
            self._say("The arguments must be a JSON object.", error=True)
            return
        problem = self.decision.tool.argument_error(arguments)
        if problem is not None:
            self._say(problem, error=True)  # still pending: fix it, or deny
            return
        if not self.decision.settle(APPROVED, arguments):
            self._too_late()

    def _on_deny(self, _: Any = None) -> None:
        if not self.decision.settle(DENIED, reason="denied in the notebook"):
            self._too_late()

    def _too_late(self) -> None:
        self._say(f"Too late: this call was already {self.decision.state}.", error=True)

    def _say(self, text: str, error: bool = False) -> None:
        style = " class='mcp-error'" if error else ""
        self.note.value = f"<span{style}>{html.escape(text, quote=False)}</span>"

    def __repr__(self) -> str:
        return f"<mcp confirmation for call #{self.decision.id}: {self.decision.state}>"

    def settled(self) -> None:
        """The decision is final: no more buttons (a late click is still refused)."""
        self.approve.disabled = self.deny.disabled = self.editor.disabled = True
        state = self.decision.state
        self._say(_OUTCOMES.get(state, f"{state.capitalize()}: {self.decision.reason}."))


class PromptArea(widgets.VBox):  # type: ignore[misc]  # ipywidgets has no types
    """Shown (empty) under the cell that starts the server; holds prompts while no monitor
    is open. An empty box takes no room."""

    children: tuple[Any, ...]  # VBox's trait (ipywidgets has no types): for mypy only

    def __init__(self) -> None:
        super().__init__([])
        self.add_class("mcp-prompts")

    def add(self, panel: ConfirmPanel) -> None:
        if panel not in self.children:
            self.children = (*self.children, panel)

    def discard(self, panel: ConfirmPanel) -> None:
        if panel in self.children:
            self.children = tuple(c for c in self.children if c is not panel)
