"""A seed-dialect client, translated onto standard MCP: the session and its lifecycle.

The dispatcher (``protocol/dispatch.py``) classifies each message and routes requests to
the method table built here; the handshake gate runs before the table is consulted. The
methods themselves are in ``tools.py``, ``resources.py`` and ``prompts.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from .. import jsonrpc
from ..codes import INVALID_PARAMS, INVALID_REQUEST
from ..dispatch import Dispatcher, Request
from ..jsonrpc import Message, RpcError
from ..versions import LATEST_HANDSHAKE
from .base import Call, NotifyOut, NotifyStandard, logger
from .errors import NOT_INITIALIZED, SeedError, as_seed, internal, not_found
from .naming import server_authority
from .prompts import PromptMethods
from .resources import ResourceMethods
from .tools import ToolMethods
from .translate import log_text

Handler = Callable[[dict[str, Any]], Awaitable[Any]]

# The standard revision the dialect is translated onto.
STANDARD_VERSION = LATEST_HANDSHAKE
CLIENT_INFO = {"name": "mcp-v1.0-client", "version": "1.0"}
TRACE_ON = ("on", "messages", "verbose")
MAX_INLINE_BYTES = 4 * 1024 * 1024


class SeedSession(ToolMethods, ResourceMethods, PromptMethods):
    """One dialect client, translated onto standard MCP.

    ``call(method, params)`` performs a standard request and raises ``RpcError`` for an
    error response. ``notify_out(message)`` delivers a dialect notification to the client
    (None: the connection cannot carry any). ``notify_standard(method, params)`` sends a
    standard notification (``notifications/initialized``). Use one event loop throughout.
    """

    def __init__(
        self,
        call: Call,
        notify_out: NotifyOut | None = None,
        server_name: str | None = None,
        *,
        notify_standard: NotifyStandard | None = None,
        require_handshake: bool = True,
        client_info: dict[str, Any] | None = None,
        max_inline_bytes: int = MAX_INLINE_BYTES,
    ) -> None:
        self.call, self.notify_out, self.notify_standard = call, notify_out, notify_standard
        self._server = server_authority(server_name) if server_name else None
        self.require_handshake = require_handshake
        self.client_info = client_info or dict(CLIENT_INFO)
        self.max_inline_bytes = max_inline_bytes
        self.trace = False
        self._state = "new"  # -> "starting" -> "ready" (or back to "new" if that fails)
        self._started: asyncio.Future[dict[str, Any]] | None = None
        self._client_ready = False  # notifications may go out (after `initialized`)
        self._handshake_complete = False  # `initialize` then `initialized`, explicitly
        self._closed = False
        self._standard_caps: dict[str, Any] = {}
        self._resource_ids: dict[str, str] = {}  # uri -> mcpId, from the last listing
        self._resources_seen: dict[str, dict[str, Any]] = {}  # mcpId -> standard definition
        self._subscribed: set[str] = set()
        self._resources_dirty = False
        self._refresh: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        # The dialect's method table; a response from the client is ignored (we send it
        # no requests).
        self._methods: dict[str, Handler] = {
            "initialize": self._initialize,
            "mcp/listTools": self._list_tools,
            "mcp/listResources": self._list_resources,
            "mcp/listPrompts": self._list_prompts,
            "mcp/executeTool": self._execute_tool,
        }
        # Standard notifications the dialect has a counterpart for (the others are dropped).
        self._forwarded: dict[str, Callable[[dict[str, Any]], None]] = {
            "notifications/resources/updated": self._resource_updated,
            "notifications/resources/list_changed": self._resources_changed,
            "notifications/tools/list_changed": self._tools_changed,
            "notifications/prompts/list_changed": self._prompts_changed,
            "notifications/message": self._log_message,
        }
        self._dispatcher: Dispatcher[None, Handler] = Dispatcher(
            lambda _: self._methods,
            self._invoke,
            notified=self._notification,
            admit=self._admit,
            not_found=not_found,
            internal=internal,
            public=as_seed,
            log=logger,
        )

    @property
    def server_name(self) -> str | None:
        return self._server

    @property
    def initialized(self) -> bool:
        """True once the client may receive notifications."""
        return self._state == "ready" and self._client_ready and not self._closed

    @property
    def handshake_complete(self) -> bool:
        """The client sent ``initialize`` and ``initialized`` (a long-lived session)."""
        return self._handshake_complete and self.initialized

    # -- entry points ----------------------------------------------------------------------
    async def handle(self, message: Any) -> Message | list[Message] | None:
        """The reply to one decoded message (a list for a batch); None for notifications."""
        if isinstance(message, list):
            return await self._dispatcher.dispatch_batch(message, None)
        return await self._dispatcher.dispatch(message, None)

    def on_standard_notification(self, message: Message) -> None:
        """A notification from the standard server: forwarded in the dialect, if it has one."""
        method = message.get("method")
        given = message.get("params")
        params: dict[str, Any] = given if isinstance(given, dict) else {}
        if "id" in message or not self.initialized:
            return  # no requests to the client; nothing before `initialized`
        forward = self._forwarded.get(method) if isinstance(method, str) else None
        if forward is not None:
            forward(params)

    def _tools_changed(self, params: dict[str, Any]) -> None:
        self._emit("mcp/listToolsDidChange", {})

    def _prompts_changed(self, params: dict[str, Any]) -> None:
        self._emit("mcp/listPromptsDidChange", {})

    def _log_message(self, params: dict[str, Any]) -> None:
        if self.trace:
            self._emit("$/logTrace", {"message": log_text(params)})

    def standard_reconnected(self) -> None:
        """The standard session was re-established (the bridge after a kernel restart).

        Subscriptions are made again and the client is told that every list and resource
        may have changed; mcpIds stay what they were, as the server's name does.
        """
        self._subscribed.clear()
        # A fresh kernel re-ran its cells: every resource may hold new content.
        self._resources_seen = {mcp_id: {} for mcp_id in self._resources_seen}
        if not self.initialized:
            return
        for kind in ("tools", "resources", "prompts"):
            self.on_standard_notification(
                jsonrpc.notification(f"notifications/{kind}/list_changed")
            )

    async def idle(self) -> None:
        """Wait for background work (subscribing, refreshes) to finish; for tests and close."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def close(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()

    # -- one message (routed by the dispatcher) ---------------------------------------------
    async def _admit(self, request: Request, _: None) -> None:
        """The lifecycle gate: anything but ``initialize`` waits for (or starts) the
        standard session."""
        if request.method != "initialize":
            await self._ready(request.method)

    @staticmethod
    async def _invoke(handler: Handler, request: Request, _: None) -> Any:
        return await handler(request.params)

    def _notification(self, message: Message, _: None = None) -> None:
        # `initialized` is the only notification the document defines; others are ignored.
        if message["method"] != "initialized" or self._state == "new" or self._client_ready:
            return
        self._client_ready = self._handshake_complete = True
        self._spawn(self._after_initialized())

    async def _after_initialized(self) -> None:
        if self._started is not None:
            await asyncio.shield(self._started)  # `initialized` may overtake our reply
        await self._subscribe_resources()

    # -- handshake -------------------------------------------------------------------------
    async def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._state != "new":
            raise SeedError(INVALID_REQUEST, "initialize may be sent only once per session")
        for key, kind in (("clientCapabilities", dict), ("rootUri", str), ("trace", str)):
            if params.get(key) is not None and not isinstance(params[key], kind):
                noun = "an object" if kind is dict else "a string"
                detail = f"Invalid property: '{key}' in params for initialize: must be {noun}"
                raise SeedError(INVALID_PARAMS, detail)
        self.trace = params.get("trace") in TRACE_ON
        capabilities = await self._start(handshake=True)
        return {"capabilities": capabilities}

    async def _ready(self, method: str) -> None:
        if self._state == "ready":
            return
        if self._state == "new" and self.require_handshake:
            raise SeedError(NOT_INITIALIZED, f"The first request must be initialize, not {method}")
        try:
            await self._start(handshake=False)
        except RpcError as error:
            raise SeedError(NOT_INITIALIZED, f"Initialization failed: {error.message}") from None

    def _start(self, handshake: bool) -> asyncio.Future[dict[str, Any]]:
        """Start the standard session once; concurrent requests share the same attempt."""
        if self._state == "new":
            self._state = "starting"
            self._started = asyncio.ensure_future(self._open(handshake))
        assert self._started is not None
        return asyncio.shield(self._started)

    async def _open(self, handshake: bool) -> dict[str, Any]:
        try:
            params = {
                "protocolVersion": STANDARD_VERSION,
                "capabilities": {},
                "clientInfo": self.client_info,
            }
            result = await self.call("initialize", params)
            if self.notify_standard is not None:
                await self.notify_standard("notifications/initialized", {})
            caps = result.get("capabilities")
            self._standard_caps = caps if isinstance(caps, dict) else {}
            if self._server is None:
                info = result.get("serverInfo")
                self._server = server_authority(info.get("name") if isinstance(info, dict) else "")
            capabilities = await self._capabilities() if handshake else {}
        except BaseException:
            self._state, self._client_ready = "new", False
            raise
        self._state = "ready"
        if not handshake:
            # No handshake (one HTTP POST): nothing to wait for before notifications.
            self._client_ready = True
            self._spawn(self._subscribe_resources())
        return capabilities

    async def _capabilities(self) -> dict[str, Any]:
        # A flag is true when that kind is served and something of it is registered now.
        tools = bool(await self._list_all("tools"))
        resources = await self._resources()
        self._remember(resources)
        prompts = bool(await self._list_all("prompts"))
        return {
            "listToolsProvider": tools,
            "listResourcesProvider": bool(resources),
            "listPromptsProvider": prompts,
            "executionProvider": {"execute": tools},
        }
