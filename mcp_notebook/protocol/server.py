"""The MCP methods over a Registry, sans-IO: ``await server.handle(message, session)``.

Transports decode bytes into messages, pick the session, and send back what ``handle``
returns (``None`` for notifications and responses). This is the one place where exceptions
become JSON-RPC errors.
"""

from __future__ import annotations

import asyncio
import base64
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..registry import ArgumentError, Registry, ResourceTemplate
from ..registry.content import error_result
from . import jsonrpc
from .calls import CallLog, CallRecord
from .executor import Executor, InlineExecutor, settle
from .jsonrpc import RESOURCE_NOT_FOUND, Message, RpcError, invalid_params
from .session import Session
from .versions import negotiate

logger = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any], Session], Awaitable[dict[str, Any]]]


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
    ) -> None:
        self.registry = registry
        self.name, self.version, self.instructions = name, version, instructions
        self.executor: Executor = executor or InlineExecutor()
        self.page_size = page_size
        self.calls = calls if calls is not None else CallLog()
        self._methods: dict[str, Handler] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._tools_list,
            "tools/call": self._tools_call,
            "resources/list": self._resources_list,
            "resources/templates/list": self._templates_list,
            "resources/read": self._resources_read,
            "prompts/list": self._prompts_list,
            "prompts/get": self._prompts_get,
        }

    def serves(self, method: str) -> bool:
        return method in self._methods

    # -- entry point -------------------------------------------------------------------
    async def handle(self, message: Any, session: Session) -> Message | None:
        try:
            kind = jsonrpc.kind(message)
        except RpcError as error:
            request_id = message.get("id") if isinstance(message, dict) else None
            ok_id = isinstance(request_id, (str, int)) and not isinstance(request_id, bool)
            return jsonrpc.error_response(request_id if ok_id else None, error)
        if kind == "notification":
            self._notification(message, session)
            return None
        if kind == "response":
            return None  # we send no requests yet, so no response is awaited
        request_id = message["id"]
        try:
            handler = self._methods.get(message["method"])
            if handler is None:
                raise RpcError(
                    jsonrpc.METHOD_NOT_FOUND,
                    f"Method not found: {message['method']}",
                    {"method": message["method"]},
                )
            result = await handler(message.get("params") or {}, session)
        except RpcError as error:
            return jsonrpc.error_response(request_id, error)
        except Exception as exc:
            logger.exception("internal error handling %s", message.get("method"))
            return jsonrpc.error_response(
                request_id, RpcError(jsonrpc.INTERNAL_ERROR, f"Internal error: {exc}")
            )
        return jsonrpc.response(request_id, result)

    def _notification(self, message: Message, session: Session) -> None:
        if message["method"] == "notifications/initialized":
            session.initialized = True

    # -- lifecycle ---------------------------------------------------------------------
    def capabilities(self) -> dict[str, Any]:
        return {
            "tools": {"listChanged": True},
            "resources": {"listChanged": True},
            "prompts": {"listChanged": True},
        }

    async def _initialize(self, params: dict[str, Any], session: Session) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise invalid_params("initialize needs a protocolVersion string")
        session.protocol_version = negotiate(requested)
        info = params.get("clientInfo")
        session.client_info = info if isinstance(info, dict) else {}
        capabilities = params.get("capabilities")
        session.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        result: dict[str, Any] = {
            "protocolVersion": session.protocol_version,
            "capabilities": self.capabilities(),
            "serverInfo": {"name": self.name, "version": self.version},
        }
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    async def _ping(self, params: dict[str, Any], session: Session) -> dict[str, Any]:
        return {}

    # -- listing -----------------------------------------------------------------------
    def _page(self, kind: str, items: list[dict[str, Any]], params: dict[str, Any]) -> dict:
        start = _decode_cursor(params.get("cursor"), kind)
        end = start + self.page_size
        result: dict[str, Any] = {kind: items[start:end]}
        if end < len(items):
            result["nextCursor"] = _encode_cursor(kind, end)
        return result

    async def _tools_list(self, params: dict[str, Any], session: Session) -> dict[str, Any]:
        return self._page("tools", [t.definition for t in self.registry.tools.values()], params)

    async def _resources_list(self, params: dict[str, Any], session: Session) -> dict:
        items = [r.definition for r in self.registry.resources.values()]
        return self._page("resources", items, params)

    async def _templates_list(self, params: dict[str, Any], session: Session) -> dict:
        items = [t.definition for t in self.registry.templates.values()]
        return self._page("resourceTemplates", items, params)

    async def _prompts_list(self, params: dict[str, Any], session: Session) -> dict:
        return self._page("prompts", [p.definition for p in self.registry.prompts.values()], params)

    # -- calls into user code ----------------------------------------------------------
    async def _tools_call(self, params: dict[str, Any], session: Session) -> dict[str, Any]:
        name = _required_str(params, "name")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise invalid_params("tools/call arguments must be an object")
        tool = self.registry.tools.get(name)
        if tool is None:
            raise invalid_params(f"Unknown tool: {name}", {"name": name})
        record = self.calls.add(CallRecord("tools/call", name, arguments, session.client_label))
        problem = tool.argument_error(arguments)
        if problem is not None:
            record.finish("error", error=ValueError(problem))
            return error_result(problem)

        def work() -> Any:
            return _then(tool.invoke(arguments, {}), tool.result)

        try:
            result = await self.executor.run(work)
        except asyncio.CancelledError:
            record.finish("cancelled")
            raise
        except BaseException as exc:
            record.finish("error", error=exc)
            # The traceback stays in the notebook (``mcp.calls``); the client gets the message.
            return error_result(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
        record.finish("done", result=result)
        return result

    async def _resources_read(self, params: dict[str, Any], session: Session) -> dict:
        uri = _required_str(params, "uri")
        found = self.registry.find_resource(uri)
        if found is None:
            raise RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})
        component, values = found
        record = self.calls.add(
            CallRecord("resources/read", uri, values or {}, session.client_label)
        )

        def work() -> dict[str, Any]:
            if isinstance(component, ResourceTemplate):
                return component.read(uri, values or {})
            return component.read()

        return await self._run_user(record, work, "reading resource " + uri)

    async def _prompts_get(self, params: dict[str, Any], session: Session) -> dict[str, Any]:
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
        record = self.calls.add(CallRecord("prompts/get", name, arguments, session.client_label))

        def work() -> Any:
            return _then(prompt.render(arguments), prompt.result)

        return await self._run_user(record, work, f"rendering prompt '{name}'")

    async def _run_user(self, record: CallRecord, work: Callable[[], Any], what: str) -> dict:
        """Run a reader/renderer; its failures are request errors (no isError here)."""
        try:
            result = await self.executor.run(work)
        except RpcError as error:
            record.finish("error", error=error)
            raise
        except ArgumentError as exc:
            record.finish("error", error=exc)
            raise invalid_params(str(exc)) from exc
        except asyncio.CancelledError:
            record.finish("cancelled")
            raise
        except BaseException as exc:  # a SystemExit in user code must not end the server
            record.finish("error", error=exc)
            raise RpcError(
                jsonrpc.INTERNAL_ERROR, f"Error {what}: {type(exc).__name__}: {exc}"
            ) from exc
        record.finish("done", result=result)
        return result


def _then(value: Any, convert: Callable[[Any], Any]) -> Any:
    """``convert(value)``, after awaiting it if the user function was async."""
    if inspect.isawaitable(value):
        return _convert_later(value, convert)
    return convert(value)


async def _convert_later(awaitable: Any, convert: Callable[[Any], Any]) -> Any:
    return convert(await settle(awaitable))


def _required_str(params: dict[str, Any], key: str) -> str:
    value = params.get(key)
    if not isinstance(value, str):
        raise invalid_params(f"params.{key} must be a string")
    return value


def _encode_cursor(kind: str, offset: int) -> str:
    raw = json.dumps({"k": kind, "o": offset}).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: Any, kind: str) -> int:
    if cursor is None:
        return 0
    try:
        padded = str(cursor) + "=" * (-len(str(cursor)) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded))
        if data["k"] == kind and isinstance(data["o"], int) and data["o"] >= 0:
            return data["o"]
    except (ValueError, KeyError, TypeError):
        pass
    raise invalid_params("Invalid cursor", {"cursor": cursor})
