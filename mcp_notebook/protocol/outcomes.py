"""What user code's end becomes: a reply, a tool error, a recorded status.

Shared by the tool-call core (:mod:`.toolcalls`), its interceptors and the other calls
into user code (:mod:`.usercalls`). Failures of user code are tool errors (``isError``)
for tools and JSON-RPC errors otherwise; the traceback stays in the notebook
(``mcp.calls``), the client gets the message.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from ..errors import McpNotebookError
from ..registry import ArgumentError
from ..registry.content import error_result
from ..registry.redact import redact
from . import jsonrpc, modern
from .calls import CallRecord
from .context import Context
from .executor import settle
from .jsonrpc import SERVER_ERROR, Message, RpcError, invalid_params
from .kinds import FinalStatus
from .request import RequestContext

Result = dict[str, Any]
T = TypeVar("T")
Outcome = tuple[Result, FinalStatus | None, BaseException | None]


class Declined(McpNotebookError):
    """The user (or the confirmation policy) did not let a tool run; the message says why."""


def response(request: RequestContext, result: Result) -> Message:
    """The reply ``Server.handle`` would give (a call that replies early builds it)."""
    if request.session.era == "modern":
        result = modern.shape(request.method, result)
    return jsonrpc.response(request.id, result)


async def settled(
    step: Callable[[T], Awaitable[Result]],
    given: T,
    record: CallRecord,
    context: Context | None,
    denied_fails: bool = False,
) -> Result:
    """A tool call's reply (``step(given)``, what raises on the way to it included), its
    record finished; JSON-RPC errors and cancels go on. A denied call is a tool error,
    or (``denied_fails``: a task) a JSON-RPC error, which fails the task with the reason."""
    try:
        return await step(given)
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
        return recorded(record, tool_outcome(False, exc))


def tool_outcome(ok: bool, value: Any) -> Outcome:
    """The result of a tool call that returned (``ok``) or raised ``value``, with the
    status and error to record (no status while it waits for client input)."""
    if ok:
        return value, None if value.get("resultType") == "input_required" else "done", None
    if isinstance(value, RpcError):
        raise value  # a JSON-RPC error (e.g. a missing client capability), not a tool error
    message = f"{type(value).__name__}: {value}" if str(value) else type(value).__name__
    return error_result(redact(message)), "error", value


def recorded(record: CallRecord, outcome: Outcome) -> Result:
    result, status, error = outcome
    if status is not None:
        record.finish(status, result=None if error else result, error=error)
    return result


def then(value: Any, convert: Callable[[Any], Any]) -> Any:
    """``convert(value)``, after awaiting it if the user function was async."""
    if inspect.isawaitable(value):
        return _convert_later(value, convert)
    return convert(value)


async def _convert_later(awaitable: Any, convert: Callable[[Any], Any]) -> Any:
    return convert(await settle(awaitable))


def request_error(exc: BaseException, what: str) -> RpcError:
    """The JSON-RPC error of a reader, renderer or completer that raised ``exc``."""
    if isinstance(exc, RpcError):
        return exc
    if isinstance(exc, ArgumentError):
        return invalid_params(str(exc))
    return RpcError(jsonrpc.INTERNAL_ERROR, redact(f"Error {what}: {type(exc).__name__}: {exc}"))


def tool_arguments(params: dict[str, Any]) -> dict[str, Any]:
    given = params.get("arguments")
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise invalid_params("tools/call arguments must be an object")
    return given


def required_str(params: dict[str, Any], key: str, within: str = "") -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise invalid_params(f"params.{within}{key} must be a string")
    return value
