"""The MCP methods that run user code besides tools/call: resources/read, prompts/get,
completions.

Failures of user code are JSON-RPC errors here (a tool's are tool errors:
:mod:`.toolcalls`). On 2026-07-28 a prompt with a Context may pause for client input
(MRTR, :mod:`.rounds`) and resume.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from ..registry import Prompt, Registry, ResourceTemplate, views
from . import jsonrpc
from .calls import CallLog, CallRecord
from .context import Context
from .executor import Executor, finishing
from .jsonrpc import RESOURCE_NOT_FOUND, RpcError, invalid_params
from .kinds import Era
from .outcomes import request_error, required_str, response, then
from .request import RequestContext
from .rounds import Rounds, new_context
from .session import check_uri_length

MAX_COMPLETIONS = 100


class UserCalls:
    """Requests that call into the notebook's readers, renderers and completers."""

    def __init__(
        self, registry: Registry, calls: CallLog, executor: Executor, rounds: Rounds
    ) -> None:
        self.registry, self.calls, self.executor, self.rounds = registry, calls, executor, rounds

    async def resources_read(self, request: RequestContext) -> dict[str, Any]:
        uri = required_str(request.params, "uri")
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

    async def subscribe(self, request: RequestContext) -> dict[str, Any]:
        uri = required_str(request.params, "uri")
        check_uri_length(uri)  # before a template is matched against it
        self._find_resource(uri)
        request.session.subscribe(uri)
        return {}

    async def unsubscribe(self, request: RequestContext) -> dict[str, Any]:
        request.session.subscriptions.discard(required_str(request.params, "uri"))
        return {}

    async def prompts_get(self, request: RequestContext) -> dict[str, Any]:
        params, session = request.params, request.session
        name = required_str(params, "name")
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
        resumed = self.rounds.resumed(request, f"prompts/get {name}")
        outcome: Callable[[], Any] | Awaitable[Any]
        early: RequestContext | None = None  # the reply may leave where the code ran
        if resumed is not None:
            record = resumed.record
            outcome = self.rounds.outcome(resumed)
        else:
            record = self.calls.add(
                CallRecord("prompts/get", name, arguments, session.client_label)
            )
            context = new_context(request) if prompt.injected else None
            injected: dict[type, Any] = {Context: context} if context is not None else {}

            def render() -> Any:
                return then(prompt.render(arguments, injected), prompt.result)

            if context is None:  # nothing to stream: the reply may leave where it ran
                outcome, early = render, request
            else:
                work = self.executor.prepare(render, record)
                outcome = self.rounds.start(work, record, context, f"prompts/get {name}", request)
        what = f"rendering prompt '{name}'"
        result: dict[str, Any] = await self._run_user(record, outcome, what, early)
        return result

    async def complete(self, request: RequestContext) -> dict[str, Any]:
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
            target = self.registry.prompts.get(required_str(ref, "name", "ref."))
            if target is None:
                raise invalid_params(f"Unknown prompt: {ref['name']}")
        elif ref.get("type") == "ref/resource":
            target = self.registry.templates.get(required_str(ref, "uri", "ref."))
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
            raise request_error(exc, what) from exc
        if not (isinstance(result, dict) and result.get("resultType") == "input_required"):
            record.finish("done", result=result)
        return result

    def _answer(
        self, request: RequestContext, record: CallRecord, what: str, ok: bool, value: Any
    ) -> Any:
        """Where a reader or renderer ran: its reply (result or error) now, then its record."""
        if not ok:
            error = request_error(value, what)
            if not request.cancelled:
                request.reply(jsonrpc.error_response(request.id, error))
                record.finish("error", error=value)
            raise error
        if not request.cancelled:
            request.reply(response(request, value))
            record.finish("done", result=value)
        return value


def _suggest(completer: Any, value: str, known: dict[str, Any]) -> Any:
    """A completer is a list of candidates, or a function of (value[, arguments])."""
    if callable(completer):
        accepts_context = len(inspect.signature(completer).parameters) > 1
        found = completer(value, known) if accepts_context else completer(value)
        return then(found, list)
    return [c for c in completer if str(c).startswith(value)]
