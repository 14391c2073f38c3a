"""Multi round-trips on the request path (2026-07-28): running code that may ask the
client, and resuming a suspended call when the client retries with its answers.

:mod:`.mrtr` holds the state (``Asker``, ``Suspended``, ``Continuations``); here is what
``tools/call`` and ``prompts/get`` do with it. :class:`Resumption` is the tool call's
interceptor: a retry that carries ``requestState`` continues the suspended call instead
of starting a new one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .calls import CallRecord
from .context import Context
from .executor import Executor
from .interceptors import Next, ToolCall
from .jsonrpc import RpcError, invalid_params
from .mrtr import SETTLE_SECONDS, Asker, Continuations, Suspended
from .outcomes import Result, settled
from .request import RequestContext


class Decides(Protocol):
    """What a resumed call that may be a task needs of the tasks (:mod:`.taskcalls`)."""

    async def decide(
        self,
        run: asyncio.Future[Any],
        asker: Asker | None,
        context: Any,
        record: CallRecord,
        call: ToolCall,
    ) -> Result: ...


def input_responses(params: dict[str, Any]) -> dict[str, Any]:
    responses = params.get("inputResponses")
    if responses is not None and not isinstance(responses, dict):
        raise invalid_params("inputResponses must be an object")
    return responses or {}


def new_context(request: RequestContext) -> Context:
    """The ``Context`` a tool or prompt that takes one gets, bound to this request."""
    loop = asyncio.get_running_loop()
    token, line = request.progress_token, request.progress_line
    context = Context(request.session, loop, request.id, token, line)
    context.caller = request.caller
    return context


class Rounds:
    """Runs user code that may pause for client input, and finds the call a retry resumes."""

    def __init__(self, continuations: Continuations, executor: Executor) -> None:
        self.continuations, self.executor = continuations, executor

    async def start(
        self,
        work: Callable[[], Any],
        record: CallRecord,
        context: Context | None,
        target: str,
        request: RequestContext,
    ) -> Any:
        """Run user code; on 2026-07-28 a Context turns client requests into input requests."""
        if request.session.era != "modern" or context is None:
            return await self.executor.run(work, record)
        context.asker = Asker(input_responses(request.params))
        run = asyncio.ensure_future(self.executor.run(work, record))
        return await self.outcome(Suspended(run, context.asker, target, context, record))

    def resumed(self, request: RequestContext, target: str) -> Suspended | None:
        """The suspended call a retry's ``requestState`` continues, with its answers given."""
        params = request.params
        state = params.get("requestState") if request.session.era == "modern" else None
        if state is None:
            return None
        call = self.continuations.resume(state, target)
        context = call.context
        # The paused code now reports to the retry: its stream, its progress token.
        context.session, context.request_id = request.session, request.id
        context.progress_token = request.progress_token
        try:
            call.asker.supply(input_responses(params))
        except RpcError:
            self.continuations.keep(call, state)  # a malformed answer: the call still waits
            raise
        return call

    def suspend(self, call: Suspended) -> Result:
        """The ``InputRequiredResult`` of a call that now waits for its retry."""
        return {
            "resultType": "input_required",
            "inputRequests": call.asker.input_requests(),
            "requestState": self.continuations.suspend(call),
        }

    async def outcome(self, call: Suspended) -> Any:
        """The call's result, or an InputRequiredResult while it waits for client input."""
        run, asker = call.run, call.asker
        try:
            while not run.done():
                asked = asyncio.ensure_future(asker.asked.wait())
                try:
                    await asyncio.wait({run, asked}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    asked.cancel()
                if run.done() or not asker.pending:
                    continue
                await asyncio.sleep(SETTLE_SECONDS)  # requests made together go out together
                if run.done():
                    break
                return self.suspend(call)
        except asyncio.CancelledError:
            run.cancel()  # the client gave up on this call
            raise
        return run.result()


class Resumption:
    """Interceptor: a 2026-07-28 retry with ``requestState`` continues its suspended call
    (its record, its Context, its place in a task's decision); nothing new is recorded."""

    def __init__(self, rounds: Rounds, tasks: Decides) -> None:
        self.rounds, self.tasks = rounds, tasks

    def __call__(self, call: ToolCall, next: Next) -> Awaitable[Result]:
        request = call.request
        if request.session.era != "modern" or request.params.get("requestState") is None:
            return next(call)
        return self._resume(call)

    async def _resume(self, call: ToolCall) -> Result:
        resumed = self.rounds.resumed(call.request, call.target)
        assert resumed is not None and call.tool is not None  # requestState, a visible tool
        record, context = resumed.record, resumed.context
        if call.as_task:
            return await self.tasks.decide(resumed.run, resumed.asker, context, record, call)
        return await settled(self.rounds.outcome, resumed, record, context)
