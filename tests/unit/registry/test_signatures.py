"""Functions whose signatures once registered but could never answer a call correctly.

A positional-only parameter (``def f(a, b, /)``, most builtins such as ``len``) was
published in the schema and then passed by keyword: every call failed with a TypeError.
A generator function or a class registered too, and each call "succeeded" with the
repr of a generator or of the new object. Now the first kind is called by position and
the others are refused where they are registered.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session
from tests.schema import validate_reply


def reply(mcp: NotebookMCP, method: str, params: dict[str, Any]) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    answer = asyncio.run(Server(mcp.registry).handle(message, Session()))
    return validate_reply(method, answer)["result"]


def call(mcp: NotebookMCP, name: str, arguments: dict[str, Any]) -> str:
    result = reply(mcp, "tools/call", {"name": name, "arguments": arguments})
    assert not result.get("isError"), result
    return result["content"][0]["text"]


def digits(a: int, b: int, /, c: int = 0) -> int:
    return a * 100 + b * 10 + c


def scale(factor: float, x: float, /) -> float:
    return factor * x


def test_positional_only_parameters_are_passed_by_position():
    mcp = NotebookMCP("signatures")
    mcp.tool(digits)
    mcp.tool(len)
    mcp.tool(functools.partial(scale, 2.0), name="double")
    assert call(mcp, "digits", {"a": 1, "b": 2}) == "120"
    assert call(mcp, "digits", {"a": 1, "b": 2, "c": 3}) == "123"
    assert call(mcp, "len", {"obj": [1, 2, 3]}) == "3"
    assert call(mcp, "double", {"x": 4}) == "8.0"
    schema = reply(mcp, "tools/list", {})["tools"][0]["inputSchema"]
    assert schema["required"] == ["a", "b"] and set(schema["properties"]) == {"a", "b", "c"}


def test_a_resource_template_and_a_prompt_with_positional_only_parameters_answer():
    mcp = NotebookMCP("signatures")

    @mcp.resource_template("notes://{day}")
    def note(day: str, /) -> str:
        return f"notes of {day}"

    @mcp.prompt
    def review(topic: str, /) -> str:
        return f"Review {topic}"

    read = reply(mcp, "resources/read", {"uri": "notes://monday"})
    assert read["contents"][0]["text"] == "notes of monday"
    got = reply(mcp, "prompts/get", {"name": "review", "arguments": {"topic": "sales"}})
    assert got["messages"][0]["content"]["text"] == "Review sales"


def numbers(n: int):
    yield from range(n)


async def later(n: int):
    for i in range(n):
        yield i


class Point:
    def __init__(self, x: int) -> None:
        self.x = x


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (numbers, "a generator function gives a generator, not a result"),
        (later, "a generator function gives a generator, not a result"),
        (functools.partial(numbers, 3), "a generator function"),
        (Point, "Point is a class; register a function"),
    ],
    ids=["generator", "async generator", "partial of a generator", "class"],
)
def test_what_would_answer_with_a_repr_is_refused_at_registration(fn, message):
    mcp = NotebookMCP("signatures")
    with pytest.raises(TypeError, match=message):
        mcp.tool(name="bad")(fn)
    assert reply(mcp, "tools/list", {})["tools"] == []


def untyped_name(x: NoSuchType) -> int:  # noqa: F821  # the point: it is not defined
    return 1


class Opaque:
    """A class pydantic can check but not describe in JSON Schema."""


def opaque(x: Opaque) -> int:
    return 1


@pytest.mark.parametrize(
    ("fn", "message"),
    [
        (untyped_name, r"untyped_name\(\): its parameters name a type that is not defined: "),
        (opaque, r"opaque\(\): a parameter's type has no JSON Schema"),
    ],
    ids=["undefined annotation", "no JSON Schema"],
)
def test_parameter_types_without_a_schema_are_one_clear_error(fn, message):
    # Before: pydantic's error, which told the user to call untyped_name_arguments.
    # model_rebuild(), a class they never made, or a 33-line traceback.
    mcp = NotebookMCP("signatures")
    with pytest.raises(TypeError, match=message) as refused:
        mcp.tool(fn)
    assert "model_rebuild" not in str(refused.value) and "input_schema=" in str(refused.value)
