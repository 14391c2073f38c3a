"""Who must approve a tool call, and asking the client when no person is there.

:class:`Confirmer` is the ``Server.confirm`` hook, which :class:`Confirmation` (the
interceptor of ``tools/call`` that asks before a tool runs) calls. The policy says which tools ask
first: ``"marked"`` (the default: tools registered with ``confirm=True``), ``"all"``,
``"none"`` (not even marked ones), ``"destructive"`` (marked ones and those whose
``destructiveHint`` is true) or a tuple of tool names (those and the marked ones). In a
notebook the person at the keyboard answers (the front end the app holds as ``app.ui``,
see ``ui/hub.py``). Headless (``mcp-notebook serve``, an export) nobody is at a notebook,
and ``app.confirm_headless`` says what happens instead (:data:`HEADLESS`): ``"deny"`` (the
default) refuses the call; ``"elicit"`` asks the client's user through elicitation (the
client answers: it protects a person using an honest client, not against a misbehaving
one); ``"allow"`` runs it unasked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

from .calls import CallRecord
from .context import Context
from .interceptors import Next, ToolCall
from .jsonrpc import RpcError
from .mrtr import Asker
from .outcomes import Declined, Result
from .session import ClientUnavailable, Session
from .tasklink import TaskLink
from .versions import FIRST_MODERN

# The arguments to run ``call`` with: its own (the very dict) when nobody is asked, else
# an awaitable of what the person approved (maybe edited); raises Declined.
Confirm = Callable[[ToolCall], "dict[str, Any] | Awaitable[dict[str, Any]]"]

POLICIES = ("marked", "all", "none", "destructive")
Policy = str | tuple[str, ...]


def parse_policy(value: str | Iterable[str]) -> Policy:
    """A policy keyword, or tool names (a string of them, or any iterable)."""
    words = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    if not words:
        raise ValueError(f"a confirmation policy is one of {', '.join(POLICIES)} or tool names")
    if len(words) == 1 and words[0] in POLICIES:
        return words[0]
    clash = [w for w in words if w in POLICIES]
    if clash:
        raise ValueError(f"{clash[0]!r} is a policy of its own: give it alone, not with names")
    if not all(isinstance(w, str) and w for w in words):
        raise ValueError("tool names must be non-empty strings")
    return tuple(dict.fromkeys(words))


def needs_confirmation(policy: Policy, tool: Any) -> bool:
    if policy == "none":
        return False
    if policy == "all" or tool.confirm:
        return True
    if policy == "destructive":
        return (tool.annotations or {}).get("destructiveHint") is True
    return isinstance(policy, tuple) and tool.name in policy


def describe(policy: Policy) -> str:
    return ", ".join(policy) if isinstance(policy, tuple) else policy


class FrontEnd(Protocol):
    """Where a person may approve calls: the notebook's (``ui.hub.Hub``)."""

    @property
    def attached(self) -> bool:
        """Whether a person may be watching (not under headless serving)."""
        ...

    async def ask(
        self,
        tool: Any,
        arguments: dict[str, Any],
        session: Session,
        record: CallRecord,
        timeout: float,
    ) -> dict[str, Any]:
        """The arguments the person approved (maybe edited), or raise Declined."""
        ...


class Confirmation:
    """Interceptor: ``confirm`` (the server's hook) decides before the tool runs; edited
    arguments are checked again, and run in place of the client's. In the chain only
    while a hook is set; a call nobody is asked about goes on at once."""

    def __init__(self, confirm: Confirm) -> None:
        self.confirm = confirm

    def __call__(self, call: ToolCall, next: Next) -> Awaitable[Result]:
        answer = self.confirm(call)
        if answer is call.arguments:  # not asked: nothing to wait for, nothing to check
            return next(call)
        return self._asked(answer, call, next)

    @staticmethod
    async def _asked(
        answer: dict[str, Any] | Awaitable[dict[str, Any]], call: ToolCall, next: Next
    ) -> Result:
        arguments = answer if isinstance(answer, dict) else await answer
        assert call.tool is not None
        problem = call.tool.argument_error(arguments)  # the user may have edited them
        if problem is not None:
            raise Declined(problem)
        call.arguments = arguments
        return await next(call)


