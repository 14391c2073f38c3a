"""The front ends on this kernel that run mcp_notebook's JupyterLab extension, and asking the
one a click came from to insert a cell (the monitor's "Insert as cell", ui/cellinsert.py).

Several front ends may share a kernel (two browser tabs, JupyterLab and VS Code), and all
of them see a comm the kernel opens; one without the extension closes it at once, and the
kernel's comm manager forgets a comm at its first close, so an answer on a comm the kernel
opened could be lost to another front end's close. So the kernel's comm (``HELLO``) only
asks "who has the extension?": each front end with it opens a comm of its own to the
kernel (``TARGET``), which no other front end knows of, and requests and answers travel
on that one. Front ends are told apart by the session id in their messages' headers (their
kernel connection): a click is answered by the front end it came from, never by another
tab that would insert a second copy.

A click from a front end not heard from yet sends a hello first. Its answer tells: the
front end announces itself (then gets the request), or closes the hello without announcing
(it has no extension), or says nothing within ``WAIT`` seconds (another front end closed
the hello first, or none is listening). Everything runs on the kernel's loop (comm
messages, clicks, ``later``); outcomes go to the caller's ``done``.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import comm

from ..threads import start_timer
from .guard import keep_latest, session_of

HELLO = "mcp_notebook.cells"  # the kernel opens it: js/labextension/src/index.ts HELLO
TARGET = "mcp_notebook.frontend"  # a front end opens it to the kernel: index.ts TARGET
WAIT = 10.0  # seconds a request waits for its answer
MAX_FRONTENDS = 64  # announced front ends remembered (a reloaded page is a new one)
MAX_PENDING = 64  # requests awaiting an answer, and hellos open (a front end may click on)

INSERTED, REFUSED, NO_EXTENSION, NO_ANSWER = "inserted", "refused", "no extension", "no answer"

Later = Callable[[float, Callable[[], None]], Any]  # as loop.call_later; the handle cancels


@dataclass(frozen=True)
class Outcome:
    state: str  # INSERTED, REFUSED, NO_EXTENSION or NO_ANSWER
    error: str | None = None  # REFUSED: the front end's reason


@dataclass(eq=False)
class _Request:
    id: int
    session: str | None  # the front end asked (None: the one that announces itself first)
    code: str
    done: Callable[[Outcome], None]
    timer: Any = None
    sent_to: str | None = None
    finished: bool = field(default=False)


class Frontends:
    """One kernel's registry; ``shared()`` gives the process's own. ``open_comm`` and
    ``register`` are ``comm.create_comm`` and the comm manager's ``register_target``
    (tests pass fakes); ``later(seconds, callback)`` schedules on the kernel's loop."""

    def __init__(
        self,
        open_comm: Callable[..., Any] | None = None,
        register: Callable[[str, Callable[[Any, dict[str, Any]], None]], None] | None = None,
        later: Later | None = None,
    ) -> None:
        self._open = open_comm
        self._later = later
        self.token = secrets.token_hex(8)  # a front end re-announces to a new registry
        self._comms: OrderedDict[str, Any] = OrderedDict()  # session -> its comm
        self._requests: dict[int, _Request] = {}  # oldest first
        self._hellos: OrderedDict[int, Any] = OrderedDict()  # open, oldest first
        self._ids = itertools.count(1)
        if register is None:
            register = comm.get_comm_manager().register_target  # ipykernel's manager
        register(TARGET, self._announced)

    @property
    def sessions(self) -> list[str]:
        """The front ends that announced the extension, oldest first."""
        return list(self._comms)

    # -- the kernel asks --------------------------------------------------------------------
    def hello(self) -> None:
        """Ask every front end with the extension to announce itself."""
        open_comm = self._open or comm.create_comm  # ipykernel sets comm.create_comm
        channel = open_comm(target_name=HELLO, data={"hello": self.token})
        channel.on_close(lambda msg: self._hello_closed(channel, msg))
        # A front end that never closes it (one without comms, a hostile one) would leave
        # it in the comm manager for ever: the kernel closes it once answers are due, and
        # keeps at most MAX_PENDING open.
        key = id(channel)
        self._hellos[key] = channel
        while len(self._hellos) > MAX_PENDING:
            self._hellos.popitem(last=False)[1].close()
        self._schedule(WAIT, lambda: self._close_hello(key, channel))

    def _close_hello(self, key: int, channel: Any) -> None:
        if self._hellos.get(key) is channel:
            del self._hellos[key]
        channel.close()  # a no-op if a front end closed it first

    def ask(self, session: str | None, code: str, done: Callable[[Outcome], None]) -> None:
        """Ask the front end ``session`` (None: any one) to insert ``code`` below the
        current cell; ``done(outcome)`` runs once, when it is known."""
        while len(self._requests) >= MAX_PENDING:  # clicks faster than answers come
            self._finish(next(iter(self._requests.values())), Outcome(NO_ANSWER))
        request = _Request(next(self._ids), session, code, done)
        self._requests[request.id] = request
        request.timer = self._schedule(WAIT, lambda: self._finish(request, Outcome(NO_ANSWER)))
        target = session if session is not None else next(reversed(self._comms), None)
        if target is not None and target in self._comms:
            self._send(request, target)
        else:
            self.hello()  # answered by an announcement, or by a close without one

    def _schedule(self, seconds: float, callback: Callable[[], None]) -> Any:
        if self._later is not None:
            return self._later(seconds, callback)
        try:
            return asyncio.get_running_loop().call_later(seconds, callback)
        except RuntimeError:  # no loop runs here (a script): a thread keeps the time
            return start_timer(seconds, callback)

    def _send(self, request: _Request, session: str) -> None:
        request.sent_to = session
        self._comms[session].send({"request": request.id, "code": request.code})

    def _finish(self, request: _Request, outcome: Outcome) -> None:
        if request.finished:
            return
        request.finished = True
        self._requests.pop(request.id, None)
        if request.timer is not None:
            request.timer.cancel()
        request.done(outcome)

    # -- the front ends answer (comm messages, on the kernel's loop) -------------------------
    def _announced(self, channel: Any, msg: dict[str, Any]) -> None:
        session = session_of(msg)
        if session is None:
            channel.close()  # nothing to tell it apart by
            return
        keep_latest(self._comms, session, channel, MAX_FRONTENDS)
        channel.on_msg(lambda m: self._answered(session, m))
        channel.on_close(lambda _m: self._gone(session, channel))
        for request in list(self._requests.values()):
            if request.sent_to is None and request.session in (session, None):
                self._send(request, session)

    def _hello_closed(self, channel: Any, msg: dict[str, Any]) -> None:
        # The first close only (the comm manager forgets the comm then). A front end with
        # the extension announces before it closes the hello, on the same channel: a close
        # from one that has not announced means it has no extension.
        if self._hellos.get(id(channel)) is channel:
            del self._hellos[id(channel)]
        closer = session_of(msg)
        if closer is None or closer in self._comms:
            return
        for request in list(self._requests.values()):
            if request.sent_to is None and request.session == closer:
                self._finish(request, Outcome(NO_EXTENSION))

    def _answered(self, session: str, msg: dict[str, Any]) -> None:
        data = (msg.get("content") or {}).get("data")
        if not isinstance(data, dict):
            return
        number = data.get("request")
        if isinstance(number, bool) or not isinstance(number, int):  # JSON true is no id
            return
        request = self._requests.get(number)
        if request is None or request.sent_to != session:
            return  # late (already timed out), or not this front end's to answer
        if data.get("inserted") is True:
            self._finish(request, Outcome(INSERTED))
        else:
            error = data.get("error")
            self._finish(request, Outcome(REFUSED, str(error) if error else None))

    def _gone(self, session: str, channel: Any) -> None:
        if self._comms.get(session) is channel:
            del self._comms[session]
        for request in list(self._requests.values()):
            if request.sent_to == session:
                self._finish(request, Outcome(NO_ANSWER))


_shared: Frontends | None = None
_shared_lock = threading.Lock()


def shared(later: Later | None = None) -> Frontends:
    """This process's registry (one comm target per kernel), made on first use; ``later``
    (the kernel's loop's) replaces the one it had."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Frontends(later=later)
        elif later is not None:
            _shared._later = later
        return _shared
