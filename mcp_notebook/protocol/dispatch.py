"""JSON-RPC below MCP: parse, classify, route to a method table, one error funnel.

A :class:`Dispatcher` knows nothing of MCP. Each dialect gives it a method table per
context (the MCP server one per era, the seed-000 session one) and says how a handler is
called; the dispatcher does the rest, the same way for all of them:

- a payload that is not JSON is ``-32700`` (:meth:`Dispatcher.receive`);
- a message that is neither a request, a notification nor a response is ``-32600``,
  answered to its id when it has one a reply may echo, else without an id;
- a notification goes to ``notified``, a response to ``answered``: never a reply;
- a request gets exactly one reply: its result, or ``-32601`` for a method not in the
  table, the handler's :class:`RpcError`, or ``-32603`` for any other exception (logged
  here, the one place). The only request without a reply is one the client cancelled:
  its handler returns :data:`NO_REPLY`.

Dialects reshape errors (the seed dialect puts a phrase in ``message``) through
``public``, applied to every error the dispatcher sends.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from . import jsonrpc
from .codes import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND
from .jsonrpc import Message, RpcError

logger = logging.getLogger(__name__)

Kind = Literal["request", "notification", "response"]
C = TypeVar("C")  # what a dialect passes along with each message (a Session, or nothing)
H = TypeVar("H")  # a handler in the dialect's method table


class _NoReply:
    def __repr__(self) -> str:
        return "NO_REPLY"


# What a handler returns for a request that must not be answered (the client cancelled it).
NO_REPLY: Any = _NoReply()


@dataclass(slots=True)  # not frozen: a frozen __init__ costs a setattr call per field
class Request:
    """A request that passed classification: its id is one a reply may echo."""

    id: str | int
    method: str
    params: dict[str, Any]


# request, notification or response; raises ``-32600`` for anything else (a batch too:
# MCP has none since 2025-06-18, and a dialect that has them splits them first). The
# function itself, not a wrapper: it runs for every message.
classify: Callable[[Any], Kind] = jsonrpc.kind  # type: ignore[assignment]


def method_not_found(method: str) -> RpcError:
    return RpcError(METHOD_NOT_FOUND, f"Method not found: {method}", {"method": method})


def internal_error(exc: BaseException) -> RpcError:
    return RpcError(INTERNAL_ERROR, f"Internal error: {exc}")


def _unchanged(error: RpcError) -> RpcError:
    return error


def _ignore(message: Message, context: Any) -> None:
    return None


class Dispatcher(Generic[C, H]):
    """One dialect's JSON-RPC: ``await dispatcher.dispatch(message, context)``.

    ``methods(context)`` is the method table for this context (an era's, a dialect's);
    ``invoke(handler, request, context)`` calls a handler and returns its result.
    ``admit(request, context)``, if given, runs before the method is looked up and may
    refuse the request with an :class:`RpcError` (a lifecycle gate); ``shape(request,
    result, context)`` may finish a result before it is sent.
    """

    def __init__(
        self,
        methods: Callable[[C], Mapping[str, H]],
        invoke: Callable[[H, Request, C], Awaitable[Any]],
        *,
        notified: Callable[[Message, C], None] = _ignore,
        answered: Callable[[Message, C], None] = _ignore,
        admit: Callable[[Request, C], Awaitable[None]] | None = None,
        shape: Callable[[Request, Any, C], Any] | None = None,
        not_found: Callable[[str], RpcError] = method_not_found,
        internal: Callable[[BaseException], RpcError] = internal_error,
        public: Callable[[RpcError], RpcError] = _unchanged,
        log: logging.Logger = logger,
    ) -> None:
        self.methods, self.invoke = methods, invoke
        self.notified, self.answered = notified, answered
        self.admit, self.shape = admit, shape
        self.not_found, self.internal, self.public = not_found, internal, public
        self.log = log

    async def receive(self, data: bytes | str, context: C) -> Message | None:
        """Parse a payload and dispatch it; ``-32700`` (no id) when it is not JSON."""
        try:
            message = jsonrpc.parse(data)
        except RpcError as error:
            return self.error(jsonrpc.refused_id(error), error)
        return await self.dispatch(message, context)

    async def dispatch(self, message: Any, context: C) -> Message | None:
        """The one reply to a request; None for notifications, responses and cancels."""
        try:
            kind = classify(message)
        except RpcError as error:
            return self.error(jsonrpc.readable_id(message), error)
        if kind == "notification":
            self.notified(message, context)
            return None
        if kind == "response":
            self.answered(message, context)
            return None
        request = Request(message["id"], message["method"], message.get("params") or {})
        try:
            if self.admit is not None:
                await self.admit(request, context)
            handler = self.methods(context).get(request.method)
            if handler is None:
                raise self.not_found(request.method)
            result = await self.invoke(handler, request, context)
        except RpcError as error:
            return self.error(request.id, error)
        except Exception as exc:
            self.log.exception("internal error handling %s", request.method)
            return self.error(request.id, self.internal(exc))
        if result is NO_REPLY:
            return None
        if self.shape is not None:
            result = self.shape(request, result, context)
        return jsonrpc.response(request.id, result)

    async def dispatch_batch(self, batch: list[Any], context: C) -> list[Message] | Message | None:
        """A JSON-RPC 2.0 batch (for dialects that have them): each message in order; the
        replies in a list, None if there are none; an empty batch is one ``-32600``."""
        if not batch:
            return self.error(None, RpcError(INVALID_REQUEST, "Empty batch"))
        replies = [await self.dispatch(item, context) for item in batch]
        return [r for r in replies if r is not None] or None

    def error(self, request_id: Any, error: RpcError) -> Message:
        """The error reply, in the dialect's shape (the one place errors are built)."""
        return jsonrpc.error_response(request_id, self.public(error))
