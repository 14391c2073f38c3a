"""Tool calls as tasks: the 2026-07-28 extension and the 2025-11-25 experimental tasks.

Two interceptors of ``tools/call`` (:mod:`.interceptors`): :meth:`TaskCalls.mode`,
before the call is recorded, says whether it may become a task (or refuses it);
:meth:`TaskCalls.run` runs a call that may as a task's work. When a request declares the
extension in its per-request capabilities, the server decides per call whether to
answer with a task handle (``CreateTaskResult``) instead of holding the request open:

- ``@mcp.tool(task="required")``: always (a client without the extension gets -32021);
- ``task="forbidden"``: never;
- ``task="optional"`` (the default): when the call has to wait (behind a running cell or
  another call, or for a person's confirmation), or once it has run longer than
  ``TaskStore.after`` seconds (``%mcp tasks --after``). Client input a Context asks for
  before that is a multi round-trip (an ``InputRequiredResult``): those rounds come first,
  and the task is created on a later round, as the spec advises.

Once a task exists, a Context's requests become the task's ``inputRequests`` (status
``input_required``), answered with ``tasks/update``. The work goes on on the kernel as
before; a follower on the server's loop ends the task with its result or error.

On 2025-11-25 (the handshake era's experimental tasks) the client decides: a ``tools/call``
with a ``task`` parameter becomes a task at once (``{"task": Task}``), for a tool whose
``execution.taskSupport`` (listed for 2025-11-25 sessions) is not "forbidden"; the result
comes from ``tasks/result``; ``tasks/list`` lists the session's own tasks; the session
hears ``notifications/tasks/status``. A task belongs to the session that created it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from functools import partial
from typing import Any

from .caller import key_of
from .calls import CallRecord
from .codes import METHOD_NOT_FOUND, MISSING_CAPABILITY
from .executor import Executor
from .interceptors import Next, ToolCall
from .jsonrpc import RpcError, invalid_params
from .mrtr import SETTLE_SECONDS, Asker, Suspended
from .names import TASKS_EXTENSION
from .outcomes import Result, settled
from .queueing import paused_message, waiting_message
from .request import RequestContext
from .rounds import Rounds, input_responses
from .tasklink import TaskLink
from .tasks import MAX_TTL_MS, Task, TaskStatus, TaskStore
from .versions import TASKS_VERSION

logger = logging.getLogger(__name__)

EXTENSION = TASKS_EXTENSION
# How long a call may stay queued before it counts as waiting behind something.
# (no grace when the executor knows a cell holds the kernel: executor.cells.now).
QUEUED_GRACE = 0.2
_TICK = 0.05  # how often the decision looks at the call's status while it waits
# How often a running task's follower looks again (its work's end wakes it at once): cheap
# for many long tasks, soon enough for its status message and for answers to arrive.
_FOLLOW_TICK = 0.25
AWAITING_APPROVAL = "waiting for approval in the notebook"
# Headless (no notebook front end) with --confirm elicit: the client's user is asked.
AWAITING_CLIENT = "waiting for the client's user to approve the call (elicitation)"


def declares_tasks(capabilities: dict[str, Any]) -> bool:
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(EXTENSION), dict)


def missing_extension(what: str) -> RpcError:
    return RpcError(
        MISSING_CAPABILITY,
        f"Missing required client capability: {what} needs the {EXTENSION} extension",
        {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
    )


def created(task: Task) -> dict[str, Any]:
    """The ``CreateTaskResult`` of a stored task (flat: ``Result & Task``)."""
    return {"resultType": "task", **task.modern(detailed=False)}


class TaskCalls:
    """tools/call as a task: whether it may be one, and following the ones that are."""

    def __init__(self, tasks: TaskStore, rounds: Rounds, executor: Executor) -> None:
        self.tasks, self.rounds, self.executor = tasks, rounds, executor
        self.followers: set[asyncio.Future[Any]] = set()  # what ends each running task
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop listen streams are on

    # -- the interceptors -------------------------------------------------------------------
    def mode(self, call: ToolCall, next: Next) -> Awaitable[Result]:
        """Before the record: may this call become a task? (-32021 / -32601 if it must
        be one and cannot, or must not be one and asks.)"""
        session = call.request.session
        if session.era == "modern" or session.protocol_version == TASKS_VERSION:
            assert call.tool is not None  # visibility let it through
            call.as_task = self.as_task(call.request, call.tool.task)
        return next(call)  # (older revisions know no tasks)

    def run(self, call: ToolCall, next: Next) -> Awaitable[Result]:
        """Around the run: a call that may be a task runs as the task's work."""
        if not call.as_task:
            return next(call)
        return self._start(call, next)

    async def _start(self, call: ToolCall, next: Next) -> Result:
        request, record, context = call.request, call.record, call.context
        assert record is not None and call.tool is not None
        asker: Asker | TaskLink
        if request.session.era == "modern":  # client input (a Context's, a confirmation's)
            asker = Asker(input_responses(request.params))
            if context is not None:
                context.asker = asker
        else:  # 2025-11-25: filled in as the task is stored, before the work runs
            asker = TaskLink()
        call.asker = asker
        run = asyncio.ensure_future(self._work(call, next))
        if isinstance(asker, TaskLink):  # 2025-11-25: the client asked for a task
            return self._handshake_start(run, record, context, request, call.target, asker)
        return await self.decide(run, asker, context, record, call)

    @staticmethod
    async def _work(call: ToolCall, next: Next) -> Result:
        """The work of a call that may be a task (cancelled before it starts: nothing ran);
        a denied one fails the task with the reason."""
        assert call.record is not None
        return await settled(next, call, call.record, call.context, denied_fails=True)

    # -- deciding ---------------------------------------------------------------------------
    def as_task(self, request: RequestContext, mode: str) -> bool:
        """Whether this tools/call may become a task (and must, for "required")."""
        if request.session.era != "modern":
            return self._handshake_task(request, mode) is not None
        if mode == "forbidden":
            return False
        if declares_tasks(request.client_capabilities):
            return True
        if mode == "required":
            raise missing_extension("this tool runs as a task; it")
        return False

    @staticmethod
    def _handshake_task(request: RequestContext, mode: str) -> dict[str, Any] | None:
        """2025-11-25: the call's ``task`` parameter, when it asks for a task; -32601 when
        the tool's ``taskSupport`` says the request must (or must not) be one."""
        if request.session.protocol_version != TASKS_VERSION:
            return None  # older revisions know no tasks: a required-task tool runs plainly
        asked = request.params.get("task")
        if asked is not None and not isinstance(asked, dict):
            raise invalid_params("params.task must be an object")
        if asked is not None and mode == "forbidden":
            raise RpcError(METHOD_NOT_FOUND, "This tool cannot be called as a task")
        if asked is None and mode == "required":
            raise RpcError(METHOD_NOT_FOUND, "This tool must be called as a task (params.task)")
        return asked

    def _handshake_start(
        self,
        run: asyncio.Future[Any],
        record: CallRecord,
        context: Any,
        request: RequestContext,
        target: str,
        link: TaskLink | None = None,
    ) -> dict[str, Any]:
        """2025-11-25: store the task, follow the work, answer ``{"task": Task}`` now.
        ``link`` is what the work's requests to the client (its Context's, a headless
        confirmation's) use to name the task and make it input_required."""
        asked = request.params.get("task") or {}
        ttl = asked.get("ttl")
        ttl_ms = self.tasks.default_ttl_ms
        if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0:
            ttl_ms = min(ttl, MAX_TTL_MS)  # a receiver may cap what the client asks for
        try:
            task = self.tasks.create(
                target,
                request.session.client_label,
                era="handshake",
                owner=request.session.id,
                ttl_ms=ttl_ms,
                record=record,
            )
        except RpcError as refused:
            self._abandon(run, record, refused)
            raise
        self.loop = asyncio.get_running_loop()
        self._attach(task, run, None, context)
        link = link or TaskLink()

        def moved(status: str) -> None:  # any thread
            new: TaskStatus = "input_required" if status == "input_required" else "working"
            self.tasks.set_status(task, new, self._note(task))

        link.task_id, link.moved = task.id, moved
        if context is not None:
            context.related_task = task.id
            context.on_asking = link.asking
        self._track(task, run, None)
        return {"task": task.handshake()}

    def _track(self, task: Task, run: asyncio.Future[Any], asker: Asker | None) -> None:
        self._approval(task)
        if run.done():
            self._settle(task, run)
            return
        follower = asyncio.ensure_future(self._follow(task, run, asker))
        self.followers.add(follower)  # a reference, until it ends
        follower.add_done_callback(self.followers.discard)

    async def decide(
        self,
        run: asyncio.Future[Any],
        asker: Asker | None,
        context: Any,
        record: CallRecord,
        call: ToolCall,
    ) -> Result:
        """The reply to a call that may become a task: its result, an MRTR round, or a
        ``CreateTaskResult`` (the task stored first, so a tasks/get resolves at once)."""
        assert call.tool is not None
        request, mode, target = call.request, call.tool.task, call.target
        after = 0.0 if mode == "required" else self.tasks.after
        loop = asyncio.get_running_loop()
        try:
            asks_first = await self._until_decided(run, asker, record, loop.time() + after)
        except asyncio.CancelledError:
            run.cancel()  # the client gave up before a task existed
            raise
        if asks_first:  # input before the task exists: a multi round-trip
            assert asker is not None
            return self.rounds.suspend(Suspended(run, asker, target, context, record))
        if run.done() and mode != "required":
            result: dict[str, Any] = run.result()  # fast enough: the plain result
            return result
        try:
            task = self.tasks.create(
                target,
                request.session.client_label,
                era="modern",
                owner=key_of(request.caller),  # with OAuth: its creator's only
                ttl_ms=self.tasks.default_ttl_ms,
                record=record,
            )
        except RpcError as refused:
            self._abandon(run, record, refused)
            raise
        self.loop = loop
        self._attach(task, run, asker, context)
        self._track(task, run, asker)
        return created(task)

    def _abandon(self, run: asyncio.Future[Any], record: CallRecord, why: RpcError) -> None:
        """The store refused the task: the work stops too (interrupted where it runs, as a
        task's cancel would), else every refused call would run on with nothing bounding
        it, its result never told."""
        if not self.executor.interrupt(record):
            run.cancel()
        record.finish("error", error=why)  # if it never started, nothing else will

    async def _until_decided(
        self,
        run: asyncio.Future[Any],
        asker: Asker | None,
        record: CallRecord,
        deadline: float,
    ) -> bool:
        """Wait until the call ends, must become a task (the deadline passed, it waits for
        a confirmation or behind a cell), or asks the client for input before any task
        exists (True: a multi round-trip). False: decide from ``run`` now."""
        loop = asyncio.get_running_loop()
        queued_since: float | None = None
        while not run.done():
            now = loop.time()
            if now >= deadline or _awaiting(record) or record.paused:
                return False  # a call stopped in the debugger waits as long as a person
            if record.status == "queued":
                queued_since = now if queued_since is None else queued_since
                if self._behind_a_cell() or now - queued_since >= QUEUED_GRACE:
                    return False
            waits: set[asyncio.Future[Any]] = {run}
            asked = None
            if asker is not None:
                asked = asyncio.ensure_future(asker.asked.wait())
                waits.add(asked)
            try:
                await asyncio.wait(
                    waits,
                    timeout=min(_TICK, max(0.0, deadline - now)),
                    return_when=asyncio.FIRST_COMPLETED,
                )
            finally:
                if asked is not None:
                    asked.cancel()
            if _awaiting(record):
                return False  # a confirmation asked of the client is the task's first input
            if asker is not None and asker.pending and not run.done():
                await asyncio.sleep(SETTLE_SECONDS)  # requests made together go together
                if not run.done():
                    return True
        return False

    def _attach(
        self, task: Task, run: asyncio.Future[Any], asker: Asker | None, context: Any = None
    ) -> None:
        if context is not None:
            context.on_progress = partial(self.tasks.report_progress, task)

        def stop() -> None:
            # Sync code running on the kernel's main thread: interrupted where it runs, if
            # the executor can (kernel/capture.py), as Kernel > Interrupt would; it then
            # ends "interrupted" there. Queued: never runs; async: cancelled at its await.
            if task.record is not None and self.executor.interrupt(task.record):
                return
            loop = run.get_loop()
            if _on(loop):
                run.cancel()
            else:
                loop.call_soon_threadsafe(run.cancel)

        task.stop = stop
        if asker is not None:
            task.input_requests = asker.input_requests

            def supply(responses: dict[str, Any]) -> None:
                asker.supply(responses)
                if not asker.pending:
                    self.tasks.set_status(task, "working")

            task.supply = supply

    async def _follow(self, task: Task, run: asyncio.Future[Any], asker: Asker | None) -> None:
        """Until the work ends: input_required while it waits for answers, then the end."""
        try:
            while not run.done():
                self._approval(task)
                waits: set[asyncio.Future[Any]] = {run}
                asked = None
                if asker is not None and not asker.pending:
                    asked = asyncio.ensure_future(asker.asked.wait())
                    waits.add(asked)
                try:
                    await asyncio.wait(
                        waits, timeout=_FOLLOW_TICK, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    if asked is not None:
                        asked.cancel()
                if asker is not None and asker.pending and not run.done():
                    await asyncio.sleep(SETTLE_SECONDS)
                    if not run.done() and asker.pending:
                        self.tasks.set_status(task, "input_required", self._note(task))
        except asyncio.CancelledError:  # the server stops
            run.cancel()
            self.tasks.cancel(task, "the server stopped")
            raise
        self._settle(task, run)

    def _approval(self, task: Task) -> None:
        """Keep the task's status message saying what it waits for (:meth:`_note`); a
        message that is not one of these (a tool's own) stays."""
        note = self._note(task)
        ours = (task.message or "").startswith(("waiting for", "paused at"))
        if note != task.message and (note is not None or ours):
            self.tasks.set_status(task, task.status, note)

    def _note(self, task: Task) -> str | None:
        """What the task waits for: a person who must approve it (at the notebook, or the
        client's user when no notebook is attached), the debugger, or the running cell
        ahead of it (which the record names too, as .queueing does for other calls)."""
        record = task.record
        note: str | None = None
        if record is not None and _awaiting(record):
            note = AWAITING_CLIENT if record.approver == "client" else AWAITING_APPROVAL
        elif record is not None and record.paused:
            note = paused_message(record.target)
        elif record is not None and record.status == "queued":
            cells = self.executor.cells
            cell = cells.now if cells is not None else None
            if cell is not None:
                note = waiting_message(cell)
                if record.behind != cell.label:
                    record.behind = cell.label
                    record._changed()  # the monitor shows what it waits for
        return note

    def _settle(self, task: Task, run: asyncio.Future[Any]) -> None:
        if run.cancelled():
            if task.record is not None:
                task.record.finish("cancelled")  # if it never started, nothing else will
            self.tasks.cancel(task)
            return
        error = run.exception()
        if isinstance(error, RpcError):
            self.tasks.fail(task, dict(error.to_error()))
        elif error is not None:
            logger.error("task %s failed", task.id, exc_info=error)
            self.tasks.fail(task, {"code": -32603, "message": f"Internal error: {error}"})
        else:
            self.tasks.complete(task, run.result())

    def _behind_a_cell(self) -> bool:
        """True when the executor knows that a cell holds the kernel now (kernel/cells.py)."""
        cells = self.executor.cells
        return cells is not None and cells.now is not None


def _awaiting(record: CallRecord) -> bool:
    """Whether the call waits for a person's (or the client's) confirmation now."""
    return record.status == "awaiting confirmation"


def _on(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
