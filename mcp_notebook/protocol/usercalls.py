"""The MCP methods that run user code: tools/call, resources/read, prompts/get, completions.

A mixin of :class:`~mcp_notebook.protocol.server.Server`, kept apart because this is where
the eras differ most: on 2026-07-28 a call may pause for client input (MRTR) and resume.
Failures of user code are tool errors (``isError``) for tools and JSON-RPC errors otherwise.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import McpNotebookError
from ..registry import ArgumentError, Prompt, Registry, ResourceTemplate, views
from ..registry.content import error_result
from ..registry.redact import redact
from . import dispatcher_tools, jsonrpc
from .calls import CallLog, CallRecord
from .context import Context
from .executor import Executor, finishing, settle
from .jsonrpc import RESOURCE_NOT_FOUND, SERVER_ERROR, RpcError, invalid_params
from .kinds import Era, FinalStatus
from .mrtr import SETTLE_SECONDS, Asker, Continuations, Suspended
from .queueing import watch
from .request import RequestContext
from .session import Session, check_uri_length
from .tasklink import TaskLink

# confirm(tool, arguments, session, record, request_id, asker) -> the arguments to run
# with, or raises Declined. The request id says which request a question to the client
# belongs to; asker, for a call that is a task, says how the task asks: a 2026-07-28
# task's Asker (the question is a task input) or a 2025-11-25 task's TaskLink (the
# question names the task, which is input_required meanwhile); None otherwise.
Confirm = Callable[
    [Any, dict[str, Any], Session, CallRecord, Any, "Asker | TaskLink | None"],
    Awaitable[dict[str, Any]],
]


class Declined(McpNotebookError):
    """The user (or the confirmation policy) did not let a tool run; the message says why."""


MAX_COMPLETIONS = 100


class UserCalls:
    """Requests that call into the notebook's functions, on the executor."""

    if TYPE_CHECKING:
        registry: Registry
        calls: CallLog
        executor: Executor
        confirm: Confirm | None
        continuations: Continuations

        def _response(self, request: RequestContext, result: dict[str, Any]) -> jsonrpc.Message: ...
        def offers_dispatcher(self, request: RequestContext) -> bool: ...
        def _as_task(self, request: RequestContext, mode: str) -> bool: ...
        async def _decide(
            self,
            run: asyncio.Future[Any],
            asker: Asker | None,
            context: Any,
            record: CallRecord,
            request: RequestContext,
            mode: str,
            target: str,
        ) -> dict[str, Any]: ...
        def _handshake_start(
            self,
            run: asyncio.Future[Any],
            record: CallRecord,
            context: Any,
            request: RequestContext,
            target: str,
            link: TaskLink | None = None,
        ) -> dict[str, Any]: ...

    # -- calls into user code ----------------------------------------------------------
    @staticmethod
    def _app_may_call(request: RequestContext) -> bool:
        """Whether an app-only tool may run for this request: from an MCP Apps host, not
        passed on by the dispatcher (whose caller is the model)."""
        return request.via is None and views.supports_ui(request.client_capabilities)

    async def _tools_call(self, request: RequestContext) -> dict[str, Any]:
        params, session = request.params, request.session
        name = _required_str(params, "name")
        if name in dispatcher_tools.NAMES and self.offers_dispatcher(request):
            return await dispatcher_tools.answer(self, request, name)
        arguments = _tool_arguments(params)
        tool = self.registry.tools.get(name)
        if tool is None or (tool.app_only and not self._app_may_call(request)):
            # An app-only tool is not listed to a client without MCP Apps, nor to the model
            # through the dispatcher: nor is it there.
            raise invalid_params(f"Unknown tool: {name}", {"name": name})
        target = f"tools/call {name}"
        as_task = self._as_task(request, tool.task)
        resumed = self._resumed(request, target)
        if resumed is not None:
            record, context = resumed.record, resumed.context
            if as_task:
                return await self._decide(
                    resumed.run, resumed.asker, context, record, request, tool.task, target
                )
            return await self._settled(self._outcome(resumed), record, context)
        record = self.calls.add(
            CallRecord(
                "tools/call",
                name,
                arguments,
                session.client_label,
                via=request.via,
                view=views.call_origin(tool.view_uri if tool.app_only else None, params),
            )
        )
        request.record = record  # a call whose client hangs up may be dropped
        problem = tool.argument_error(arguments)
        if problem is not None:
            record.finish("error", error=ValueError(problem))
            return error_result(problem)
        context = self._context(request) if tool.injected else None
        if as_task:
            asker: Asker | TaskLink
            if session.era == "modern":  # client input (a Context's, a confirmation's)
                asker = Asker(self._input_responses(request.params))
                if context is not None:
                    context.asker = asker
            else:  # 2025-11-25: filled in as the task is stored, before the work runs
                asker = TaskLink()
            run = asyncio.ensure_future(
                self._task_work(tool, arguments, record, context, request, asker)
            )
            if isinstance(asker, TaskLink):  # 2025-11-25: the client asked for a task
                return self._handshake_start(run, record, context, request, target, asker)
            return await self._decide(run, asker, context, record, request, tool.task, target)
        outcome = self._run_tool(tool, arguments, record, context, request)
        return await self._settled(outcome, record, context)

    async def _task_work(
        self,
        tool: Any,
        arguments: dict[str, Any],
        record: CallRecord,
        context: Context | None,
        request: RequestContext,
        asker: Asker | TaskLink | None = None,
    ) -> dict[str, Any]:
        """The work of a call that may be a task (cancelled before it starts: nothing ran)."""
        outcome = self._run_tool(
            tool, arguments, record, context, request, as_task=True, asker=asker
        )
        return await self._settled(outcome, record, context, denied_fails=True)

    async def _settled(
        self,
        outcome: Awaitable[dict[str, Any]],
        record: CallRecord,
        context: Context | None,
        denied_fails: bool = False,
    ) -> dict[str, Any]:
        """A tool call's reply, its record finished; JSON-RPC errors and cancels go on.
        A denied call is a tool error, or (``denied_fails``: a task) a JSON-RPC error,
        which fails the task with the reason."""
        try:
            reply: dict[str, Any] = await outcome
            return reply
        except Declined as declined:
            record.finish("denied", error=declined)
            if denied_fails:
                raise RpcError(SERVER_ERROR, str(declined), {"denied": True}) from None
            return error_result(str(declined))
        except asyncio.CancelledError:
            if context is not None:
                context._cancel()
            record.finish("cancelled")
            raise
        except RpcError as error:  # e.g. a missing client capability on 2026-07-28
            record.finish("error", error=error)
            raise
        except BaseException as exc:  # e.g. a confirmation that failed
            return _recorded(record, _tool_outcome(False, exc))

    async def _run_tool(
        self,
        tool: Any,
        arguments: dict[str, Any],
        record: CallRecord,
        context: Context | None,
        request: RequestContext,
        as_task: bool = False,
        asker: Asker | TaskLink | None = None,
    ) -> dict[str, Any]:
        """Confirm, then run the tool; its result is recorded where it ran. As a task,
        nothing leaves early and client input (``asker``, on 2026-07-28) waits for
        ``tasks/update``; on 2025-11-25 (a ``TaskLink``) it names the task."""
        if self.confirm is not None:
            arguments = await self.confirm(
                tool, arguments, request.session, record, request.id, asker
            )
            problem = tool.argument_error(arguments)  # the user may have edited them
            if problem is not None:
                raise Declined(problem)
        injected: dict[type, Any] = {Context: context} if context is not None else {}
        # Behind a running cell? Then it says so (.queueing); any executor may know.
        cells = getattr(self.executor, "cells", None)
        pausing = getattr(self.executor, "may_pause", None)  # %mcp break on this tool?
        paused = pausing is not None and pausing(record)
        waiting = None if as_task else watch(request, record, cells, paused)
        # Without a Context, user code says nothing on this request's stream: the reply
        # may leave from the thread that ran it (see .request), unless the wait is told.
        # A task's request has its answer already: nothing leaves early, no wait is told.
        told = waiting is not None and waiting.streams
        early = context is None and not told and not as_task and request.offer_channel()

        def finish(ok: bool, value: Any) -> dict[str, Any]:
            outcome = _tool_outcome(ok, value)
            if request.cancelled:
                return outcome[0]  # the server's thread records it as cancelled
            if early:
                # The reply first. Recording is bookkeeping, done before this thread runs
                # anything else (a cell that reads mcp.calls, for one).
                request.reply(self._response(request, outcome[0]))
            return _recorded(record, outcome)

        convert = tool.result
        if tool.view_uri is not None:  # its view's rendering of this call is the caller's
            convert = partial(views.for_viewer, views.viewer_of(request.session), tool.result)
        user_code = self.executor.prepare(
            lambda: _then(tool.invoke(arguments, injected), convert), record
        )
        work = finishing(user_code, finish)
        if as_task:
            done: dict[str, Any] = await self.executor.run(work, record)
            return done
        try:
            result: dict[str, Any] = await self._start(
                work, record, context, f"tools/call {tool.name}", request
            )
        finally:
            if waiting is not None:
                waiting.close()
        return result

    # -- 2026-07-28: calls that pause for client input ---------------------------------
    def _context(self, request: RequestContext) -> Context:
        loop = asyncio.get_running_loop()
        token, line = request.progress_token, request.progress_line
        return Context(request.session, loop, request.id, token, line)

    async def _start(
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
        context.asker = Asker(self._input_responses(request.params))
        run = asyncio.ensure_future(self.executor.run(work, record))
        return await self._outcome(Suspended(run, context.asker, target, context, record))

    def _input_responses(self, params: dict[str, Any]) -> dict[str, Any]:
        responses = params.get("inputResponses")
        if responses is not None and not isinstance(responses, dict):
            raise invalid_params("inputResponses must be an object")
        return responses or {}

    def _resumed(self, request: RequestContext, target: str) -> Suspended | None:
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
            call.asker.supply(self._input_responses(params))
        except RpcError:
            self.continuations.keep(call, state)  # a malformed answer: the call still waits
            raise
        return call

    async def _outcome(self, call: Suspended) -> Any:
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
                return {
                    "resultType": "input_required",
                    "inputRequests": asker.input_requests(),
                    "requestState": self.continuations.suspend(call),
                }
        except asyncio.CancelledError:
            run.cancel()  # the client gave up on this call
            raise
        return run.result()

    async def _resources_read(self, request: RequestContext) -> dict[str, Any]:
        uri = _required_str(request.params, "uri")
        component, values = self._find_resource(uri, request.era)
        record = self.calls.add(
            CallRecord("resources/read", uri, values or {}, request.session.client_label)
        )

        viewer = views.viewer_of(request.session)

        def work() -> Any:  # the result, or an awaitable of it (an async reader)
            if isinstance(component, ResourceTemplate):
                return component.read(uri, values or {})
            if uri.startswith(views.SCHEME):  # a view shows the caller's own latest call
                return views.for_viewer(viewer, component.read)
            return component.read()

        what = "reading resource " + uri
        result: dict[str, Any] = await self._run_user(record, work, what, request)
        return result

    def _find_resource(self, uri: str, era: Era = "handshake") -> tuple[Any, dict[str, Any] | None]:
        found = self.registry.find_resource(uri)
        if found is None:
            # 2026-07-28 moved "not found" to Invalid Params; the URI is in data either way.
            code = RESOURCE_NOT_FOUND if era == "handshake" else jsonrpc.INVALID_PARAMS
            raise RpcError(code, f"Resource not found: {uri}", {"uri": uri})
        return found

    async def _subscribe(self, request: RequestContext) -> dict[str, Any]:
        uri = _required_str(request.params, "uri")
        check_uri_length(uri)  # before a template is matched against it
        self._find_resource(uri)
        request.session.subscribe(uri)
        return {}

    async def _unsubscribe(self, request: RequestContext) -> dict[str, Any]:
        request.session.subscriptions.discard(_required_str(request.params, "uri"))
        return {}

    async def _prompts_get(self, request: RequestContext) -> dict[str, Any]:
        params, session = request.params, request.session
        name = _required_str(params, "name")
        prompt = self.registry.prompts.get(name)
        if prompt is None:
            raise invalid_params(f"Unknown prompt: {name}", {"name": name})
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict) or not all(
            isinstance(v, str) for v in arguments.values()
        ):
            raise invalid_params("prompts/get arguments must be an object of strings")
        missing = prompt.missing_arguments(arguments)
        if missing:
            raise invalid_params(
                f"Missing required argument(s) for prompt '{name}': {', '.join(missing)}",
                {"missing": missing},
            )
        resumed = self._resumed(request, f"prompts/get {name}")
        outcome: Callable[[], Any] | Awaitable[Any]
        early: RequestContext | None = None  # the reply may leave where the code ran
        if resumed is not None:
            record = resumed.record
            outcome = self._outcome(resumed)
        else:
            record = self.calls.add(
                CallRecord("prompts/get", name, arguments, session.client_label)
            )
            context = self._context(request) if prompt.injected else None
            injected: dict[type, Any] = {Context: context} if context is not None else {}

            def render() -> Any:
                return _then(prompt.render(arguments, injected), prompt.result)

            if context is None:  # nothing to stream: the reply may leave where it ran
                outcome, early = render, request
            else:
                work = self.executor.prepare(render, record)
                outcome = self._start(work, record, context, f"prompts/get {name}", request)
        what = f"rendering prompt '{name}'"
        result: dict[str, Any] = await self._run_user(record, outcome, what, early)
        return result

    async def _complete(self, request: RequestContext) -> dict[str, Any]:
        params, session = request.params, request.session
        ref, argument = params.get("ref"), params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise invalid_params("completion/complete needs ref and argument objects")
        name, value = argument.get("name"), argument.get("value", "")
        if not isinstance(name, str) or not isinstance(value, str):
            raise invalid_params("argument.name and argument.value must be strings")
        context = given if isinstance(given := params.get("context"), dict) else {}
        known = given if isinstance(given := context.get("arguments"), dict) else {}
        target: Prompt | ResourceTemplate | None
        if ref.get("type") == "ref/prompt":
            target = self.registry.prompts.get(_required_str(ref, "name", "ref."))
            if target is None:
                raise invalid_params(f"Unknown prompt: {ref['name']}")
        elif ref.get("type") == "ref/resource":
            target = self.registry.templates.get(_required_str(ref, "uri", "ref."))
            if target is None:
                raise invalid_params(f"Unknown resource template: {ref['uri']}")
        else:
            kind = ref.get("type")
            shown = repr(kind) if isinstance(kind, str) or kind is None else "of the wrong type"
            raise invalid_params(f"Unknown completion reference type {shown}")
        completer = target.completers.get(name)
        values: list[str] = []
        if completer is not None:
            record = self.calls.add(
                CallRecord("completion/complete", name, {"value": value}, session.client_label)
            )
            found = await self._run_user(
                record, lambda: _suggest(completer, value, known), f"completing '{name}'"
            )
            values = [str(v) for v in found]
        return {
            "completion": {
                "values": values[:MAX_COMPLETIONS],
                "total": len(values),
                "hasMore": len(values) > MAX_COMPLETIONS,
            }
        }

    async def _run_user(
        self,
        record: CallRecord,
        work: Callable[[], Any] | Awaitable[Any],
        what: str,
        request: RequestContext | None = None,
    ) -> Any:
        """Run a reader/renderer/completer; its failures are request errors. Given the
        ``request``, its reply may leave from the thread that ran the code."""
        if request is not None:
            request.record = record  # a call whose client hangs up may be dropped
        try:
            if callable(work):
                prepared = self.executor.prepare(work, record)
                if request is not None and request.offer_channel():
                    prepared = finishing(prepared, partial(self._answer, request, record, what))
                result = await self.executor.run(prepared, record)
            else:
                result = await work
        except asyncio.CancelledError:
            record.finish("cancelled")
            raise
        except BaseException as exc:  # a SystemExit in user code must not end the server
            record.finish("error", error=exc)  # no change if it was recorded where it ran
            raise _request_error(exc, what) from exc
        if not (isinstance(result, dict) and result.get("resultType") == "input_required"):
            record.finish("done", result=result)
        return result

    def _answer(
        self, request: RequestContext, record: CallRecord, what: str, ok: bool, value: Any
    ) -> Any:
        """Where a reader or renderer ran: its reply (result or error) now, then its record."""
        if not ok:
            error = _request_error(value, what)
            if not request.cancelled:
                request.reply(jsonrpc.error_response(request.id, error))
                record.finish("error", error=value)
            raise error
        if not request.cancelled:
            request.reply(self._response(request, value))
            record.finish("done", result=value)
        return value


