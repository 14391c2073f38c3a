"""Tool calls as tasks (2026-07-28 extension ``io.modelcontextprotocol/tasks``).

A mixin of :class:`~mcp_notebook.protocol.server.Server` beside :mod:`.usercalls`. When a
request declares the extension in its per-request capabilities, the server decides per
call whether to answer with a task handle (``CreateTaskResult``) instead of holding the
request open:

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
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from .codes import METHOD_NOT_FOUND, MISSING_CAPABILITY
from .jsonrpc import RpcError, invalid_params
from .mrtr import SETTLE_SECONDS, Asker, Continuations, Suspended
from .request import RequestContext
from .tasks import Task, TaskStore

if TYPE_CHECKING:
    from .calls import CallRecord

logger = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/tasks"
# How long a call may stay queued before it counts as waiting behind something.
QUEUED_GRACE = 0.05
_TICK = 0.05  # how often the decision looks at the call's status while it waits


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
    """tools/call as a task, and tasks/get, tasks/update, tasks/cancel (2026-07-28)."""

    if TYPE_CHECKING:
        tasks: TaskStore
        continuations: Continuations
        executor: Any
        _followers: set[asyncio.Future[Any]]

    # -- deciding ---------------------------------------------------------------------------
    def _as_task(self, request: RequestContext, mode: str) -> bool:
        """Whether this tools/call may become a task (and must, for "required")."""
        if request.session.era != "modern" or mode == "forbidden":
            return False
        if declares_tasks(request.client_capabilities):
            return True
        if mode == "required":
            raise missing_extension("this tool runs as a task; it")
        return False

    async def _decide(
        self,
        run: asyncio.Future[Any],
        asker: Asker | None,
        context: Any,
        record: CallRecord,
        request: RequestContext,
        mode: str,
        target: str,
    ) -> dict[str, Any]:
        """The reply to a call that may become a task: its result, an MRTR round, or a
        ``CreateTaskResult`` (the task stored first, so a tasks/get resolves at once)."""
        after = 0.0 if mode == "required" else self.tasks.after
        loop = asyncio.get_running_loop()
        deadline = loop.time() + after
        queued_since: float | None = None
        try:
            while not run.done():
                now = loop.time()
                if now >= deadline or record.status == "awaiting confirmation":
                    break
                if record.status == "queued":
                    queued_since = now if queued_since is None else queued_since
                    if _behind_a_cell(self.executor) or now - queued_since >= QUEUED_GRACE:
                        break
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
                if asker is not None and asker.pending and not run.done():
                    await asyncio.sleep(SETTLE_SECONDS)  # requests made together go together
                    if run.done():
                        break
                    # Input before the task exists: a multi round-trip, no task yet.
                    call = Suspended(run, asker, target, context, record)
                    return {
                        "resultType": "input_required",
                        "inputRequests": asker.input_requests(),
                        "requestState": self.continuations.suspend(call),
                    }
        except asyncio.CancelledError:
            run.cancel()  # the client gave up before a task existed
            raise
        if run.done() and mode != "required":
            result: dict[str, Any] = run.result()  # fast enough: the plain result
            return result
        task = self.tasks.create(target, request.session.client_label, era="modern", record=record)
        self._attach(task, run, asker)
        if run.done():
            self._settle(task, run)
        else:
            follower = asyncio.ensure_future(self._follow(task, run, asker))
            self._followers.add(follower)  # a reference, until it ends
            follower.add_done_callback(self._followers.discard)
        return created(task)

    def _attach(self, task: Task, run: asyncio.Future[Any], asker: Asker | None) -> None:
        def stop() -> None:
            run.cancel()  # queued: never runs; async: cancelled at its next await

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
                waits: set[asyncio.Future[Any]] = {run}
                asked = None
                if asker is not None and not asker.pending:
                    asked = asyncio.ensure_future(asker.asked.wait())
                    waits.add(asked)
                try:
                    await asyncio.wait(
                        waits,
                        timeout=None if asked is not None else _TICK,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                finally:
                    if asked is not None:
                        asked.cancel()
                if asker is not None and asker.pending and not run.done():
                    await asyncio.sleep(SETTLE_SECONDS)
                    if not run.done() and asker.pending:
                        self.tasks.set_status(task, "input_required")
        except asyncio.CancelledError:  # the server stops
            run.cancel()
            self.tasks.cancel(task, "the server stopped")
            raise
        self._settle(task, run)

    def _settle(self, task: Task, run: asyncio.Future[Any]) -> None:
        if run.cancelled():
            self.tasks.cancel(task)
            return
        error = run.exception()
        if isinstance(error, RpcError):
            self.tasks.fail(task, error.to_error())
        elif error is not None:
            logger.error("task %s failed", task.id, exc_info=error)
            self.tasks.fail(task, {"code": -32603, "message": f"Internal error: {error}"})
        else:
            self.tasks.complete(task, run.result())

    # -- the methods ------------------------------------------------------------------------
    def _task_of(self, request: RequestContext) -> Task:
        if not declares_tasks(request.client_capabilities):
            raise missing_extension(request.method)
        return self.tasks.get(request.params.get("taskId"))

    async def _tasks_get(self, request: RequestContext) -> dict[str, Any]:
        return {"resultType": "complete", **self._task_of(request).modern()}

    async def _tasks_update(self, request: RequestContext) -> dict[str, Any]:
        task = self._task_of(request)
        responses = request.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise invalid_params("tasks/update needs an inputResponses object")
        if task.supply is not None:
            pending = task.input_requests() if task.input_requests else {}
            # Keys not outstanding now are ignored, as the spec advises.
            task.supply({k: v for k, v in responses.items() if k in pending})
        return {"resultType": "complete"}

    async def _tasks_cancel(self, request: RequestContext) -> dict[str, Any]:
        task = self._task_of(request)
        self.tasks.cancel(task)  # an ended task stays as it is: the same empty ack
        return {"resultType": "complete"}

    @staticmethod
    async def _removed(request: RequestContext) -> dict[str, Any]:
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {request.method}")


def _behind_a_cell(executor: Any) -> bool:
    """True when the executor knows that a cell holds the kernel now (kernel/cells.py)."""
    cells = getattr(executor, "cells", None)
    return cells is not None and getattr(cells, "now", None) is not None
