"""Multi round-trip requests (2026-07-28): a tool asks for client input by returning.

On the handshake era a tool's ``ctx.elicit()`` sends ``elicitation/create`` to the client
and waits. On 2026-07-28 the server cannot send requests; instead the call answers with an
``InputRequiredResult`` listing what it needs, and the client retries the call with
``inputResponses``. Here the tool's coroutine simply stays suspended in between: the retry
brings the answers, the coroutine resumes. ``requestState`` names the suspended call; it is
signed with a per-server secret, so a client can neither forge nor alter it.

A retry without ``requestState`` runs the tool afresh with the given answers available by
key, which is what a stateless client (or a server restart) needs.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import itertools
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from ..wire import jsontext
from .codes import SERVER_ERROR
from .jsonrpc import INVALID_PARAMS, RpcError

# How long a suspended call waits for its retry before it is cancelled.
CONTINUATION_TTL = 600.0
# Calls suspended at once, at most (each holds its tool's coroutine until answered).
MAX_SUSPENDED = 1000
# After the first request for input, wait this long for others made at once (a gather).
SETTLE_SECONDS = 0.03

ELICIT_ACTIONS = ("accept", "decline", "cancel")


def _elicit_problem(result: dict[str, Any]) -> str | None:
    if result.get("action") not in ELICIT_ACTIONS:
        return 'action must be "accept", "decline" or "cancel"'
    content = result.get("content")
    if content is None:
        return None
    if not isinstance(content, dict):
        return f"content must be an object, not {_kind(content)}"
    for name, value in content.items():
        flat = isinstance(value, (str, int, float))  # bool is an int
        if not flat and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return (
                f"content[{name[:64]!r}] must be a string, number, boolean or list of "
                f"strings, not {_kind(value)}"
            )
    return None


def _sampling_problem(result: dict[str, Any]) -> str | None:
    if result.get("role") not in ("user", "assistant"):
        return 'role must be "user" or "assistant"'
    content = result.get("content")
    blocks = content if isinstance(content, list) else [content]
    if not all(isinstance(block, dict) for block in blocks):
        return "content must be a content block or a list of them"
    return None


def _roots_problem(result: dict[str, Any]) -> str | None:
    roots = result.get("roots")
    if not isinstance(roots, list):
        return "roots must be a list"
    if not all(isinstance(root, dict) and isinstance(root.get("uri"), str) for root in roots):
        return "each root must be an object with a string uri"
    return None


_RESPONSE_CHECKS = {
    "elicitation/create": _elicit_problem,
    "sampling/createMessage": _sampling_problem,
    "roots/list": _roots_problem,
}


def answer_problem(method: str, response: Any) -> str | None:
    """What is wrong with a client's result of ``method``, or None (both eras check it:
    a tool must never receive, say, an elicitation ``content`` that is not an object)."""
    if not isinstance(response, dict):
        return f"the result must be an object, not {_kind(response)}"
    return _RESPONSE_CHECKS[method](response)


def _kind(value: Any) -> str:
    """A JSON value's kind, as a client would name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def check_response(key: str, method: str, response: Any) -> dict[str, Any]:
    problem = answer_problem(method, response)
    if problem is not None:
        raise RpcError(
            INVALID_PARAMS,
            f"Invalid input response {key[:64]!r}: not a valid result of {method}: {problem}",
        )
    return response  # type: ignore[no-any-return]


