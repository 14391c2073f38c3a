"""The MCP panel's feed: a comm from the kernel to every front end running mcp_notebook's
extension (js/labextension/src/feed.ts), with the server's state, its clients, what is
registered, the calls and the confirmations that wait.

A front end opens a comm to ``PANEL`` (when the kernel's hello asks who has the extension,
ui/frontends.py, or when it finds the target on connecting); the kernel answers with a
snapshot, then batched updates (ui/batching.py): at most 1 / ``INTERVAL`` messages a second
whatever the call rate, each of at most ``MAX_ROWS`` rows of a few hundred characters
(ui/panelrows.py). With no panel open, the observers return at once: the feed costs a call
nothing.

A front end sends requests ``{"request": n, "op": ...}``: ``decide`` (a confirmation,
through the same ``Decision`` the widgets settle: the first answer wins, a late one is told
it was decided), ``detail`` (one call whole, for the detail pane), ``pause`` (the next call
stops in the debugger) and ``snapshot``. Each request with a readable ``request`` number
gets exactly one answer, on the comm it came on; anything else is dropped. Nothing a front
end sends is kept beyond its panel (at most ``MAX_PANELS``) and its answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import comm

from ..errors import McpNotebookError
from ..protocol import CallRecord
from . import panelrows
from .batching import Batcher, Schedule
from .decision import APPROVED, CANCELLED, DENIED, EXPIRED, Decision
from .guard import keep_latest, session_of, where_sent

PANEL = "mcp_notebook.panel"  # the target a front end opens: js/labextension/src/feed.ts
INTERVAL = 0.1  # seconds between two updates: at most 10 messages a second
MAX_ROWS = 500  # calls in one message (a snapshot of 10,000 calls is 20 of them)
MAX_PANELS = 64  # front ends fed at once (a reloaded page is a new one)
MAX_REQUEST = 1024 * 1024  # characters of one request's JSON (edited arguments)
KEEP = 20_000  # calls whose timing and decision the feed remembers
TICK = 1.0  # seconds between looks at the server's state (clients come and go)
OPEN_LATER = 30.0  # seconds a %mcp monitor waits for its front end's feed to open
WHERE = {"notification", "panel", "status bar"}
OPS = {"decide", "detail", "pause", "snapshot"}


class Refused(McpNotebookError):
    """A request the feed cannot do; its message is the answer's error."""


