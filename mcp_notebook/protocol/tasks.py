"""The task store: long calls answered with a handle the client polls (both eras), sans-IO.

A task is one ``tools/call`` that the server answers at once with a task handle instead of
holding the request open (the 2026-07-28 extension ``io.modelcontextprotocol/tasks``; the
2025-11-25 experimental tasks). The store keeps each task until its ``ttl`` runs out after
it ended, and is bounded twice, like the call history (:mod:`.calls`): by a number of tasks
and by the bytes their results hold. When full, the oldest ended tasks go first; if every
kept task is still running, a new one is refused (the client gets a plain error, the call
does not run), so nothing a client sends grows memory without bound.

It lives with the notebook's app (``mcp.tasks``), not with one HTTP server: a stop and
start of the server keeps the tasks; a kernel restart loses them, and their ids then get
the spec's "not found" error.

Status changes may come from any thread (a tool ends on the kernel's): one lock makes
them check-then-set, and observers (status notifications, the monitor) hear every change
on the thread that made it; they must return quickly.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal, get_args

from .abbreviate import estimate
from .codes import INVALID_PARAMS, SERVER_ERROR
from .jsonrpc import RpcError

logger = logging.getLogger(__name__)

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TASK_STATUSES: frozenset[str] = frozenset(get_args(TaskStatus))
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
# working <-> input_required -> a terminal status; a terminal task never changes again.
_NEXT: dict[str, frozenset[str]] = {
    "working": frozenset({"input_required"}) | TERMINAL,
    "input_required": frozenset({"working"}) | TERMINAL,
}

DEFAULT_TTL_MS = 60 * 60 * 1000  # a result stays an hour after the task was created
MAX_TTL_MS = 24 * 60 * 60 * 1000  # what a 2025-11-25 client may ask for, at most
POLL_INTERVAL_MS = 500
MAX_TASKS = 1000
# An "optional" tool call becomes a task once it has run this long (%mcp tasks --after).
DEFAULT_AFTER = 2.0
MAX_BYTES = 64 * 1024 * 1024
_TASK_BYTES = 512  # what a task costs beyond its result, roughly
_SWEEP_SECONDS = 1.0  # how often a get looks for expired tasks besides its own
_EXPIRED_IDS = 1000  # ids remembered after expiry, to say "expired" rather than "unknown"

Observer = Callable[["Task"], None]


class TaskNotFound(RpcError):
    """The spec's error for a task id the server does not know (or no longer keeps)."""

    def __init__(self, task_id: str, expired: bool = False) -> None:
        why = "Task has expired" if expired else "Task not found"
        super().__init__(INVALID_PARAMS, f"Failed to retrieve task: {why}", {"taskId": task_id})