class Asker:
    """The input requests of one call, answered from ``inputResponses`` by key."""

    def __init__(self, responses: dict[str, Any] | None = None) -> None:
        self.responses = dict(responses or {})
        self.pending: dict[str, tuple[dict[str, Any], asyncio.Future[Any]]] = {}
        self.asked = asyncio.Event()
        self._numbers: dict[str, itertools.count[int]] = {}

    def ask(self, method: str, params: dict[str, Any], key: str | None) -> asyncio.Future[Any]:
        """On the server loop: a future for the client's answer to this request."""
        if key is None:
            prefix = method.split("/")[0]
            key = f"{prefix}-{next(self._numbers.setdefault(prefix, itertools.count(1)))}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if key in self.responses:
            try:
                future.set_result(check_response(key, method, self.responses.pop(key)))
            except RpcError as error:
                future.set_exception(error)
            return future
        self.pending[key] = ({"method": method, "params": params}, future)
        self.asked.set()
        return future

    def supply(self, responses: dict[str, Any]) -> None:
        """A retry's answers: resolve what is pending, keep the rest for later asks.

        The rest replaces what an earlier retry left: kept across retries, answers to
        questions never asked would pile up without bound (one body's worth per retry)."""
        later: dict[str, Any] = {}
        for key, response in responses.items():
            waiting = self.pending.pop(key, None)
            if waiting is None:
                later[key] = response  # unknown keys are kept, never an error
                continue
            method = waiting[0]["method"]
            try:
                waiting[1].set_result(check_response(key, method, response))
            except RpcError as error:
                self.pending[key] = waiting  # still unanswered
                raise error
        self.responses = later
        if not self.pending:
            self.asked.clear()

    def input_requests(self) -> dict[str, Any]:
        return {key: request for key, (request, _) in self.pending.items()}


@dataclass(eq=False)
class Suspended:
    """A call waiting for its retry."""

    run: asyncio.Future[Any]
    asker: Asker
    target: str
    context: Any = None
    record: Any = None
    created: float = field(default_factory=time.monotonic)


class Continuations:
    """Suspended calls by signed ``requestState``."""

    def __init__(self, limit: int = MAX_SUSPENDED) -> None:
        self._secret = secrets.token_bytes(32)
        self._waiting: dict[str, Suspended] = {}
        self.limit = limit

    def suspend(self, call: Suspended) -> str:
        self._expire()
        if len(self._waiting) >= self.limit:
            # Each one holds a tool's coroutine for CONTINUATION_TTL: refused, and its work
            # stopped, as the task store refuses a task when full (tasks.py).
            call.run.cancel()
            refused = RpcError(
                SERVER_ERROR,
                f"Too many calls wait for input ({len(self._waiting)}): answer them, or "
                "retry when some have ended",
            )
            if call.record is not None:
                call.record.finish("error", error=refused)
            raise refused
        key = secrets.token_urlsafe(12)
        self._waiting[key] = call
        return self._sign({"k": key, "t": call.target})

    def resume(self, state: Any, target: str) -> Suspended:
        """The call a retry's ``requestState`` names; a clear error if it is not one of ours."""
        payload = self._verify(state)
        if payload.get("t") != target:
            raise RpcError(INVALID_PARAMS, "requestState belongs to a different request")
        call = self._waiting.pop(payload.get("k", ""), None)
        if call is None:
            raise RpcError(
                INVALID_PARAMS,
                "requestState is stale or unknown (the call ended, expired, or the server "
                "restarted): retry without requestState",
            )
        return call

    def keep(self, call: Suspended, state: str) -> None:
        """Put back a call taken by ``resume`` (its retry was rejected)."""
        self._waiting[self._verify(state)["k"]] = call

    def _sign(self, payload: dict[str, Any]) -> str:
        body = base64.urlsafe_b64encode(jsontext.dumps(payload)).decode().rstrip("=")
        return f"{body}.{self._mac(body)}"

    def _mac(self, body: str) -> str:
        digest = hmac.new(self._secret, body.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def _verify(self, state: Any) -> dict[str, Any]:
        # Tokens we issue are ASCII; anything else is not one (and compare_digest refuses
        # non-ASCII str), so it fails the check like any other forgery.
        if isinstance(state, str) and state.isascii() and state.count(".") == 1:
            body, mac = state.split(".")
            if hmac.compare_digest(mac, self._mac(body)):
                try:
                    kept: dict[str, Any] = jsontext.loads(
                        base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
                    )
                    return kept
                except ValueError:
                    pass
        raise RpcError(INVALID_PARAMS, "requestState integrity check failed")

    def _expire(self) -> None:
        now = time.monotonic()
        for key, call in list(self._waiting.items()):
            if now - call.created > CONTINUATION_TTL:
                del self._waiting[key]
                call.run.cancel()

    def close(self) -> None:
        for call in self._waiting.values():
            call.run.cancel()
        self._waiting.clear()
