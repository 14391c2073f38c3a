"""``Context``: what a tool can do with the client while it runs.

Tools run on the kernel thread; the session lives on the server's loop. Every method here
crosses over with ``call_soon_threadsafe`` / ``run_coroutine_threadsafe``, so a tool may
use it from either thread, and notifications keep their order relative to the result.
"""

from __future__ import annotations

import asyncio
import numbers
import threading
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from ..errors import McpNotebookError
from ..registry.injected import Injected
from ..registry.validation import SchemaCheck
from .caller import Caller
from .jsonrpc import INVALID_PARAMS, MISSING_CAPABILITY, RpcError
from .mrtr import Asker, answer_problem
from .names import META_RELATED_TASK as RELATED_TASK
from .progress import ProgressLine
from .session import LOG_LEVELS, Session


class CapabilityError(McpNotebookError, RuntimeError):
    """The client did not declare the capability this call needs."""


@dataclass(frozen=True)
class ElicitResult:
    action: str  # "accept" | "decline" | "cancel"
    content: dict[str, Any] | None = None

    @property
    def accepted(self) -> bool:
        return self.action == "accept"


class Context(Injected):
    """Annotate a tool parameter with ``Context`` to receive one per call.

    ``ctx.caller`` is who called when the server checks OAuth access tokens (``subject``,
    ``client_id``, ``scopes``, ``issuer``, ``expires``; ``who`` for a short line), else None.
    """

    def __init__(
        self,
        session: Session,
        loop: asyncio.AbstractEventLoop,
        request_id: Any = None,
        progress_token: Any = None,
        progress_line: ProgressLine | None = None,
    ) -> None:
        self.session = session
        self.request_id = request_id
        self.progress_token = progress_token
        self._loop = loop
        self._cancelled = threading.Event()
        self._last_progress: float | None = None
        # Shared with the server's notices on the same token (queueing.py): together they
        # increase.
        self._line = progress_line or ProgressLine()
        # 2026-07-28: requests to the client become input requests of the call (MRTR).
        self.asker: Asker | None = None
        # Set when the call is a task: its progress goes to the task store too.
        self.on_progress: Callable[[float, float | None], None] | None = None
        # A 2025-11-25 task: its requests to the client name the task (related-task) and
        # ``on_asking(True/False)`` moves it to input_required and back.
        self.related_task: str | None = None
        self.on_asking: Callable[[bool], None] | None = None
        # Who called, when the server checks OAuth access tokens: ``ctx.caller.subject``,
        # ``.client_id``, ``.scopes``, ``.issuer``, ``.expires``. None otherwise.
        self.caller: Caller | None = None

    # -- about the call ----------------------------------------------------------------
    @property
    def client_info(self) -> dict[str, Any]:
        return dict(self.session.client_info)

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return dict(self.session.client_capabilities)

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this call (check it in long loops)."""
        return self._cancelled.is_set()

    def _cancel(self) -> None:
        self._cancelled.set()

    # -- notifications -----------------------------------------------------------------
    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` (only if the client asked, with a progressToken)."""
        progress = _number("progress", progress)
        total = None if total is None else _number("total", total)
        if message is not None and not isinstance(message, str):
            raise TypeError(f"report_progress: message must be a str, not {message!r}")
        if self._last_progress is not None and progress <= self._last_progress:
            raise ValueError(f"progress must increase: {progress} after {self._last_progress}")
        self._last_progress = progress
        if self.on_progress is not None:
            self.on_progress(progress, total)
        if self.progress_token is None:
            return
        token = self.progress_token

        def send() -> None:  # on the server's loop, where the notices' values are decided
            sent, out_of = self._line.own(progress, total)
            params: dict[str, Any] = {"progressToken": token, "progress": sent}
            if out_of is not None:
                params["total"] = out_of
            if message is not None:
                params["message"] = message
            self.session.notify("notifications/progress", params, self.request_id)

        if _on_loop(self._loop):
            send()
        else:
            self._loop.call_soon_threadsafe(send)

    def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` at an RFC 5424 level, if the client wants it."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}: use one of {', '.join(LOG_LEVELS)}")
        if not self.session.wants_log(level):
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._notify("notifications/message", params)

    def debug(self, data: Any, logger: str | None = None) -> None:
        self.log("debug", data, logger)

    def info(self, data: Any, logger: str | None = None) -> None:
        self.log("info", data, logger)

    def warning(self, data: Any, logger: str | None = None) -> None:
        self.log("warning", data, logger)

    def error(self, data: Any, logger: str | None = None) -> None:
        self.log("error", data, logger)

    def _notify(self, method: str, params: dict[str, Any]) -> None:
        if _on_loop(self._loop):
            self.session.notify(method, params, self.request_id)
        else:
            self._loop.call_soon_threadsafe(self.session.notify, method, params, self.request_id)

    def close_sse_stream(self, retry_ms: int | None = None) -> bool:
        """Close this call's SSE connection now; the client reconnects and resumes it.

        Useful for long calls behind proxies that drop idle connections. Returns False
        when the transport cannot do it (e.g. the reply is not being streamed).
        """
        closer = self.session.close_stream
        if closer is None:
            return False
        if _on_loop(self._loop):
            return closer(self.request_id, retry_ms)
        self._loop.call_soon_threadsafe(closer, self.request_id, retry_ms)
        return True

    # -- requests to the client ----------------------------------------------------------
    async def elicit(
        self, message: str, schema: dict[str, Any] | None = None, *, key: str | None = None
    ) -> ElicitResult:
        """Ask the user for input (form mode); ``schema`` is the spec's restricted schema.

        ``key`` names the request on 2026-07-28, where the client answers by key.
        """
        self._require("elicitation", "form")
        requested = schema or {"type": "object", "properties": {}}
        result = await self._request(
            "elicitation/create",
            {"mode": "form", "message": message, "requestedSchema": requested},
            key,
        )
        action, content = result.get("action", "cancel"), result.get("content")
        if action == "accept":
            _check_form(requested, content)
        return ElicitResult(action, content)

    async def elicit_url(
        self,
        message: str,
        url: str,
        elicitation_id: str | None = None,
        *,
        key: str | None = None,
    ) -> ElicitResult:
        """Send the user to a URL (URL mode), e.g. to sign in somewhere."""
        self._require("elicitation", "url")
        params = {"mode": "url", "message": message, "url": url}
        if self.asker is None:  # 2026-07-28 dropped the id: the retry itself correlates
            params["elicitationId"] = elicitation_id or uuid.uuid4().hex
        result = await self._request("elicitation/create", params, key)
        return ElicitResult(result.get("action", "cancel"), result.get("content"))

    async def sample(
        self,
        messages: str | list[dict[str, Any]],
        *,
        max_tokens: int = 512,
        system_prompt: str | None = None,
        key: str | None = None,
        **options: Any,
    ) -> dict[str, Any]:
        """Ask the client's model (``sampling/createMessage``); returns the raw result."""
        self._require("sampling")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {"messages": messages, "maxTokens": max_tokens, **options}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        return await self._request("sampling/createMessage", params, key)

    async def list_roots(self, *, key: str | None = None) -> list[dict[str, Any]]:
        """The client's roots (``roots/list``)."""
        self._require("roots")
        result = await self._request("roots/list", {}, key)
        return list(result.get("roots", []))

    def require_capability(self, capability: str) -> None:
        """Fail the call now, the way the protocol prescribes, unless the client has it.

        On 2026-07-28 that is a ``-32021`` error naming the capability; before, a tool error.
        """
        self._require(capability)

    def _require(self, capability: str, mode: str | None = None) -> None:
        declared = self.session.client_capabilities.get(capability)
        if declared is None:
            message = (
                f"the client did not declare the '{capability}' capability, so this "
                "tool cannot use it"
            )
            if self.asker is not None:  # 2026-07-28: a protocol error the client can act on
                raise MissingCapabilityError(capability, message)
            raise CapabilityError(message)
        # An empty elicitation capability means form mode only (2025-06-18 clients).
        if mode == "url" and not (isinstance(declared, dict) and "url" in declared):
            raise CapabilityError("the client does not support URL-mode elicitation")

    async def _request(
        self, method: str, params: dict[str, Any], key: str | None = None
    ) -> dict[str, Any]:
        if self.asker is not None:
            coroutine = _answer(self.asker, method, params, key)
        else:
            if self.related_task is not None:
                meta = {**params.get("_meta", {}), RELATED_TASK: {"taskId": self.related_task}}
                params = {**params, "_meta": meta}
            coroutine = self.session.request(method, params, self.request_id)
        asking = self.on_asking
        if asking is not None:
            asking(True)
        try:
            if _on_loop(self._loop):
                reply: dict[str, Any] = await coroutine
            else:
                reply = await _across(coroutine, self._loop)
        finally:
            if asking is not None:
                asking(False)
        problem = answer_problem(method, reply) if self.asker is None else None  # MRTR: checked
        if problem is not None:
            # The client's answer, not the tool, is at fault: the tool gets (and may catch)
            # the same -32602 a 2026-07-28 retry with this answer gets.
            raise RpcError(
                INVALID_PARAMS, f"Invalid response from the client to {method}: {problem}"
            )
        return reply


def _number(label: str, value: Any) -> float:
    """A progress value as JSON carries it: an int stays one (numpy's too), any other
    real number becomes a float; anything else is the tool's mistake, named."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"report_progress: {label} must be a number, not {value!r}")
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def _check_form(requested: dict[str, Any], content: Any) -> None:
    """A form the user accepted holds what the tool asked for ("Servers SHOULD validate
    received data matches the requested schema"): else the tool gets a -32602, as for any
    malformed answer, never a value of another type than it asked for."""
    error = SchemaCheck(requested).error({} if content is None else content)
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path)
        raise RpcError(
            INVALID_PARAMS,
            "Invalid response from the client to elicitation/create: the form's content "
            f"does not match the requested schema: {where + ': ' if where else ''}{error.message}",
        )


async def _answer(asker: Asker, method: str, params: dict[str, Any], key: str | None) -> Any:
    return await asker.ask(method, params, key)


class MissingCapabilityError(RpcError):
    """2026-07-28: the request needs a client capability its ``_meta`` did not declare."""

    def __init__(self, capability: str, message: str) -> None:
        super().__init__(MISSING_CAPABILITY, message, {"requiredCapabilities": {capability: {}}})


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


async def _across(coroutine: Coroutine[Any, Any, Any], loop: asyncio.AbstractEventLoop) -> Any:
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()
        raise
