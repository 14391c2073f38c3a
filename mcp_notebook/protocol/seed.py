"""The "MCP v1.0" dialect of seed 000, served by translating it onto standard MCP.

A :class:`SeedSession` speaks the dialect with one client and standard MCP with a server
through ``call(method, params)``, so the same code serves the dialect inside the notebook's
HTTP server and in the stdio bridge. Sans-IO: no sockets and no framing (``wire.framing``).

How each dialect method is served:

- ``initialize {clientCapabilities}``: standard ``initialize``, then ``*/list`` to see
  what is registered (the capability flags);
- ``mcp/listTools``: ``tools/list`` (all pages);
- ``mcp/executeTool {id, arguments}``: ``tools/list`` (id -> name, schemas), then
  ``tools/call``;
- ``mcp/listResources``: ``resources/list``, then ``resources/read`` of each (inline);
- ``mcp/listPrompts``: ``prompts/list``, then ``prompts/get`` of each;
- notifications ``mcp/resourceDidChange`` (we subscribe to every resource) and
  ``mcp/list{Tools,Resources,Prompts}DidChange`` from the standard ones.

What we do where the document is silent or contradicts itself: docs/seed-dialect.md.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any
from urllib.parse import quote

import jsonschema
from jsonschema.exceptions import best_match

from ..registry.validation import shortened
from ..wire import jsontext
from . import jsonrpc
from .jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, RpcError

logger = logging.getLogger(__name__)

Message = dict[str, Any]
Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
NotifyStandard = Callable[[str, dict[str, Any]], Awaitable[None]]
NotifyOut = Callable[[Message], object]

STANDARD_VERSION = "2025-11-25"
CLIENT_INFO = {"name": "mcp-v1.0-client", "version": "1.0"}
# The dialect's own codes, in its -32000..-32099 range.
TOOL_FAILED = -32000
OUTPUT_MISMATCH = -32001
NOT_INITIALIZED = -32002  # the value LSP uses, whose framing and handshake the seed borrows
PHRASES = {
    -32700: "Parse error",
    INVALID_REQUEST: "Invalid Request",
    METHOD_NOT_FOUND: "Method not found",
    INVALID_PARAMS: "Invalid params",
    INTERNAL_ERROR: "Internal error",
}
DIALECT_PHRASES = {
    TOOL_FAILED: "Tool execution failed",
    OUTPUT_MISMATCH: "Tool output does not match its outputSchema",
    NOT_INITIALIZED: "Server not initialized",
}
PERMISSIVE_SCHEMA: dict[str, Any] = {
    "description": "Unstructured output: the tool's text, null when it returned nothing, "
    "or MCP content blocks (images, binary data)."
}
ROLES = ("system", "user", "assistant")
TRACE_ON = ("on", "messages", "verbose")
MAX_INLINE_BYTES = 4 * 1024 * 1024
READ_CONCURRENCY = 8  # resource reads / prompt renders in flight while listing
MAX_PAGES = 1000


class SeedError(RpcError):
    """An error in the document's shape: the code's phrase as message, a sentence as data."""

    def __init__(self, code: int, detail: str | None, phrase: str | None = None) -> None:
        phrase = phrase or PHRASES.get(code) or DIALECT_PHRASES.get(code) or "Server error"
        super().__init__(code, phrase, detail)


def is_seed_message(message: Any) -> bool:
    """Whether a decoded message (a batch: its first one) speaks the seed dialect.

    ``mcp/*``, ``$/*`` and ``initialized`` exist only in the dialect; its ``initialize``
    has no ``protocolVersion``, which the standard one always carries.
    """
    if isinstance(message, list):
        return bool(message) and is_seed_message(message[0])
    method = message.get("method") if isinstance(message, dict) else None
    if not isinstance(method, str):
        return False
    if method.startswith(("mcp/", "$/")) or method == "initialized":
        return True
    params = message.get("params")
    return method == "initialize" and isinstance(params, dict) and "protocolVersion" not in params


def error_reply(request_id: Any, error: RpcError) -> Message:
    """An error response; without ``id`` when the request's could not be read (the one
    rule of :func:`~mcp_notebook.protocol.jsonrpc.error_response`, as standard MCP)."""
    return jsonrpc.error_response(request_id, error)


def server_authority(name: Any) -> str:
    """A server name as the host part of an mcpId: lowercase letters, digits, '.', '-'."""
    slug = re.sub(r"[^a-z0-9.-]+", "-", str(name or "").lower()).strip("-.")
    return slug or "mcp-notebook"


class SeedSession:
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
        self._methods: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
            "mcp/listTools": self._list_tools,
            "mcp/listResources": self._list_resources,
            "mcp/listPrompts": self._list_prompts,
            "mcp/executeTool": self._execute_tool,
        }

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
            if not message:
                return error_reply(None, SeedError(INVALID_REQUEST, "Empty batch"))
            replies = [await self._handle_one(item) for item in message]
            return [r for r in replies if r is not None] or None
        return await self._handle_one(message)

    def on_standard_notification(self, message: Message) -> None:
        """A notification from the standard server: forwarded in the dialect, if it has one."""
        method = message.get("method")
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if "id" in message or not self.initialized:
            return  # no requests to the client; nothing before `initialized`
        if method == "notifications/resources/updated":
            mcp_id = self._resource_ids.get(params.get("uri"))  # type: ignore[arg-type]
            if mcp_id is not None:
                self._emit("mcp/resourceDidChange", {"mcpId": mcp_id})
        elif method == "notifications/resources/list_changed":
            self._resources_dirty = True
            if self._refresh is None or self._refresh.done():
                self._refresh = self._spawn(self._refresh_resources())
        elif method in ("notifications/tools/list_changed", "notifications/prompts/list_changed"):
            kind = "Tools" if "tools" in method else "Prompts"
            self._emit(f"mcp/list{kind}DidChange", {})
        elif method == "notifications/message" and self.trace:
            self._emit("$/logTrace", {"message": _log_text(params)})

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

    # -- one message -----------------------------------------------------------------------
    async def _handle_one(self, message: Any) -> Message | None:
        try:
            kind = jsonrpc.kind(message)
        except RpcError as error:
            error = SeedError(error.code, error.message)
            return error_reply(jsonrpc.readable_id(message), error)
        if kind == "response":
            return None  # we send the client no requests
        if kind == "notification":
            self._notification(message)
            return None
        request_id, method = message["id"], message["method"]
        try:
            result = await self._request(method, message.get("params") or {})
        except RpcError as error:
            return error_reply(request_id, _as_seed(error))
        except Exception as exc:
            logger.exception("internal error handling %s", method)
            return error_reply(
                request_id, SeedError(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
            )
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    async def _request(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize":
            return await self._initialize(params)
        await self._ready(method)
        handler = self._methods.get(method)
        if handler is None:
            raise SeedError(METHOD_NOT_FOUND, f"The MCP v1.0 dialect has no method {method!r}")
        return await handler(params)

    def _notification(self, message: Message) -> None:
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

    # -- tools -----------------------------------------------------------------------------
    async def _tool_table(self) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
        """mcpId -> (standard tool, dialect ToolDefinition), freshly listed."""
        table = {}
        for tool in await self._list_all("tools"):
            if isinstance(tool.get("name"), str):
                definition = self._tool_definition(tool)
                table[definition["mcpId"]] = (tool, definition)
        return table

    def _tool_definition(self, tool: dict[str, Any]) -> dict[str, Any]:
        input_schema = tool.get("inputSchema")
        output_schema = tool.get("outputSchema")
        return {
            "mcpId": self._mcp_id("tools", tool["name"]),
            "name": tool["name"],
            "description": _description(tool),
            "inputSchema": input_schema if _is_schema(input_schema) else {"type": "object"},
            "outputSchema": output_schema if _is_schema(output_schema) else PERMISSIVE_SCHEMA,
        }

    async def _list_tools(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        return [definition for _, definition in (await self._tool_table()).values()]

    async def _execute_tool(self, params: dict[str, Any]) -> dict[str, Any]:
        mcp_id = params.get("id")
        if not isinstance(mcp_id, str):
            problem = "Invalid property" if "id" in params else "Missing required property"
            raise SeedError(
                INVALID_PARAMS, f"{problem}: 'id' in params for mcp/executeTool: the tool's mcpId"
            )
        arguments = params.get("arguments")
        arguments = {} if arguments is None else arguments
        if not isinstance(arguments, dict):
            raise SeedError(
                INVALID_PARAMS,
                f"Invalid property: 'arguments' in params for tool {mcp_id}: must be an object",
            )
        found = (await self._tool_table()).get(mcp_id)
        if found is None:
            raise SeedError(INVALID_PARAMS, f"Unknown tool: {mcp_id} (see mcp/listTools)")
        tool, definition = found
        problem = argument_problem(definition["inputSchema"], arguments, mcp_id)
        if problem is not None:
            raise SeedError(INVALID_PARAMS, problem)
        result = await self.call("tools/call", {"name": tool["name"], "arguments": arguments})
        if result.get("isError"):
            text = _text(result.get("content")) or "the tool reported an error"
            raise SeedError(TOOL_FAILED, f"Tool {mcp_id} failed: {text}")
        typed = definition["outputSchema"] is not PERMISSIVE_SCHEMA
        output = _output(result, typed)
        if typed:
            validator = _validator(definition["outputSchema"])
            if not validator.is_valid(output):
                error = shortened(best_match(validator.iter_errors(output)))
                raise SeedError(OUTPUT_MISMATCH, f"Tool {mcp_id} returned: {error.message}")
        return {"output": output}

    # -- resources -------------------------------------------------------------------------
    async def _list_resources(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        resources = await self._resources()
        ids = self._remember(resources)
        limit = asyncio.Semaphore(READ_CONCURRENCY)

        async def one(resource: dict[str, Any], mcp_id: str) -> dict[str, Any]:
            async with limit:
                return await self._resource_definition(resource, mcp_id)

        definitions = await asyncio.gather(*map(one, resources, ids))
        if self.initialized:
            self._spawn(self._subscribe_resources())
        return list(definitions)

    async def _resources(self) -> list[dict[str, Any]]:
        return [r for r in await self._list_all("resources") if isinstance(r.get("uri"), str)]

    def _remember(self, resources: list[dict[str, Any]]) -> list[str]:
        """mcpIds by name; by URI for names that several resources share (so ids stay unique)."""
        names = Counter(r.get("name") for r in resources)
        ids = []
        for resource in resources:
            name = resource.get("name")
            unique = isinstance(name, str) and name and names[name] == 1
            ids.append(self._mcp_id("resources", name if unique else resource["uri"]))
        self._resource_ids = {r["uri"]: i for r, i in zip(resources, ids, strict=True)}
        self._resources_seen = dict(zip(ids, resources, strict=True))
        return ids

    async def _resource_definition(self, resource: dict[str, Any], mcp_id: str) -> dict:
        definition: dict[str, Any] = {
            "mcpId": mcp_id,
            "name": str(resource.get("name") or resource["uri"]),
            "description": _description(resource),
            "mediaType": resource.get("mimeType") or "text/plain",
            "content": "",
        }
        size = resource.get("size")
        if isinstance(size, int) and size > self.max_inline_bytes:
            definition["contentError"] = self._too_large(size)
            return definition
        try:
            read = await self.call("resources/read", {"uri": resource["uri"]})
        except RpcError as error:
            definition["contentError"] = error.message
            return definition
        contents = [c for c in read.get("contents") or [] if isinstance(c, dict)]
        entry = next((c for c in contents if c.get("uri") == resource["uri"]), None)
        entry = entry or (contents[0] if contents else {})
        if isinstance(entry.get("blob"), str):
            content, size = entry["blob"], len(entry["blob"]) * 3 // 4
            definition["mediaType"] = entry.get("mimeType") or "application/octet-stream"
            definition["contentEncoding"] = "base64"  # the JSON Schema keyword for this
        else:
            content = str(entry.get("text", ""))
            size = len(content.encode())
            definition["mediaType"] = entry.get("mimeType") or definition["mediaType"]
        if size > self.max_inline_bytes:
            definition["contentError"] = self._too_large(size)
        else:
            definition["content"] = content
        return definition

    def _too_large(self, size: int) -> str:
        return f"Content omitted: {size} bytes is over the {self.max_inline_bytes}-byte limit"

    async def _subscribe_resources(self) -> None:
        resources_caps = self._standard_caps.get("resources")
        if self.notify_out is None or not isinstance(resources_caps, dict):
            return
        if not resources_caps.get("subscribe"):
            return
        if not self._resource_ids:
            self._remember(await self._resources())
        for uri in list(self._resource_ids):
            if uri in self._subscribed:
                continue
            self._subscribed.add(uri)  # before awaiting, so that concurrent runs skip it
            try:
                await self.call("resources/subscribe", {"uri": uri})
            except RpcError as error:
                self._subscribed.discard(uri)
                logger.debug("could not subscribe to %s: %s", uri, error.message)

    async def _refresh_resources(self) -> None:
        # An mcpId that appeared, went, or now names another resource (a name moved to a
        # new URI) changed for the client; content changes in place come as `updated`.
        while self._resources_dirty:
            self._resources_dirty = False
            before = self._resources_seen
            self._remember(await self._resources())
            after = self._resources_seen
            self._emit("mcp/listResourcesDidChange", {})
            for mcp_id in dict.fromkeys([*after, *before]):
                if before.get(mcp_id) != after.get(mcp_id):
                    self._emit("mcp/resourceDidChange", {"mcpId": mcp_id})
            await self._subscribe_resources()

    # -- prompts ---------------------------------------------------------------------------
    async def _list_prompts(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        prompts = [p for p in await self._list_all("prompts") if isinstance(p.get("name"), str)]
        limit = asyncio.Semaphore(READ_CONCURRENCY)

        async def one(prompt: dict[str, Any]) -> dict[str, Any]:
            async with limit:
                return await self._prompt_definition(prompt)

        return list(await asyncio.gather(*map(one, prompts)))

    async def _prompt_definition(self, prompt: dict[str, Any]) -> dict[str, Any]:
        arguments = [a for a in prompt.get("arguments") or [] if isinstance(a, dict)]
        definition: dict[str, Any] = {
            "mcpId": self._mcp_id("prompts", prompt["name"]),
            "name": prompt["name"],
            "description": _description(prompt),
            "role": "user",
            "content": "",
        }
        extra: dict[str, Any] = {"arguments": arguments} if arguments else {}
        # Each argument renders as its own placeholder, so a template comes back as written.
        values = {
            a["name"]: "{" + a["name"] + "}" for a in arguments if isinstance(a.get("name"), str)
        }
        try:
            rendered = await self.call("prompts/get", {"name": prompt["name"], "arguments": values})
        except RpcError as error:
            return {**definition, **extra, "contentError": error.message}
        messages = [m for m in rendered.get("messages") or [] if isinstance(m, dict)]
        texts = [_text([m.get("content")]) for m in messages]
        if messages:
            role = messages[0].get("role")
            definition["role"] = role if role in ROLES else "user"
            definition["content"] = "\n\n".join(texts)
        if len(messages) > 1:
            extra["messages"] = [
                {"role": m.get("role"), "content": t} for m, t in zip(messages, texts, strict=True)
            ]
        return {**definition, **extra}

    # -- plumbing --------------------------------------------------------------------------
    def _mcp_id(self, kind: str, name: str) -> str:
        return f"mcp://{self._server}/{kind}/{quote(name, safe='')}:v1"

    async def _list_all(self, kind: str) -> list[dict[str, Any]]:
        """Every item of a standard ``<kind>/list``, all pages; [] when it is not served."""
        if kind not in self._standard_caps:
            return []
        items: list[dict[str, Any]] = []
        params: dict[str, Any] = {}
        for _ in range(MAX_PAGES):
            page = await self.call(f"{kind}/list", params)
            items.extend(item for item in page.get(kind) or [] if isinstance(item, dict))
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or cursor == params.get("cursor"):
                break
            params = {"cursor": cursor}
        return items

    def _emit(self, method: str, params: dict[str, Any]) -> None:
        if self.notify_out is not None and self.initialized:
            self.notify_out(jsonrpc.notification(method, params))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(self._logged(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @staticmethod
    async def _logged(work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except RpcError as error:
            logger.warning("seed dialect: background request failed: %s", error.message)
        except Exception:
            logger.exception("seed dialect: background work failed")


# -- pure helpers --------------------------------------------------------------------------
def argument_problem(schema: dict[str, Any], arguments: Any, mcp_id: str) -> str | None:
    """The document's sentence for arguments that do not fit ``schema``, or None."""
    errors = sorted(_validator(schema).iter_errors(arguments), key=lambda e: len(e.path))
    if not errors:
        return None
    tool = f"for tool {mcp_id}"
    for error in errors:
        if error.validator == "required" and isinstance(error.instance, dict):
            missing = [n for n in error.validator_value if n not in error.instance]
            if missing:
                name = _path([*error.path, missing[0]])
                return f"Missing required property: '{name}' in arguments {tool}"
    error = shortened(best_match(errors))
    if error.path:
        return f"Invalid property: '{_path(error.path)}' in arguments {tool}: {error.message}"
    return f"Invalid arguments {tool}: {error.message}"


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _validator(schema: dict[str, Any]) -> Any:
    return _compiled(json.dumps(schema, sort_keys=True))


def _is_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and _compiled(json.dumps(schema, sort_keys=True)) is not None


@functools.lru_cache(maxsize=512)
def _compiled(schema_json: str) -> Any:
    """A validator for a schema (None if it is not valid JSON Schema), cached: listing and
    every execution see the same few schemas again."""
    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None
    return cls(schema)


def _output(result: dict[str, Any], typed: bool) -> Any:
    """``structuredContent`` if any; else the text (as JSON when a schema is promised)."""
    if "structuredContent" in result:
        return result["structuredContent"]
    blocks = result.get("content") or []
    if not blocks:
        return None
    if not all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
        return blocks
    text = "\n".join(str(b.get("text", "")) for b in blocks)
    if typed:
        try:
            return jsontext.loads(text)  # strict: a NaN token is text, not a number
        except ValueError:
            pass
    return text


def _text(blocks: Any) -> str:
    """The text of content blocks; other kinds are named, not inlined."""
    parts = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "resource" and isinstance(block.get("resource"), dict):
            parts.append(str(block["resource"].get("text", f"[{block['resource'].get('uri')}]")))
        else:
            parts.append(f"[{block.get('type', 'unknown')} content]")
    return "\n".join(parts)


def _description(item: dict[str, Any]) -> str:
    return str(item.get("description") or item.get("title") or "")


def _log_text(params: dict[str, Any]) -> str:
    data = params.get("data")
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    source = f" {params['logger']}" if isinstance(params.get("logger"), str) else ""
    return f"[{params.get('level', 'info')}]{source} {text}"


def _as_seed(error: RpcError) -> SeedError:
    """A standard error (from ``call``) in the dialect's shape, its code kept."""
    if isinstance(error, SeedError):
        return error
    phrase = PHRASES.get(error.code)
    if phrase is None:  # e.g. the bridge's -32000: keep its own words
        return SeedError(error.code, _as_text(error.data), error.message)
    detail = error.message if error.message != phrase else _as_text(error.data)
    return SeedError(error.code, detail)


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


__all__ = [
    "NOT_INITIALIZED",
    "OUTPUT_MISMATCH",
    "TOOL_FAILED",
    "SeedError",
    "SeedSession",
    "argument_problem",
    "error_reply",
    "is_seed_message",
    "server_authority",
]
