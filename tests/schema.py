"""Validate messages the server emits against the official MCP schema.json."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

SPEC = Path(__file__).parent / "spec"
LATEST = "2025-11-25"


@cache
def _schema(version: str) -> dict[str, Any]:
    return json.loads((SPEC / f"{version}.schema.json").read_text())


@cache
def _validator(version: str, definition: str) -> jsonschema.Draft202012Validator:
    root = _schema(version)
    resource = Resource.from_contents(root)
    registry = Registry().with_resource("urn:mcp", resource)
    return jsonschema.Draft202012Validator(
        {"$ref": f"urn:mcp#/$defs/{definition}"}, registry=registry
    )


def validate(instance: Any, definition: str, version: str = LATEST) -> Any:
    """Raise if ``instance`` is not a valid ``definition`` (e.g. "CallToolResult")."""
    _validator(version, definition).validate(instance)
    return instance


RESULT_TYPES = {
    "initialize": "InitializeResult",
    "ping": "EmptyResult",
    "tools/list": "ListToolsResult",
    "tools/call": "CallToolResult",
    "resources/list": "ListResourcesResult",
    "resources/templates/list": "ListResourceTemplatesResult",
    "resources/read": "ReadResourceResult",
    "prompts/list": "ListPromptsResult",
    "prompts/get": "GetPromptResult",
    "server/discover": "DiscoverResult",
    "completion/complete": "CompleteResult",
}


TASK_RESULT_TYPES = {
    "tasks/get": "GetTaskResult",
    "tasks/update": "UpdateTaskResult",
    "tasks/cancel": "CancelTaskResult",
}


def validate_task_message(method: str, result: dict[str, Any]) -> dict[str, Any]:
    """A result of the Tasks extension (ext-tasks.schema.json): a ``CreateTaskResult`` for
    a ``tools/call`` answered with a task, else the method's own result type."""
    if method == "tools/call":
        return validate(result, "CreateTaskResult", "ext-tasks")
    return validate(result, TASK_RESULT_TYPES[method], "ext-tasks")


def validate_reply(method: str, reply: dict[str, Any], version: str = LATEST) -> dict[str, Any]:
    """A reply to ``method``: a valid JSON-RPC response whose result fits the method's type."""
    if "error" in reply:
        return validate(reply, "JSONRPCErrorResponse", version)
    validate(reply, "JSONRPCResultResponse", version)
    validate(reply["result"], RESULT_TYPES[method], version)
    return reply


def validate_notification(message: dict[str, Any], version: str = LATEST) -> dict[str, Any]:
    validate(message, "JSONRPCNotification", version)
    return validate(message, "ServerNotification", version)
