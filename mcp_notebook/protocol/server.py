"""The MCP methods over a Registry, sans-IO: ``await server.handle(message, session)``.

Transports decode bytes into messages, pick the session, and send back what ``handle``
returns (``None`` for notifications, responses and cancelled requests), unless the
reply channel they offered already delivered it (:mod:`.request`). Classification,
routing and turning exceptions into JSON-RPC errors happen in :mod:`.dispatch`; this
module gives it one method table per era. Every handler takes one
:class:`~.request.RequestContext`. The handlers are plain collaborators: ``tools/call``
(:mod:`.toolcalls`, a thin core behind a chain of interceptors that :mod:`.toolchain`
composes), the other calls into user code (:mod:`.usercalls`), tasks (:mod:`.taskcalls`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from ..registry import Registry, views
from . import dispatcher_tools, jsonrpc, lifecycle, modern, skills
from .caller import Caller
from .calls import CallLog
from .confirmation import Confirm
from .dispatch import NO_REPLY, Dispatcher, Request
from .executor import Executor, InlineExecutor
from .interceptors import Interceptor
from .jsonrpc import Message, RpcError, invalid_params
from .kinds import Era
from .lifecycle import Identity
from .listening import honored_filter
from .mrtr import Continuations
from .names import META_SUBSCRIPTION_ID as SUBSCRIPTION_ID
from .paging import page
from .request import RUN_USER_CODE, ReplyChannel, RequestContext
from .rounds import Rounds
from .session import LOG_LEVELS, Session, Tap, kept_description, tell_taps
from .taskcalls import TaskCalls
from .taskmethods import TaskMethods
from .tasks import TaskStore
from .toolcalls import ToolCalls
from .toolchain import ToolChain
from .usercalls import UserCalls
from .versions import TASKS_VERSION

logger = logging.getLogger(__name__)

Handler = Callable[[RequestContext], Awaitable[dict[str, Any]]]
Dispatch = Callable[[Any, RequestContext], Awaitable[Message | None]]


class Server:
    def __init__(
        self,
        registry: Registry,
        *,
        name: str = "mcp-notebook",
        version: str = "0",
        instructions: str | None = None,
        executor: Executor | None = None,
        page_size: int = 100,
        calls: CallLog | None = None,
        dispatcher: bool = False,
        tasks: TaskStore | None = None,
    ) -> None:
        self.registry = registry
        self.stateless_seen: Callable[[Session], None] | None = None  # the trace: 2026 clients
        # Tool calls answered with a task handle; the app's store outlives this server.
        self.tasks = tasks if tasks is not None else TaskStore()
        self.name, self.version, self.instructions = name, version, instructions
        self.executor: Executor = executor or InlineExecutor()
        self.page_size = page_size
        self.calls = calls if calls is not None else CallLog()
        # Every session sees the dispatcher's tools, else only clients that ask (not _dispatcher)
        self.dispatcher_tools_for_all = dispatcher
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.continuations = Continuations()
        rounds = Rounds(self.continuations, self.executor)
        self.task_calls = TaskCalls(self.tasks, rounds, self.executor)
        self.task_methods = TaskMethods(self.tasks, self.task_calls, page_size, self.sessions)
        self.tasks.observe(self.task_methods.changed)
        self.user_calls = UserCalls(registry, self.calls, self.executor, rounds)
        self.tool_calls = ToolCalls(registry, self.calls, self.executor, rounds)
        self.tool_chain = ToolChain(
            self.tool_calls, self.task_calls, rounds, self.offers_dispatcher
        )
        # Observers of every message in and out (add_tap); empty, they cost one truth test.
        self.taps: list[Tap] = []
        self.traced = False  # (telemetry.py) then HTTP adapters pass on the trace headers
        self.session_closed: list[Callable[[Session], None]] = []  # tracing's session metric
        self._taps_lock = threading.Lock()
        self._methods = self._method_tables()
        self._notifications: dict[str, Callable[[dict[str, Any], RequestContext], None]] = {
            "notifications/initialized": self._initialized,
            "notifications/cancelled": self._cancelled,
        }
        self._dispatcher: Dispatcher[RequestContext, Handler] = Dispatcher(
            self._table,
            self._invoke,
            notified=self._notification,
            answered=self._answered,
            shape=self._shape,
        )

    # -- tools/call's chain (protocol/toolchain.py) ------------------------------------------
    @property
    def confirm(self) -> Confirm | None:
        """Asks the person at the notebook before a tool runs (``Confirmer.confirm``):
        the arguments to use (maybe edited), or raises Declined. None: no confirmations."""
        return self.tool_chain.confirm

    @confirm.setter
    def confirm(self, confirm: Confirm | None) -> None:
        self.tool_chain.confirm = confirm  # in the chain from now on, or out of it

    def intercept(self, interceptor: Interceptor, *, before_record: bool = False) -> None:
        """Add ``interceptor`` to every ``tools/call``'s chain (protocol/toolchain.py):
        before the call is recorded, once its tool is known (it may refuse it unrecorded:
        authorization), or outermost around its run (it sees the record: tracing)."""
        self.tool_chain.plug(interceptor, before_record)

    def around_dispatch(self, wrap: Callable[[Dispatch], Dispatch]) -> None:
        """Wrap every message's dispatch from now on (tracing: protocol/telemetry.py)."""
        self._dispatcher.dispatch = wrap(self._dispatcher.dispatch)  # type: ignore[method-assign,assignment]

    def _method_tables(self) -> dict[Era, dict[str, Handler]]:
        """The method table of each era (``Session.era``), for the dispatcher."""
        user, tasks = self.user_calls, self.task_methods
        shared: dict[str, Handler] = {
            "tools/list": self._tools_list,
            "tools/call": self.tool_calls,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": user.resources_read,
            "prompts/list": self._prompts_list,
            "prompts/get": user.prompts_get,
            "completion/complete": user.complete,
        }
        # The methods of each era: 2026-07-28 removed the handshake, ping, setLevel and
        # resource subscriptions, and added discovery and listen streams.
        return {
            "handshake": {
                **shared,
                "initialize": self._initialize,
                "ping": self._ping,
                "logging/setLevel": self._set_level,
                "resources/subscribe": user.subscribe,
                "resources/unsubscribe": user.unsubscribe,
                # 2025-11-25's experimental tasks (a session's own)
                "tasks/get": tasks.handshake_get,
                "tasks/result": tasks.handshake_result,
                "tasks/list": tasks.handshake_list,
                "tasks/cancel": tasks.handshake_cancel,
            },
            "modern": {
                **shared,
                "server/discover": self._discover,
                "subscriptions/listen": self._listen,
                "tasks/get": tasks.get,
                "tasks/update": tasks.update,
                "tasks/cancel": tasks.cancel,
                # Agent Skills (protocol/skills.py); their files are resources in both eras.
                **skills.handlers(self.registry, self.page_size, self.calls),
            },
        }

    def serves(self, method: str, era: Era = "handshake") -> bool:
        return method in self._methods[era]

    # -- taps: watching the traffic (e.g. the notebook's trace view) -------------------------
    def add_tap(self, tap: Tap) -> None:
        """Call ``tap(direction, session, message)`` for every message from now on: "in"
        for what :meth:`handle` receives, "out" for the replies it returns and for what
        sessions send (notifications, requests to the client). Any thread may add one;
        taps run on the server's thread and must return quickly without raising."""
        with self._taps_lock:  # writers in turn; a slice assignment is one step for readers
            self.taps[:] = [*self.taps, tap]

    def remove_tap(self, tap: Tap) -> None:
        with self._taps_lock:  # != : bound methods are new each time
            self.taps[:] = [t for t in self.taps if t != tap]

    # -- sessions (all on the server's loop) ---------------------------------------------
    def open_session(self, session: Session) -> Session:
        session.taps = self.taps  # the same list: a tap added later sees this session too
        self.sessions[session.id] = session
        return session

    def close_session(self, session_id: str) -> Session | None:
        session = self.sessions.pop(session_id, None)
        if session is not None:
            session.close()
            for observer in self.session_closed:
                observer(session)
        return session

    def client_gone(self, session: Session, request_id: Any, task: Any) -> None:
        """A handshake-era request's client hung up and nothing can receive its reply:
        drop its call if it has not started (a started one runs on, as the spec allows).
        ``task`` serves the request that was cut off: another client of the session may
        have a request in flight under the same id, and that one is not touched."""
        request = session.in_flight.get(request_id)
        if request is not None and request.task is task and request.drop():
            logger.info("dropped queued request %r: its client hung up", request_id)

    def broadcast(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        to: Callable[[Session], bool] | None = None,
    ) -> None:
        for session in list(self.sessions.values()):
            if to is None or to(session):
                session.notify(method, params)

    def list_changed(self, kind: str) -> None:
        """Tell every session that wants to know that the ``kind`` list changed."""
        self.broadcast(f"notifications/{kind}/list_changed", to=lambda s: s.wants_change(kind))

    def resource_updated(self, uri: str) -> None:
        """Tell the sessions subscribed to ``uri`` that its content changed."""
        # A subscriber to a page of the resource (uri?offset=...) hears about it too.
        self.broadcast(
            "notifications/resources/updated",
            {"uri": uri},
            lambda s: any(u == uri or u.startswith(uri + "?") for u in s.subscriptions),
        )

    def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        """Send ``notifications/message`` to every session that listens at ``level``."""
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}: use one of {', '.join(LOG_LEVELS)}")
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        self.broadcast("notifications/message", params, lambda s: s.wants_log(level))

    # -- entry point -------------------------------------------------------------------
    async def handle(
        self,
        message: Any,
        session: Session,
        channel: ReplyChannel | None = None,
        caller: Caller | None = None,
        trace: dict[str, str] | None = None,
    ) -> Message | None:
        """The reply to ``message`` (None for notifications, responses and cancelled calls).

        ``channel``, if given, may deliver the reply of a ``tools/call`` from the thread
        that ran the tool, before this returns it (see :mod:`.request`); the taps see the
        reply when this returns it. ``caller``: who sent it (OAuth); ``trace``: its W3C
        trace headers, for a traced server."""
        if self.stateless_seen is not None and session.era == "modern":
            self.stateless_seen(session)  # the trace lists these clients: no session to list
        request = RequestContext(session, channel, caller)
        if trace is not None:
            request.trace = trace
        if self.taps:
            return await self._handle_tapped(message, request)
        reply = await self._dispatcher.dispatch(message, request)
        if reply is not None and request.armed:
            request.reply(reply)  # the channel's, unless a reply left already
        return reply

    async def _handle_tapped(self, message: Any, request: RequestContext) -> Message | None:
        """:meth:`handle`, shown to the taps (kept apart: untapped, it costs nothing)."""
        session = request.session
        session.taps = self.taps  # a 2026-07-28 request's session is never opened
        tell_taps(self.taps, "in", session, message)
        reply = await self._dispatcher.dispatch(message, request)
        if reply is not None:
            if request.armed:
                request.reply(reply)
            if self.taps:
                tell_taps(self.taps, "out", session, reply)
        return reply

    def _table(self, request: RequestContext) -> dict[str, Handler]:
        return self._methods[request.session.era]

    def _invoke(
        self, handler: Handler, request: Request, context: RequestContext
    ) -> Awaitable[Any]:
        context.id, context.method, context.params = request.id, request.method, request.params
        # Returns the handler's awaitable itself: no extra coroutine on the request path.
        if request.method in RUN_USER_CODE:
            return self._cancellable(handler, context)
        return handler(context)

    @staticmethod
    def _shape(request: Request, result: dict[str, Any], context: RequestContext) -> dict[str, Any]:
        if context.session.era == "modern":
            return modern.shape(request.method, result)
        return result

    async def _cancellable(self, handler: Handler, request: RequestContext) -> Any:
        # The request runs in the caller's task (no extra task on the hot path); only a
        # client's cancel of that task becomes "no response" (NO_REPLY).
        task = asyncio.current_task()
        assert task is not None
        request.task = task
        in_flight = request.session.in_flight
        in_flight[request.id] = request
        try:
            return await handler(request)
        except asyncio.CancelledError:
            if not request.by_client:
                raise
            uncancel = getattr(task, "uncancel", None)  # Python >= 3.11 counts cancels
            if uncancel is not None:
                uncancel()
            return NO_REPLY
        finally:
            if in_flight.get(request.id) is request:
                del in_flight[request.id]

    @property
    def identity(self) -> Identity:
        """Who this server is, for its handshake results (protocol/lifecycle.py)."""
        return Identity(self.name, self.version, self.instructions)

    async def _discover(self, request: RequestContext) -> dict[str, Any]:
        return self.identity.discover_result()

    async def _listen(self, request: RequestContext) -> dict[str, Any]:
        """A stream of the change notifications the client opted into, until it hangs up."""
        session, request_id = request.session, request.id
        honored = honored_filter(
            request.params, request.client_capabilities, self.task_methods.known
        )
        self.task_calls.loop = asyncio.get_running_loop()
        session.listen_filter = honored
        session.subscriptions = set(honored.get("resourceSubscriptions", []))
        session.subscription_id = request_id
        session.ended = asyncio.Event()
        self.open_session(session)
        try:
            session.notify(
                "notifications/subscriptions/acknowledged", {"notifications": honored}, request_id
            )
            await session.ended.wait()
        finally:
            self.sessions.pop(session.id, None)
        return {"_meta": {SUBSCRIPTION_ID: request_id}}

    def end_listens(self) -> None:
        """Close every listen stream gracefully (the server is stopping). The task store
        outlives this server and keeps the ended tasks; the ones still running here end
        cancelled ("the server stopped"): their work cannot report to a stopped loop."""
        self.tasks.unobserve(self.task_methods.changed)
        for follower in list(self.task_calls.followers):
            follower.cancel()
        for session in list(self.sessions.values()):
            if session.subscription_id is not None and session.ended is not None:
                session.ended.set()

    def notification_problem(self, message: Message) -> RpcError | None:
        """Why a notification is malformed (HTTP answers it 400), or None. ``handle``
        ignores such a notification: JSON-RPC never answers one on a stream."""
        params = message.get("params") or {}
        if message["method"] == "notifications/cancelled" and not jsonrpc.valid_id(
            params.get("requestId")
        ):
            return invalid_params(
                "notifications/cancelled needs params.requestId, a string or an integer"
            )
        return None

    @staticmethod
    def _answered(message: Message, request: RequestContext) -> None:
        request.session.resolve(message)  # a client's response to one of our requests

    def _notification(self, message: Message, request: RequestContext) -> None:
        # A small table; others (roots/list_changed: never asked for) are ignored, as allowed.
        react = self._notifications.get(message["method"])
        if react is not None:
            react(message.get("params") or {}, request)

    @staticmethod
    def _initialized(params: dict[str, Any], request: RequestContext) -> None:
        request.session.initialized = True

    @staticmethod
    def _cancelled(params: dict[str, Any], request: RequestContext) -> None:
        request_id = params.get("requestId")
        if not jsonrpc.valid_id(request_id):
            return  # not an id any request can have: there is nothing to cancel
        in_flight = request.session.in_flight.get(request_id)
        if in_flight is not None:
            logger.info("client cancelled request %r", request_id)
            # At once, on this thread: from now on the call's reply cannot leave, even
            # from the kernel thread that may be finishing it right now.
            in_flight.cancel(by_client=True)

    # -- lifecycle ---------------------------------------------------------------------
    def capabilities(self) -> dict[str, Any]:
        return lifecycle.capabilities()

    async def _initialize(self, request: RequestContext) -> dict[str, Any]:
        params, session = request.params, request.session
        result = self.identity.initialize_result(params)
        session.protocol_version = result["protocolVersion"]
        session.client_info, session.client_capabilities = kept_description(params)
        return result

    async def _ping(self, request: RequestContext) -> dict[str, Any]:
        return {}

    async def _set_level(self, request: RequestContext) -> dict[str, Any]:
        level = request.params.get("level")
        if level not in LOG_LEVELS:
            raise invalid_params(
                f"Invalid log level {level!r}: use one of {', '.join(LOG_LEVELS)}",
                {"level": level},
            )
        request.session.log_level = level
        return {}

    # -- listing -----------------------------------------------------------------------
    async def _tools_list(self, request: RequestContext) -> dict[str, Any]:
        tools = self.registry.tools.values()
        task_support = request.session.protocol_version == TASKS_VERSION
        if task_support:  # says which may be tasks
            items = [{**t.definition, "execution": {"taskSupport": t.task}} for t in tools]
        else:
            items = [t.definition for t in tools]
        # MCP Apps: a client without the UI extension sees no UI metadata nor app-only tools.
        items = views.tools_for(items, views.supports_ui(request.client_capabilities))
        if self.offers_dispatcher(request):
            items = dispatcher_tools.listing(items, task_support)
        return page("tools", items, request.params, self.page_size)

    def offers_dispatcher(self, request: RequestContext) -> bool:
        """Whether this request sees the dispatcher's tools (protocol/dispatcher_tools.py)."""
        return dispatcher_tools.offered(self.dispatcher_tools_for_all, request.client_capabilities)

    async def _resources_list(self, request: RequestContext) -> dict[str, Any]:
        ui = views.supports_ui(request.client_capabilities)
        items = views.resources_for((r.definition for r in self.registry.resources.values()), ui)
        return page("resources", items, request.params, self.page_size)

    async def _templates_list(self, request: RequestContext) -> dict[str, Any]:
        items = [t.definition for t in self.registry.templates.values()]
        return page("resourceTemplates", items, request.params, self.page_size)

    async def _prompts_list(self, request: RequestContext) -> dict[str, Any]:
        items = [p.definition for p in self.registry.prompts.values()]
        return page("prompts", items, request.params, self.page_size)