class PanelFeed:
    """``state()`` is the Hub's (the server and its clients); ``schedule(delay, callback)``
    runs a callback later, where comms may be used; ``register`` is the comm manager's
    ``register_target`` (tests pass fakes)."""

    def __init__(
        self,
        *,
        app: Any,
        state: Callable[[], dict[str, Any]],
        schedule: Schedule,
        register: Callable[[str, Callable[[Any, dict[str, Any]], None]], None] | None = None,
        pauses: Any = None,
        cell_code: Callable[[CallRecord], str | None] | None = None,
    ) -> None:
        self.app, self._state, self._schedule = app, state, schedule
        self._pauses, self._cell_code = pauses, cell_code
        self._panels: OrderedDict[str, Any] = OrderedDict()  # session -> its comm
        self._wanted: OrderedDict[str, float] = OrderedDict()  # open_panel() came early
        self.pending: dict[int, Decision] = {}  # confirmations waiting, by call id
        self._decided: OrderedDict[int, str] = OrderedDict()  # call id -> who, where, when
        self._by: dict[int, str] = {}  # a decision this feed is making: where, by whom
        self._times: OrderedDict[int, dict[str, float]] = OrderedDict()
        self._lock = threading.Lock()  # the dicts above, from any thread
        self._last_state: dict[str, Any] | None = None
        self._ticking = False
        self.batcher = Batcher(self._flush, schedule, INTERVAL)
        if register is None:
            register = comm.get_comm_manager().register_target
        register(PANEL, self._opened)
        self._unsubscribe = app.registry.subscribe(self._registered)

    @property
    def sessions(self) -> list[str]:
        """The front ends fed, oldest first."""
        return list(self._panels)

    # -- what changed (any thread: keep it short) --------------------------------------------
    def call_changed(self, record: CallRecord) -> None:
        if not self._panels:
            return  # nobody looks: nothing to note
        step = panelrows.status_key(record)
        step = "final" if record.duration is not None else step
        with self._lock:
            times = self._times.get(record.id)
            if times is None:
                times = self._times[record.id] = {}
                while len(self._times) > KEEP:
                    self._times.popitem(last=False)
            times.setdefault("running" if step == "paused" else step, time.monotonic())
        self.batcher.note(record)  # a record is hashed by identity

    def state_changed(self) -> None:
        if self._panels:
            self.batcher.note("state")

    def _registered(self, _kind: Any = None, _detail: Any = None) -> None:
        if self._panels:
            self.batcher.note("registrations")

    def show(self, decision: Decision) -> None:
        """A confirmation waits (the server's thread): every panel and notification shows it."""
        with self._lock:
            self.pending[decision.id] = decision
        decision.listeners.append(self.settled)
        if self._panels:
            self.batcher.note("pending")

    def settled(self, decision: Decision) -> None:
        """It was decided, wherever: the panels say by whom and after how long."""
        waited = decision.timeout - decision.remaining()
        with self._lock:
            where = self._by.pop(decision.id, "in the notebook's monitor")
            self._decided[decision.id] = _decided(decision, where, waited)
            while len(self._decided) > KEEP:
                self._decided.popitem(last=False)
            # Last: a batch that no longer lists it as waiting has its row say who decided.
            self.pending.pop(decision.id, None)
        if self._panels:
            self.batcher.note("pending")
            self.batcher.note(decision.record)

    # -- sending ------------------------------------------------------------------------------
    def _send_all(self, message: dict[str, Any]) -> None:
        for channel in list(self._panels.values()):
            channel.send(message)

    def _row(self, record: CallRecord) -> dict[str, Any]:
        return panelrows.row(record, self._decided.get(record.id))

    def _flush(self, keys: set[Hashable]) -> set[Hashable]:
        if not self._panels:
            return set()
        changed = sorted((k for k in keys if isinstance(k, CallRecord)), key=_id)
        # The newest go now, the rest with the next message.
        records, left = changed[-MAX_ROWS:], set[Hashable](changed[:-MAX_ROWS])
        # What waits is read before the rows are made: one no longer waiting has its row
        # say who decided (settled() writes that first).
        waiting = self._pending_now() if "pending" in keys else None
        message: dict[str, Any] = {"kind": "update", "calls": [self._row(r) for r in records]}
        if "state" in keys:
            state = self._server_state()
            if state != self._last_state:
                message["state"] = self._last_state = state
        if "registrations" in keys:
            message["registrations"] = panelrows.registrations(self.app.registry)
        if waiting is not None:
            message["pending"] = waiting
        if len(message) > 2 or message["calls"]:
            self._send_all(message)
        return left

    def _server_state(self) -> dict[str, Any]:
        return panelrows.state(self._state(), self.app.token, bool(self.app.running))

    def _pending_now(self) -> list[dict[str, Any]]:
        with self._lock:
            waiting = list(self.pending.values())  # until settled() has said who decided
        return [panelrows.pending(d) for d in waiting]

    def _snapshot(self, channel: Any) -> None:
        waiting = self._pending_now()  # first, as in _flush
        rows = [self._row(r) for r in self.app.calls]
        chunks = [rows[i : i + MAX_ROWS] for i in range(0, len(rows), MAX_ROWS)] or [[]]
        channel.send(
            {
                "kind": "snapshot",
                "state": self._server_state(),
                "registrations": panelrows.registrations(self.app.registry),
                "pending": waiting,
                "calls": chunks[0],
                "more": len(chunks) - 1,
            }
        )
        for chunk in chunks[1:]:
            channel.send({"kind": "calls", "calls": chunk})

    def _tick(self) -> None:
        if not self._panels:
            self._ticking = False
            return
        self.batcher.note("state")
        self._schedule(TICK, self._tick)

    def open_panel(self, session: str | None) -> bool:
        """Ask the front end ``session`` (the one that ran the cell) to show its panel;
        False if it has no panel feed open yet. Then it is asked when its feed opens within
        ``OPEN_LATER`` seconds: with Run All, the cell runs before the page has answered
        the hello of ``%load_ext`` (its comm opens after the cells queued before it)."""
        if not session:
            return False
        channel = self._panels.get(session)
        if channel is None:
            self._wanted.pop(session, None)
            self._wanted[session] = time.monotonic() + OPEN_LATER
            while len(self._wanted) > MAX_PANELS:
                self._wanted.popitem(last=False)
            return False
        channel.send({"kind": "open"})
        return True

    def close(self) -> None:
        self._unsubscribe()
        for channel in list(self._panels.values()):
            channel.close()
        self._panels.clear()
        self.batcher.discard()

    # -- the front ends (comm messages, on the kernel's loop) --------------------------------
    def _opened(self, channel: Any, msg: dict[str, Any]) -> None:
        session = session_of(msg)
        if session is None:
            channel.close()  # nothing to tell it apart by
            return
        keep_latest(self._panels, session, channel, MAX_PANELS)
        where_sent(channel)
        channel.on_msg(lambda m: self._received(session, channel, m))
        channel.on_close(lambda _m: self._gone(session, channel))
        self._snapshot(channel)
        if self._wanted.pop(session, 0.0) > time.monotonic():
            channel.send({"kind": "open"})  # %mcp monitor ran there before it opened
        if not self._ticking:
            self._ticking = True
            self._schedule(TICK, self._tick)

    def _gone(self, session: str, channel: Any) -> None:
        if self._panels.get(session) is channel:
            del self._panels[session]

    def _received(self, session: str, channel: Any, msg: Any) -> None:
        content = msg.get("content") if isinstance(msg, dict) else None
        data = content.get("data") if isinstance(content, dict) else None
        if not isinstance(data, dict):
            return
        number = data.get("request")
        if isinstance(number, bool) or not isinstance(number, int):
            return  # no readable id: nothing to answer
        try:
            answer = self._answer(session, channel, data)
        except Refused as refused:
            answer = {"ok": False, "error": str(refused)}
        except Exception as exc:  # a bug here must not become a kernel error
            answer = {"ok": False, "error": f"the kernel could not do it: {type(exc).__name__}"}
        channel.send({"kind": "answer", "request": number, **answer})

    def _answer(self, session: str, channel: Any, data: dict[str, Any]) -> dict[str, Any]:
        try:
            size = len(json.dumps(data))
        except (TypeError, ValueError) as exc:
            raise Refused("the request is not JSON") from exc
        if size > MAX_REQUEST:
            raise Refused(f"the request is longer than {MAX_REQUEST} characters")
        op = data.get("op")
        if not isinstance(op, str) or op not in OPS:
            raise Refused(f'"op" must be one of {", ".join(sorted(OPS))}')
        if op == "snapshot":
            self._snapshot(channel)
            return {"ok": True}
        if op == "pause":
            on = data.get("on")
            if not isinstance(on, bool) or self._pauses is None:
                raise Refused('"on" must be true or false, in a kernel with the extension')
            self._pauses.next_call = on
            # "listening": whether a debugger would see the pause (none: calls run on).
            return {"ok": True, "on": self._pauses.next_call, "listening": self._pauses.listening}
        call = data.get("call")
        if isinstance(call, bool) or not isinstance(call, int):
            raise Refused('"call" must be a call number')
        if op == "detail":
            return {"ok": True, "detail": self._detail(call)}
        return self._decide(call, data)

    def _detail(self, call: int) -> dict[str, Any]:
        record = self.app.calls.find(call)
        if record is None:
            raise Refused(f"call #{call} is no longer in the history")
        with self._lock:
            times = dict(self._times.get(call, {}))
            decided = self._decided.get(call)
        code = None
        if self._cell_code is not None and record.method == "tools/call":
            try:
                code = self._cell_code(record)
            except Exception:  # the tool is gone, or its arguments were cut
                code = None
        found = panelrows.detail(record, times, code)
        found["row"]["decided"] = decided
        return found

    def _decide(self, call: int, data: dict[str, Any]) -> dict[str, Any]:
        approve, where, who = data.get("approve"), data.get("where"), data.get("who")
        if not isinstance(approve, bool):
            raise Refused('"approve" must be true or false')
        if where not in WHERE:
            raise Refused(f'"where" must be one of {", ".join(sorted(WHERE))}')
        if who is not None and (not isinstance(who, str) or len(who) > 64):
            raise Refused('"who" must be a name of at most 64 characters')
        with self._lock:
            decision = self.pending.get(call)
            settled = self._decided.get(call)
        if decision is None:
            if settled is not None:
                return {"ok": False, "decided": settled, "error": f"already {settled}"}
            raise Refused(f"call #{call} waits for no confirmation")
        arguments = data.get("arguments")
        if approve:
            if arguments is not None:
                if not isinstance(arguments, dict):
                    raise Refused("the arguments must be a JSON object")
                problem = decision.tool.argument_error(arguments)
                if problem is not None:
                    raise Refused(problem)  # still pending: fix it, or deny
        elif arguments is not None:
            raise Refused("a denial takes no arguments")
        by = f"in the {where}" + (f" by {who}" if who else "")
        with self._lock:
            self._by.setdefault(call, by)
        state, reason = (APPROVED, None) if approve else (DENIED, f"denied {by}")
        if not decision.settle(state, arguments if approve else None, reason=reason):
            with self._lock:
                if self._by.get(call) == by:
                    self._by.pop(call, None)
                settled = self._decided.get(call) or decision.state
            return {"ok": False, "decided": settled, "error": f"already {settled}"}
        return {"ok": True, "decided": self._decided.get(call)}


def _id(record: CallRecord) -> int:
    return record.id


def _decided(decision: Decision, where: str, waited: float) -> str:
    after = f"after {waited:.1f} s"
    if decision.state == APPROVED:
        return f"approved {where} {after}"
    if decision.state == DENIED:
        return f"denied {where} {after}"
    if decision.state == EXPIRED:
        return f"timed out {after}: nobody answered"
    if decision.state == CANCELLED:
        return f"cancelled by the client {after}"
    return f"{decision.state} {after}"