Outcome = tuple[dict[str, Any], FinalStatus | None, BaseException | None]


def _tool_outcome(ok: bool, value: Any) -> Outcome:
    """The result of a tool call that returned (``ok``) or raised ``value``, with the
    status and error to record (no status while it waits for client input)."""
    if ok:
        return value, None if value.get("resultType") == "input_required" else "done", None
    if isinstance(value, RpcError):
        raise value  # a JSON-RPC error (e.g. a missing client capability), not a tool error
    # The traceback stays in the notebook (``mcp.calls``); the client gets the message.
    message = f"{type(value).__name__}: {value}" if str(value) else type(value).__name__
    return error_result(redact(message)), "error", value


def _recorded(record: CallRecord, outcome: Outcome) -> dict[str, Any]:
    result, status, error = outcome
    if status is not None:
        record.finish(status, result=None if error else result, error=error)
    return result


def _suggest(completer: Any, value: str, known: dict[str, Any]) -> Any:
    """A completer is a list of candidates, or a function of (value[, arguments])."""
    if callable(completer):
        accepts_context = len(inspect.signature(completer).parameters) > 1
        found = completer(value, known) if accepts_context else completer(value)
        return _then(found, list)
    return [c for c in completer if str(c).startswith(value)]


def _then(value: Any, convert: Callable[[Any], Any]) -> Any:
    """``convert(value)``, after awaiting it if the user function was async."""
    if inspect.isawaitable(value):
        return _convert_later(value, convert)
    return convert(value)


async def _convert_later(awaitable: Any, convert: Callable[[Any], Any]) -> Any:
    return convert(await settle(awaitable))


def _request_error(exc: BaseException, what: str) -> RpcError:
    """The JSON-RPC error of a reader, renderer or completer that raised ``exc``."""
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, ArgumentError):
        return invalid_params(str(exc))
    # The traceback stays in the notebook (``mcp.calls``); the client gets the message.
    return RpcError(jsonrpc.INTERNAL_ERROR, redact(f"Error {what}: {type(exc).__name__}: {exc}"))


def _tool_arguments(params: dict[str, Any]) -> dict[str, Any]:
    given = params.get("arguments")
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise invalid_params("tools/call arguments must be an object")
    return given


def _required_str(params: dict[str, Any], key: str, within: str = "") -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise invalid_params(f"params.{within}{key} must be a string")
    return value
