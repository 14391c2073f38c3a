"""Scenarios for the official SDK client that run the same against every server.

tests/unit/protocol/test_sdk_memory.py runs them against the sans-IO server in memory;
tests/kernel/test_sdk_client.py and tests/kernel/test_context.py against a live kernel over
HTTP. Each module registers tools of the same names and behaviour (add, slow_echo, explode,
chatty, ask_model, roots); these helpers hold the checks, so the two sides cannot drift.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client

from tests.schema import validate


def dump(model: Any) -> dict[str, Any]:
    """A result or params model as the JSON the wire carries."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def check_add_and_echo(client: Any) -> None:
    """A sync tool's text and structured result, then an async tool's."""
    result = await client.call_tool("add", {"a": 2, "b": 5})
    assert not result.is_error
    assert result.content[0].text == "7"
    assert result.structured_content == {"result": 7}
    validate(dump(result), "CallToolResult")
    echoed = await client.call_tool("slow_echo", {"text": "hi"})
    assert echoed.content[0].text == "HI"


async def check_tool_errors(client: Any, unknown_tool_error: type[BaseException]) -> None:
    """Bad arguments and a raising tool are error results; an unknown tool is Invalid Params.

    ``unknown_tool_error`` is the exception the client's transport raises for a JSON-RPC
    error; its ``code`` is checked either way.
    """
    bad_type = await client.call_tool("add", {"a": "seven"})
    assert bad_type.is_error
    assert "'a'" in bad_type.content[0].text
    raised = await client.call_tool("explode", {"reason": "no"})
    assert raised.is_error
    assert "cannot do that: no" in raised.content[0].text
    assert "Traceback" not in raised.content[0].text
    with pytest.raises(unknown_tool_error) as unknown:
        await client.call_tool("nope", {})
    assert getattr(unknown.value, "code", None) == types.INVALID_PARAMS


async def check_template_missing_resource_and_prompt(
    client: Any, mode: str, missing_uri: str, error: type[BaseException]
) -> None:
    """A template's resource, a missing resource's era-specific error, a prompt and its
    required argument. ``error`` is what the client raises for a JSON-RPC error."""
    note = await client.read_resource("notes://monday")
    assert note.contents[0].text == "notes for monday"
    with pytest.raises(error) as missing:
        await client.read_resource(missing_uri)
    # Resource not found: -32002 until 2025-11-25, Invalid Params (-32602) since.
    assert getattr(missing.value, "code", None) == {"legacy": -32002, "auto": -32602}[mode]
    assert missing.value.error.data == {"uri": missing_uri}  # type: ignore[attr-defined]
    prompt = await client.get_prompt("summarize", {"topic": "cats"})
    assert prompt.messages[0].content.text == "Summarize cats in 3 bullet points."
    validate(dump(prompt), "GetPromptResult")
    with pytest.raises(error) as no_topic:
        await client.get_prompt("summarize", {})
    assert getattr(no_topic.value, "code", None) == types.INVALID_PARAMS
    assert "topic" in no_topic.value.error.message  # type: ignore[attr-defined]


class Progress:
    """A progress callback that keeps what it was told, in order; ``arrived`` is set by the
    first notification (a test awaits it to know the call is under way)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []
        self.arrived = asyncio.Event()

    @property
    def messages(self) -> list[str | None]:
        return [message for _, _, message in self.seen]

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        self.arrived.set()


class LogLines:
    """A logging callback that keeps (level, data) of each message."""

    def __init__(self, check_schema: bool = False) -> None:
        self.lines: list[tuple[str, str]] = []
        self.check_schema = check_schema

    async def __call__(self, params: Any) -> None:
        if self.check_schema:
            validate(dump(params), "LoggingMessageNotificationParams")
        self.lines.append((params.level, params.data))


async def check_logging_only_when_asked(connect: Any) -> None:
    """On 2026-07-28 a call gets log messages only when its ``_meta`` asks for a level.

    ``connect(**client_options)`` opens an "auto" SDK client on the server under test.
    """
    log = LogLines()
    async with connect(logging_callback=log) as client:
        assert client.protocol_version == "2026-07-28"
        await client.call_tool("chatty", {})
        await client.list_tools()  # a barrier: 2026-07-28 has no ping
        assert log.lines == []  # no logLevel in _meta: no log messages at all
    async with connect(logging_callback=log, log_level="warning") as client:
        await client.call_tool("chatty", {})
        await client.list_tools()
        assert log.lines == [("warning", "a warning line"), ("error", "a error line")]


async def _sample(context: Any, params: Any) -> types.CreateMessageResult:
    question = params.messages[0].content.text
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=f"the model says: {question[::-1]}"),
        model="test-model",
    )


async def _roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///work/project", name="p")])


# Client options that declare sampling and roots, answered by the two callbacks above.
SAMPLING_AND_ROOTS: dict[str, Any] = {"sampling_callback": _sample, "list_roots_callback": _roots}


async def check_sampling_and_roots(client: Any) -> None:
    """A tool's sampling request and roots request reach the client's callbacks."""
    sampled = await client.call_tool("ask_model", {"question": "abc"})
    assert sampled.content[0].text == "the model says: cba"
    listed = await client.call_tool("roots", {})
    assert listed.structured_content == {"result": ["file:///work/project"]}


async def check_undeclared_sampling(client: Any) -> None:
    """Sampling from a client that did not declare it is a tool error that names why."""
    result = await client.call_tool("ask_model", {"question": "x"})
    assert result.is_error
    assert "did not declare the 'sampling' capability" in result.content[0].text


# -- a confirmation, accepted by the client (serve and the export: the same tool, GUARDED)
class Yes:
    """A client that accepts every question it is asked, and counts them."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context, params) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={})


async def attempt(client: Client) -> tuple[types.CallToolResult, str]:
    """Call the guarded tool, then ask what it did."""
    result = await client.call_tool("delete_rows", {"table": "orders"})
    done = await client.call_tool("deleted", {})
    return result, done.content[0].text