def iso(seconds: float) -> str:
    """An ISO 8601 UTC timestamp (what the spec's ``createdAt`` carries)."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(eq=False, slots=True)
class Task:
    """One task. The store changes it; everyone else reads it."""

    id: str
    target: str  # what runs: "tools/call greet"
    client: str  # who asked, as the call history names clients
    era: str  # "modern" (the 2026-07-28 extension) or "handshake" (2025-11-25)
    owner: str | None = None  # the authorization context it is bound to, if any
    ttl_ms: int | None = DEFAULT_TTL_MS
    poll_ms: int = POLL_INTERVAL_MS
    number: int = 0  # the store's running count: the monitor's short name for it
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    status: TaskStatus = "working"
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    # Outstanding input requests, by key (a 2026-07-28 task in input_required).
    input_requests: Callable[[], dict[str, Any]] | None = field(default=None, repr=False)
    # Answers to them (tasks/update): raises RpcError for a malformed answer.
    supply: Callable[[dict[str, Any]], None] | None = field(default=None, repr=False)
    # Stops the work (tasks/cancel, the monitor's Cancel); the work then ends the task.
    stop: Callable[[], None] | None = field(default=None, repr=False)
    record: Any = field(default=None, repr=False)  # the CallRecord of the call, if any
    progress: tuple[float, float | None] | None = None
    size: int = _TASK_BYTES
    ended: float | None = None
    # The two timestamps as the wire shows them, formatted once each (tasks/get is hot).
    _stamps: tuple[float, str, float, str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.updated = self.updated or self.created

    def stamps(self) -> tuple[str, str]:
        """``createdAt`` and ``lastUpdatedAt``."""
        cached = self._stamps
        if cached is None or cached[2] != self.updated:
            created = cached[1] if cached is not None else iso(self.created)
            cached = self._stamps = (self.created, created, self.updated, iso(self.updated))
        return cached[1], cached[3]

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    def expires(self) -> float | None:
        """When the store may forget this task (wall clock), or None for never."""
        if self.ttl_ms is None:
            return None
        return self.created + self.ttl_ms / 1000

    def age(self, now: float | None = None) -> float:
        return (time.time() if now is None else now) - self.created

    # -- the wire shapes -------------------------------------------------------------------
    def modern(self, detailed: bool = True) -> dict[str, Any]:
        """The 2026-07-28 ``Task`` (``DetailedTask`` when ``detailed``: result, error or
        input requests inlined)."""
        created, updated = self.stamps()
        shown: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": created,
            "lastUpdatedAt": updated,
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": self.poll_ms,
        }
        if self.message:
            shown["statusMessage"] = self.message
        if detailed:
            if self.status == "completed" and self.result is not None:
                shown["result"] = self.result
            elif self.status == "failed":
                shown["error"] = self.error or {"code": -32603, "message": "failed"}
            elif self.status == "input_required":
                shown["inputRequests"] = self.input_requests() if self.input_requests else {}
        return shown

    def handshake(self) -> dict[str, Any]:
        """The 2025-11-25 ``Task`` (``ttl`` and ``pollInterval`` in milliseconds)."""
        created, updated = self.stamps()
        shown: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": created,
            "lastUpdatedAt": updated,
            "ttl": self.ttl_ms,
            "pollInterval": self.poll_ms,
        }
        if self.message:
            shown["statusMessage"] = self.message
        return shown


class TaskStore:
    """The tasks of one kernel (or one headless ``serve``), bounded in count and bytes."""

    def __init__(
        self,
        max_tasks: int = MAX_TASKS,
        max_bytes: int = MAX_BYTES,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.max_tasks, self.max_bytes = max_tasks, max_bytes
        self.after = DEFAULT_AFTER  # seconds before an optional call becomes a task
        self.default_ttl_ms: int | None = DEFAULT_TTL_MS  # how long results are kept
        self.clock = clock
        self._tasks: OrderedDict[str, Task] = OrderedDict()  # oldest first
        self._expired: deque[str] = deque(maxlen=_EXPIRED_IDS)
        self._expired_set: set[str] = set()
        self._bytes = 0
        self._lock = threading.RLock()
        self._observers: list[Observer] = []
        self._numbers = itertools.count(1)
        self._next_sweep = 0.0

    # -- observers ------------------------------------------------------------------------
    def observe(self, observer: Observer) -> None:
        with self._lock:
            self._observers = [*self._observers, observer]

    def unobserve(self, observer: Observer) -> None:
        with self._lock:
            self._observers = [o for o in self._observers if o != observer]

    def _tell(self, task: Task) -> None:
        for observer in self._observers:
            try:
                observer(task)
            except Exception:  # an observer must not break the task it watches
                logger.exception("a task observer failed")

    # -- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._tasks)

    def __iter__(self) -> Any:
        return iter(self.list())

    @property
    def bytes(self) -> int:
        return self._bytes

    def list(self, owner: str | None = None, everyone: bool = True) -> list[Task]:
        """The kept tasks, oldest first (only ``owner``'s unless ``everyone``)."""
        with self._lock:
            self._sweep()
            tasks = list(self._tasks.values())
        if everyone:
            return tasks
        return [t for t in tasks if t.owner == owner]

    def get(self, task_id: Any, owner: str | None = None) -> Task:
        """The task of this id, or the spec's -32602 (unknown, expired, someone else's)."""
        if not isinstance(task_id, str):
            raise RpcError(INVALID_PARAMS, "params.taskId must be a string")
        with self._lock:
            self._sweep()
            task = self._tasks.get(task_id)
            if task is not None and task.done and self._expired_now(task):
                self._forget(task)
                task = None
            if task is None or task.owner != owner:
                # Another client's task is "not found" too: its existence is not told.
                raise TaskNotFound(task_id, expired=task is None and task_id in self._expired_set)
            return task

    # -- changing -------------------------------------------------------------------------
    def create(
        self,
        target: str,
        client: str = "",
        *,
        era: str = "modern",
        owner: str | None = None,
        ttl_ms: int | None = DEFAULT_TTL_MS,
        record: Any = None,
    ) -> Task:
        """A new ``working`` task, kept before this returns (so a ``get`` of its id
        resolves at once), or an error if the store is full of running tasks."""
        with self._lock:
            self._sweep()
            if len(self._tasks) >= self.max_tasks:
                self._expire()
            if len(self._tasks) >= self.max_tasks:
                self._evict(lambda: len(self._tasks) >= self.max_tasks)
            if len(self._tasks) >= self.max_tasks:
                raise RpcError(
                    SERVER_ERROR,
                    f"Too many tasks running ({len(self._tasks)}): try again when some end",
                )
            now = self.clock()
            task = Task(
                id=secrets.token_urlsafe(16),  # unguessable: a task id is a bearer token
                target=target,
                client=client,
                era=era,
                owner=owner,
                ttl_ms=ttl_ms,
                number=next(self._numbers),
                created=now,
                updated=now,
                record=record,
            )
            self._tasks[task.id] = task
            self._bytes += task.size
        self._tell(task)
        return task

    def set_status(self, task: Task, status: TaskStatus, message: str | None = None) -> bool:
        """Move a running task to ``status``; False (and no change) if that is not a valid
        step, e.g. the task already ended."""
        with self._lock:
            changed = self._step(task, status, message)
        if changed:
            self._tell(task)
        return changed

    def _step(self, task: Task, status: TaskStatus, message: str | None) -> bool:
        if task.done:
            return False  # not even its message: a terminal task never changes
        if status == task.status:
            if message == task.message:
                return False
        elif status not in _NEXT.get(task.status, ()):
            return False
        task.status, task.message = status, message
        task.updated = self.clock()
        if status in TERMINAL:
            task.ended = task.updated
            task.stop = task.supply = task.input_requests = None
        return True

    def complete(self, task: Task, result: dict[str, Any], message: str | None = None) -> bool:
        """The call returned ``result`` (a tool error with ``isError`` included)."""
        return self._end(task, "completed", message, result=result)

    def fail(self, task: Task, error: dict[str, Any], message: str | None = None) -> bool:
        """The call ended in a JSON-RPC error ``{code, message, data?}``."""
        return self._end(task, "failed", message or str(error.get("message", "")), error=error)

    def cancel(self, task: Task, message: str | None = "cancelled by the client") -> bool:
        """Mark the task cancelled and stop its work (which can then no longer end it)."""
        stop = task.stop
        changed = self._end(task, "cancelled", message)
        if changed and stop is not None:
            try:
                stop()
            except Exception:
                logger.exception("stopping task %s failed", task.id)
        return changed

    def report_progress(self, task: Task, progress: float, total: float | None = None) -> None:
        """The work's last progress report (the monitor shows it on its next tick; no
        status notification: the spec keeps progress off the task's streams)."""
        task.progress = (progress, total)

    def _end(
        self,
        task: Task,
        status: TaskStatus,
        message: str | None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> bool:
        with self._lock:
            if task.done:
                return False  # a cancelled task stays cancelled, whatever the work does
            size = _TASK_BYTES + estimate(result, self.max_bytes) + estimate(error, 1 << 20)
            task.result, task.error = result, error
            if task.id in self._tasks:
                self._bytes += size - task.size
            task.size = size
            self._step(task, status, message)
            if size > self.max_bytes and task.id in self._tasks:
                self._forget(task)  # too big to keep at all: the others' results stay
            self._evict(lambda: self._bytes > self.max_bytes, keep=task)
        self._tell(task)
        return True

    def discard(self, task: Task) -> None:
        with self._lock:
            if self._tasks.pop(task.id, None) is not None:
                self._bytes -= task.size

    def _evict(self, over: Callable[[], bool], keep: Task | None = None) -> None:
        """Drop ended tasks, oldest first, while ``over()``."""
        for task in list(self._tasks.values()):
            if not over():
                return
            if task.done and task is not keep:
                self._forget(task)
        if over() and keep is not None and keep.id in self._tasks:
            self._forget(keep)  # a result too big to keep at all: its id says "expired"

    def _expired_now(self, task: Task) -> bool:
        until = task.expires()
        return until is not None and self.clock() >= until

    def _sweep(self) -> None:
        """Forget expired tasks, at most once a second (a get checks its own task)."""
        now = self.clock()
        if now >= self._next_sweep:
            self._next_sweep = now + _SWEEP_SECONDS
            self._expire()

    def _expire(self) -> None:
        now = self.clock()
        for task in list(self._tasks.values()):
            until = task.expires()
            if until is not None and now >= until and task.done:
                self._forget(task)

    def _forget(self, task: Task) -> None:
        self.discard(task)
        if len(self._expired) == self._expired.maxlen:
            self._expired_set.discard(self._expired[0])
        self._expired.append(task.id)
        self._expired_set.add(task.id)

    def __repr__(self) -> str:
        running = sum(not t.done for t in self._tasks.values())
        return (
            f"<TaskStore: {len(self._tasks)} tasks ({running} running), "
            f"{self._bytes / 1024:.0f} KiB; optional calls become tasks after {self.after:g} s>"
        )

    def close(self) -> None:
        """Stop every running task (the kernel is going away)."""
        for task in self.list():
            if not task.done:
                self.cancel(task, "the server stopped")
