"""One lock for every change to the notebook's widgets, and who sent the message at hand.

The Hub re-renders monitors from a timer thread while a cell holds the kernel's loop
(ui/hub.py), and clicks are handled on that loop: a click's widget updates must not
interleave with a render. ``guard(lock, widget)`` makes the kernel handle each message a
front end sends to ``widget`` (a click, a selection, an edit: its state update and every
handler it triggers) while holding ``lock``, the lock renders hold; a re-entrant lock, so
that a handler may re-render. ``sender()`` tells which front end sent the message being
handled: the session id in its header, which is that front end's kernel connection.
``where_sent(comm)`` has the kernel handle a front end's messages on ``comm`` on the shell
or subshell the front end sent them to.
"""

from __future__ import annotations

import contextvars
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

_sender: contextvars.ContextVar[str | None] = contextvars.ContextVar("sender", default=None)


def guard(lock: Any, *widgets: Any) -> None:
    """Handle the front ends' messages to each of ``widgets`` under ``lock``."""
    for widget in widgets:
        where_sent(widget.comm)
        widget.comm.on_msg(_locked(lock, widget._handle_msg))


def where_sent(channel: Any) -> None:
    """Handle a front end's messages on ``channel`` where it sent them.

    ipykernel 7.4 sends a front end's comm message to the subshell the kernel last sent on
    that comm from (``_reply_subshell_for``: for a reply a kernel thread waits for). Ours
    are requests and clicks, and our sends come from the server's and timer threads, whose
    last parent may be any front end's message: on a subshell JupyterLab has since deleted
    (one per comm, gone when its comm closes), the kernel drops every later message on the
    comm, and an Approve is lost. The front end's own choice is always one it still has.
    """
    channel._reply_subshell_for = _as_sent


def _as_sent(_data: Any, sent_to: str | None) -> str | None:
    return sent_to


def _locked(lock: Any, handle: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    def handle_locked(msg: dict[str, Any]) -> None:
        token = _sender.set(session_of(msg))
        try:
            with lock:
                handle(msg)
        finally:
            _sender.reset(token)

    return handle_locked


def session_of(msg: Any) -> str | None:
    """The session id in a Jupyter message's header, if it has a readable one."""
    header = msg.get("header") if isinstance(msg, dict) else None
    session = header.get("session") if isinstance(header, dict) else None
    return session if isinstance(session, str) and session else None


def sender() -> str | None:
    """The session of the front end whose message to a guarded widget is being handled."""
    return _sender.get()


def keep_latest(comms: OrderedDict[str, Any], session: str, channel: Any, limit: int) -> None:
    """``channel`` becomes ``session``'s one comm (a reopened tab replaces its old one,
    which is closed), and at most ``limit`` are kept: the least recent closes first."""
    old = comms.pop(session, None)
    comms[session] = channel
    if old is not None and old is not channel:
        old.close()
    while len(comms) > limit:
        comms.popitem(last=False)[1].close()
