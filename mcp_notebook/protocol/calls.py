"""A bounded history of the calls clients made into user code, with observers.

Observers (the notebook's monitor, for instance) hear every change of a call's status.
They are called on whichever thread made the change and must return quickly: a monitor
queues the change and renders it on its own schedule, never on the server's time.

The history is bounded twice: by a number of calls (``maxlen``) and by the bytes the calls
hold (``max_bytes``, estimated as Python memory, see :mod:`.abbreviate`); the oldest calls
go first. Each call keeps its arguments, result and output whole up to ``max_call_bytes``
each, and an abbreviated copy beyond it (``record.abbreviated`` names what was cut), made
once, when the call ends, on the thread that ends it (the kernel's, for a call that ran). A
call that ended without running (invalid arguments, denied, cancelled while it waited)
keeps only ``REJECTED_BYTES`` of its arguments and error message: what a client sends must
not pile up in the notebook's memory. The exceptions of the last ``DEBUGGABLE`` failed calls
keep their frames for ``%mcp debug``; older ones keep the traceback's text only.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ..errors import McpNotebookError
from .abbreviate import abbreviate, estimate
from .caller import Caller
from .kinds import DROPPED, FINAL_STATUSES, CallStatus, FinalStatus
from .shortened import message_of, short_error, short_output, without_frames
from .tracebacks import CodeName, user_traceback

logger = logging.getLogger(__name__)
_ids = itertools.count(1)

# queued -> (awaiting confirmation) -> running -> done | error | denied | cancelled | interrupted
# queued -> dropped: client gone (it never ran: see drop)
FINAL = FINAL_STATUSES
MIB = 1024 * 1024
MAX_BYTES = 64 * MIB  # the whole history
MAX_CALL_BYTES = 1 * MIB  # each of a call's arguments, result and output
REJECTED_BYTES = 1024  # the arguments and error message of a call that never ran
# Failed calls whose exception keeps its frames (and their locals) for %mcp debug; older
# ones keep the traceback's text only: frames hold memory that no estimate sees.
DEBUGGABLE = 10
_RECORD_BYTES = 256  # what a record costs beyond its payloads, roughly

Observer = Callable[["CallRecord"], None]
# Status changes are check-then-set: one lock for all records keeps them atomic (cheap,
# as nothing holds it for long).
_TRANSITION = threading.Lock()


class Interrupted(McpNotebookError):
    """The person at the notebook interrupted the call (Jupyter's Interrupt button)."""

    def __init__(self, message: str = "interrupted from the notebook (Kernel > Interrupt)"):
        super().__init__(message)


@dataclass(eq=False)
class CallRecord:
    method: str
    target: str
    arguments: dict[str, Any]
    client: str
    id: int = field(default_factory=lambda: next(_ids))
    # Two clocks: ``started`` is wall time, shown to people; the duration comes from
    # perf_counter, which never steps back and is fine-grained on Windows too (its
    # time.time() ticks every ~15.6 ms before Python 3.13).
    started: float = field(default_factory=time.time)
    _clock: float = field(default_factory=time.perf_counter, repr=False)
    status: CallStatus = "queued"
    result: Any = None
    error: BaseException | None = None
    traceback: str | None = None
    duration: float | None = None
    # What the user function printed or displayed during this call (filled by the kernel).
    output: list[dict[str, Any]] = field(default_factory=list)
    log: CallLog | None = field(default=None, repr=False)
    # Which of arguments, result, output, error the history keeps only abbreviated.
    abbreviated: frozenset[str] = frozenset()
    # What the call waited for while queued, e.g. "cell [7]" (a running cell held the
    # kernel); None if it did not wait behind one (.queueing).
    behind: str | None = None
    # In the kernel's debugger at a breakpoint %mcp break put there (kernel/breaks.py).
    paused: bool = False
    # Who is asked to approve it while "awaiting confirmation": "notebook" (a person at
    # the notebook's front end) or "client" (headless: the client's user, by elicitation).
    approver: str | None = None
    size: int = 0  # bytes the history counts for this call (an estimate)
    # The dispatcher tool the client called to reach this one (protocol/dispatcher_tools.py).
    via: str | None = None
    # The MCP Apps view (its ui:// URI) this call came from, through the host.
    view: str | None = None
    # Who called, with OAuth on: subject, client id, scopes (never the token).
    caller: Caller | None = None
    _arguments_size: int = field(default=0, repr=False)
    # How a call becomes a cell: set by the kernel extension (kernel/cellcode.py).
    cell_maker: ClassVar[Callable[[CallRecord], str] | None] = None
    # The code of that cell, without inserting it (the monitor shows it: ui/render.py).
    cell_coder: ClassVar[Callable[[CallRecord], str] | None] = None
    # How a traceback names a cell's file ("Cell In[5]"): set by the kernel extension.
    code_name: ClassVar[CodeName | None] = None

    def to_cell(self) -> str:
        """Put a new cell below the current one that calls the tool as this call did,
        with the arguments it received; return the cell's code."""
        if CallRecord.cell_maker is None:
            raise McpNotebookError(
                "call.to_cell() needs the kernel extension: %load_ext mcp_notebook"
            )
        return CallRecord.cell_maker(self)

    def set_status(self, status: CallStatus) -> bool:
        """Move on to ``status``; False (and no change) if the call ended already."""
        with _TRANSITION:
            if self.status in FINAL:
                return False  # a finished call stays finished (a late approval cannot revive it)
            self.status = status
        self._changed()
        return True

    def drop(self) -> bool:
        """End a call that is still queued without running it (its client hung up and
        nothing can receive its reply); False if it started or ended meanwhile."""
        return self.finish(DROPPED, only_from="queued")

    def finish(
        self,
        status: FinalStatus,
        result: Any = None,
        error: BaseException | None = None,
        only_from: CallStatus | None = None,
    ) -> bool:
        """End the call (``only_from``: if it is in that status); False if it ended already."""
        with _TRANSITION:  # the kernel thread and the server's may both try
            if self.status in FINAL or (only_from is not None and self.status != only_from):
                return False
            ran = self.status == "running"
            if isinstance(error, (Interrupted, KeyboardInterrupt)):
                status = "interrupted"
            self.status, self.result, self.error = status, result, error
        self.duration = time.perf_counter() - self._clock
        log = self.log
        if log is not None:
            log._settle(self, ran)
        elif error is not None:
            self.traceback = user_traceback(error, CallRecord.code_name)
        self._changed()
        return True

    def update_arguments(self, arguments: dict[str, Any]) -> None:
        """Keep ``arguments`` (e.g. edited at a confirmation) under the history's rules."""
        log = self.log
        if log is None:
            self.arguments = arguments
        else:
            log._keep_arguments(self, arguments)

    def _changed(self) -> None:
        if self.log is not None:
            self.log.notify(self)

    def __repr__(self) -> str:
        cut = f" (abbreviated: {', '.join(sorted(self.abbreviated))})" if self.abbreviated else ""
        via = f" via {self.via}" if self.via else ""
        via += f" from {self.view}" if self.view else ""
        return f"<Call #{self.id} {self.method} {self.target}{via} {self.status}{cut}>"


class CallLog:
    """The last calls, oldest first, within ``maxlen`` calls and ``max_bytes`` bytes."""

    def __init__(
        self,
        maxlen: int = 1000,
        max_bytes: int = MAX_BYTES,
        max_call_bytes: int = MAX_CALL_BYTES,
    ) -> None:
        self._records: deque[CallRecord] = deque()
        self._observers: list[Observer] = []
        self._lock = threading.Lock()  # observers
        self._held = threading.Lock()  # the records and their byte count
        self._maxlen = _positive("maxlen", maxlen)
        self._max_bytes = _positive("max_bytes", max_bytes)
        self._max_call_bytes = _positive("max_call_bytes", max_call_bytes)
        self._bytes = 0
        self._debuggable: deque[CallRecord] = deque()

    # -- limits ----------------------------------------------------------------------------
    @property
    def maxlen(self) -> int:
        """How many calls the history keeps at most."""
        return self._maxlen

    @maxlen.setter
    def maxlen(self, value: int) -> None:
        self._maxlen = _positive("maxlen", value)
        self._trim()

    @property
    def max_bytes(self) -> int:
        """How many bytes (estimated as Python memory) all calls of the history hold at most."""
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        self._max_bytes = _positive("max_bytes", value)
        self._trim()

    @property
    def max_call_bytes(self) -> int:
        """Each of a call's arguments, result and output is abbreviated beyond this size
        (or beyond ``max_bytes`` / 4, if that is smaller); new calls only."""
        return self._max_call_bytes

    @max_call_bytes.setter
    def max_call_bytes(self, value: int) -> None:
        self._max_call_bytes = _positive("max_call_bytes", value)

    @property
    def bytes(self) -> int:
        """The estimated bytes the calls in the history hold now."""
        return self._bytes

    # -- records ---------------------------------------------------------------------------
    def add(self, record: CallRecord) -> CallRecord:
        record.log = self
        record.size = _RECORD_BYTES
        # Arguments are measured, and cut, once the call ended (``_settle``): until then the
        # request holds them whole anyway, and the server's thread, which adds calls, must
        # not spend its time on them.
        if record.status in FINAL:
            self._keep_arguments(record, record.arguments, count=False)
        with self._held:
            self._records.append(record)
            self._bytes += record.size
            self._trim_locked()
        self.notify(record)
        return record

    def _per_call(self) -> int:
        return min(self._max_call_bytes, self._max_bytes // 4)

    def _keep_arguments(self, record: CallRecord, arguments: Any, *, count: bool = True) -> None:
        if record.status not in FINAL:  # measured when it ends
            record.arguments = arguments
            return
        limit = REJECTED_BYTES  # arguments it did not run with
        size = estimate(arguments, limit)
        if size > limit:
            arguments = abbreviate(arguments, limit)
            size = estimate(arguments, 2 * limit)
            record.abbreviated = record.abbreviated | {"arguments"}
        elif record.abbreviated:
            record.abbreviated = record.abbreviated - {"arguments"}
        old, record._arguments_size = record._arguments_size, size
        record.arguments = arguments
        if count:
            self._recount(record, record.size - old + size)
        else:
            record.size += size

    def _settle(self, record: CallRecord, ran: bool) -> None:
        """A call ended: abbreviate what exceeds the limits, and count what it holds."""
        limit = self._per_call() if ran else REJECTED_BYTES
        cut = set(record.abbreviated) if record.abbreviated else set()
        size = _RECORD_BYTES
        arguments_size = estimate(record.arguments, limit)  # a call that never ran keeps less
        if arguments_size > limit:
            record.arguments = abbreviate(record.arguments, limit)
            arguments_size = estimate(record.arguments, 2 * limit)
            cut.add("arguments")
        else:
            cut.discard("arguments")
        record._arguments_size = arguments_size
        size += arguments_size
        error = record.error
        if error is not None:
            message = message_of(error)
            text = user_traceback(error, CallRecord.code_name)
            if len(text) > limit:
                text = abbreviate(text, limit)
            if len(message) > limit:
                # A short copy; one that ran keeps the frames, for %mcp debug.
                record.error = error = short_error(error, message, limit, ran)
                message = message_of(error)
                cut.add("error")
            record.traceback = text
            size += estimate(text, limit) + estimate(message, limit)
            if error.__traceback__ is not None:
                self._keep_frames(record)
        if record.result is not None:
            result_size = estimate(record.result, limit)
            if result_size > limit:
                record.result = abbreviate(record.result, limit)
                result_size = estimate(record.result, 2 * limit)
                cut.add("result")
            size += result_size
        if record.output:
            output_size = estimate(record.output, limit)
            if output_size > limit:
                record.output[:] = short_output(record.output, limit)
                output_size = estimate(record.output, 2 * limit)
                cut.add("output")
            size += output_size
        if cut or record.abbreviated:
            record.abbreviated = frozenset(cut)
        self._recount(record, size)

    def _keep_frames(self, record: CallRecord) -> None:
        with self._held:
            self._debuggable.append(record)
            old = self._debuggable.popleft() if len(self._debuggable) > DEBUGGABLE else None
        if old is not None and old.error is not None:
            old.error = without_frames(old.error)

    def _recount(self, record: CallRecord, size: int) -> None:
        with self._held:
            if record.log is self:  # still in the history (not dropped meanwhile)
                self._bytes += size - record.size
                record.size = size
                self._trim_locked()

    def _trim(self) -> None:
        with self._held:
            self._trim_locked()

    def _trim_locked(self) -> None:
        records = self._records
        # The newest call stays whatever its size: it is what someone is looking at.
        while len(records) > self._maxlen or (self._bytes > self._max_bytes and len(records) > 1):
            dropped = records.popleft()
            self._bytes -= dropped.size
            dropped.log = None

    def clear(self) -> None:
        """Forget every call."""
        with self._held:
            for record in self._records:
                record.log = None
            self._records.clear()
            self._debuggable.clear()
            self._bytes = 0

    # -- observers -------------------------------------------------------------------------
    def subscribe(self, observer: Observer) -> Callable[[], None]:
        with self._lock:
            self._observers = [*self._observers, observer]

        def unsubscribe() -> None:
            with self._lock:
                self._observers = [o for o in self._observers if o is not observer]

        return unsubscribe

    def notify(self, record: CallRecord) -> None:
        for observer in self._observers:
            try:
                observer(record)
            except Exception:  # an observer's bug must not break a call
                logger.debug("call observer %r failed", observer, exc_info=True)

    def to_pytest(
        self,
        path: str | os.PathLike[str],
        calls: Iterable[CallRecord] | None = None,
        *,
        notebook: str | None = None,
    ) -> list[str]:
        """Write a pytest file replaying ``calls`` (default: every call kept) against
        ``notebook`` served by ``mcp-notebook serve`` (or ``$MCP_REPLAY_COMMAND``, e.g. an
        export); returns why some calls were not replayed. See protocol/replays.py."""
        from .._version import __version__
        from .replays import pytest_source, replays, windows_name_problem

        problem = windows_name_problem(os.fspath(path))
        if problem:
            raise ValueError(f"cannot write {os.fspath(path)!r} here: {problem}")
        chosen, skipped = replays(list(self) if calls is None else calls)
        if not chosen:
            raise ValueError("none of these calls can be replayed: " + "; ".join(skipped))
        source = pytest_source(chosen, skipped, notebook and os.path.abspath(notebook), __version__)
        with open(path, "w", encoding="utf-8") as file:
            file.write(source)
        return skipped

    def find(self, call_id: int) -> CallRecord | None:
        return next((r for r in reversed(self._records) if r.id == call_id), None)

    def __iter__(self) -> Iterator[CallRecord]:
        return iter(list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, index: int) -> CallRecord:
        return list(self._records)[index]

    def __repr__(self) -> str:
        return (
            f"<CallLog {len(self)} calls, {mib(self._bytes)} of {mib(self._max_bytes)} "
            f"(max {self._maxlen} calls, {mib(self._max_call_bytes)} per call)>"
        )


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive whole number, not {value!r}")
    return value


def mib(size: float) -> str:
    """``size`` bytes in MiB, as the history, the monitor and ``%mcp history`` show it."""
    return f"{size / MIB:.1f} MiB"