class Confirmer:
    """``server.confirm = Confirmer(app).confirm``; reads the app's policy on every call.

    ``app`` has ``confirm_policy``, ``confirm_timeout``, ``ui`` (a :class:`FrontEnd` or
    None) and ``confirm_headless`` (one of :data:`HEADLESS`).
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    def confirm(self, call: ToolCall) -> dict[str, Any] | Awaitable[dict[str, Any]]:
        """The call's own arguments when nobody is to be asked; else the question."""
        tool, arguments, record = call.tool, call.arguments, call.record
        assert tool is not None  # visibility let it through
        if not needs_confirmation(self.app.confirm_policy, tool):
            return arguments
        assert record is not None  # asked after the call is recorded
        session, request_id, asker = call.request.session, call.request.id, call.asker
        timeout = float(self.app.confirm_timeout)
        ui: FrontEnd | None = self.app.ui
        if ui is not None and ui.attached:
            record.approver = "notebook"
            return ui.ask(tool, arguments, session, record, timeout)
        mode = getattr(self.app, "confirm_headless", "deny")
        if mode == "allow":
            return arguments
        if mode == "elicit":
            return ask_client(tool, arguments, session, record, request_id, timeout, asker)
        raise Declined(
            f"Tool '{tool.name}' needs a person's confirmation, and no notebook front end is "
            "attached: this server refuses such calls (confirmations: deny). To have the "
            "client's user asked, serve with `--confirm elicit` (the export: "
            "MCP_NOTEBOOK_CONFIRM=elicit; in code: mcp.confirm_headless = 'elicit'), or open "
            "the notebook in Jupyter."
        )


def _question(tool: Any, arguments: dict[str, Any]) -> str:
    return (
        f"Allow the notebook tool '{tool.name}' to run with these arguments?\n"
        f"{json.dumps(arguments, indent=2, default=str)}"
    )


async def _ask_in_task(
    asker: Asker, tool: Any, arguments: dict[str, Any], record: CallRecord, timeout: float
) -> dict[str, Any]:
    record.set_status("awaiting confirmation")
    params = {
        "mode": "form",
        "message": _question(tool, arguments),
        "requestedSchema": {"type": "object", "properties": {}},
    }
    try:
        answer = await asyncio.wait_for(
            asker.ask("elicitation/create", params, f"confirm-{record.id}"), timeout
        )
    except asyncio.TimeoutError:
        raise Declined(
            f"Tool '{tool.name}' was not run: the user gave no answer within {timeout:g} s."
        ) from None
    if answer.get("action") == "accept":
        return arguments
    raise Declined(f"The user declined to run tool '{tool.name}' ({answer.get('action')}).")


async def ask_client(
    tool: Any,
    arguments: dict[str, Any],
    session: Session,
    record: CallRecord,
    request_id: Any,
    timeout: float,
    asker: Asker | TaskLink | None = None,
) -> dict[str, Any]:
    """No notebook is watching: ask the client's user, or deny and say how to allow it.

    The question goes out related to ``request_id``, the call's request, so that it
    travels on that request's stream (an HTTP POST's SSE response) where the client
    expects it; for a 2026-07-28 task (``asker``, its input requests) it becomes one of
    the task's input requests instead; for a 2025-11-25 task (a ``TaskLink``) it names
    the task in its ``_meta`` and the task is input_required until the answer is in.
    """
    record.approver = "client"
    how = (
        "To let it run without asking, change the policy in the notebook: `%mcp confirm none` "
        "(or `mcp.confirm_policy = 'none'`), or register the tool without confirm=True."
    )
    if getattr(session, "era", "handshake") == "modern":
        if isinstance(asker, Asker) and "elicitation" in session.client_capabilities:
            # A task: the question is one of its input requests (tasks/get shows it,
            # tasks/update answers it); no request is held open meanwhile.
            return await _ask_in_task(asker, tool, arguments, record, timeout)
        # Otherwise 2026-07-28 asks through input-required results, which only a running
        # tool can produce (protocol/mrtr.py); the confirmation comes before it starts.
        raise Declined(
            f"Tool '{tool.name}' needs the user's confirmation, but no notebook front end is "
            f"attached and a {FIRST_MODERN} client cannot be asked before a tool starts. {how}"
        )
    if "elicitation" not in session.client_capabilities:
        raise Declined(
            f"Tool '{tool.name}' needs the user's confirmation, but no notebook front end is "
            f"attached and this client cannot ask its user (no elicitation). {how}"
        )
    record.set_status("awaiting confirmation")
    loop = asyncio.get_running_loop()
    context = Context(session, loop, request_id)
    if isinstance(asker, TaskLink):
        context.related_task, context.on_asking = asker.task_id, asker.asking
    try:
        answer = await asyncio.wait_for(context.elicit(_question(tool, arguments)), timeout)
    except asyncio.TimeoutError:
        raise Declined(
            f"Tool '{tool.name}' was not run: the user gave no answer within {timeout:g} s."
        ) from None
    except (ClientUnavailable, RpcError) as exc:
        raise Declined(
            f"Tool '{tool.name}' needs the user's confirmation, but the client could not be "
            f"asked ({exc}). {how}"
        ) from None
    if answer.accepted:
        return arguments
    raise Declined(f"The user declined to run tool '{tool.name}' ({answer.action}).")
