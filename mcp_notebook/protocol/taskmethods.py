"""The tasks/* methods: 2026-07-28's tasks/get, tasks/update, tasks/cancel, and
2025-11-25's experimental tasks/get, tasks/result, tasks/list, tasks/cancel.

Tool calls become tasks in :mod:`.taskcalls`; here a client looks at, answers and
cancels them, and hear of their changes. A 2025-11-25 task belongs to the session that
created it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from .caller import key_of
from .codes import INVALID_PARAMS, SERVER_ERROR
from .jsonrpc import RpcError, invalid_params
from .names import META_RELATED_TASK as RELATED_TASK
from .paging import page
from .request import RequestContext
from .session import Session
from .taskcalls import TaskCalls, declares_tasks, missing_extension
from .tasks import Task, TaskStore


class TaskMethods:
    """The tasks/* method handlers, over the server's task store."""

    def __init__(
        self,
        tasks: TaskStore,
        calls: TaskCalls,
        page_size: int,
        sessions: Mapping[str, Session],
    ) -> None:
        self.tasks, self.calls, self.page_size = tasks, calls, page_size
        self.sessions = sessions  # the server's: who hears of a task's change
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}  # tasks/result callers

    def _task_of(self, request: RequestContext) -> Task:
        if request.session.era != "modern":
            return self.tasks.get(request.params.get("taskId"), owner=request.session.id)
        if not declares_tasks(request.client_capabilities):
            raise missing_extension(request.method)
        return self.tasks.get(request.params.get("taskId"), owner=key_of(request.caller))

    async def get(self, request: RequestContext) -> dict[str, Any]:
        return {"resultType": "complete", **self._task_of(request).modern()}

    async def update(self, request: RequestContext) -> dict[str, Any]:
        task = self._task_of(request)
        responses = request.params.get("inputResponses")
        if not isinstance(responses, dict):
            raise invalid_params("tasks/update needs an inputResponses object")
        # Read once: a cancel on another thread (the monitor's) clears them when it ends
        # the task, and the answers then go nowhere.
        supply, asked = task.supply, task.input_requests
        if supply is not None:
            pending = asked() if asked is not None else {}
            # Keys not outstanding now are ignored, as the spec advises.
            supply({k: v for k, v in responses.items() if k in pending})
        return {"resultType": "complete"}

    async def cancel(self, request: RequestContext) -> dict[str, Any]:
        task = self._task_of(request)
        self.tasks.cancel(task)  # an ended task stays as it is: the same empty ack
        return {"resultType": "complete"}

    # -- 2025-11-25 -------------------------------------------------------------------------
    async def handshake_get(self, request: RequestContext) -> dict[str, Any]:
        return self._task_of(request).handshake()

    async def handshake_result(self, request: RequestContext) -> dict[str, Any]:
        """What the call would have returned, once the task ended (this waits for it)."""
        task = self._task_of(request)
        while not task.done:
            await self._ended(task)
        related = {RELATED_TASK: {"taskId": task.id}}
        if task.status == "completed" and task.result is not None:
            meta = {**task.result.get("_meta", {}), **related}
            return {**task.result, "_meta": meta}
        error = task.error or {"code": SERVER_ERROR, "message": "The task was cancelled"}
        raise RpcError(error.get("code", SERVER_ERROR), error.get("message", ""), error.get("data"))

    async def handshake_list(self, request: RequestContext) -> dict[str, Any]:
        mine = self.tasks.list(owner=request.session.id, everyone=False)
        return page("tasks", [t.handshake() for t in mine], request.params, self.page_size)

    async def handshake_cancel(self, request: RequestContext) -> dict[str, Any]:
        task = self._task_of(request)
        if task.done:
            raise RpcError(
                INVALID_PARAMS, f"Cannot cancel task: already in terminal status '{task.status}'"
            )
        self.tasks.cancel(task, "The task was cancelled by request.")
        return task.handshake()

    async def _ended(self, task: Task) -> None:
        """Until the task's next change (:meth:`wake` wakes the waiters)."""
        self.calls.loop = loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.setdefault(task.id, []).append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout=1.0)  # and look again now and then
        except asyncio.TimeoutError:
            pass
        finally:
            waiting = self._waiters.get(task.id, [])
            if waiter in waiting:
                waiting.remove(waiter)
            if not waiting:
                self._waiters.pop(task.id, None)

    def wake(self, task: Task) -> None:
        """On the server's loop: wake whoever waits for this task to change."""
        for waiter in self._waiters.pop(task.id, []):
            if not waiter.done():
                waiter.set_result(None)

    # -- telling who asked ---------------------------------------------------------------
    def known(self, task_id: Any) -> bool:
        try:
            self.tasks.get(task_id)
        except RpcError:
            return False
        return True

    def changed(self, task: Task) -> None:
        """A task's status changed (on any thread): tell who asked (2026-07-28: the listen
        streams that name it; 2025-11-25: its session), wake tasks/result callers."""
        loop = self.calls.loop
        if loop is None or loop.is_closed():
            return
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            self._tell(task)
        else:
            loop.call_soon_threadsafe(self._tell, task)

    def _tell(self, task: Task) -> None:
        self.wake(task)
        if task.era != "modern":
            owner = self.sessions.get(task.owner or "")
            if owner is not None:
                owner.notify("notifications/tasks/status", task.handshake())
            return
        shown: dict[str, Any] | None = None
        for session in list(self.sessions.values()):
            wanted = session.listen_filter
            if wanted is None or task.id not in wanted.get("taskIds", ()):
                continue
            if task.owner is not None and key_of(session.caller) != task.owner:
                continue  # another token holder's task: not told, even by its id
            shown = shown or task.modern()
            session.notify("notifications/tasks", shown, session.subscription_id)
