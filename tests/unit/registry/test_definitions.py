"""A component whose listing entry no client could take is refused where it is registered.

Before, ``@mcp.tool(annotations=5)`` or a ``nan`` default registered without a word, and
from then on every ``tools/list`` failed (a -32603, or a list the official SDK rejects):
one bad cell hid every tool from every agent. Now the registration raises, naming the
parameter, and the tools registered before still list, schema-valid.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session
from tests.schema import validate_reply


def double(x: int) -> int:
    return 2 * x


def listing(mcp: NotebookMCP, method: str) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": 1, "method": method}
    reply = asyncio.run(Server(mcp.registry).handle(message, Session()))
    validate_reply(method, reply)
    return reply["result"]


BAD_TOOLS = [
    ({"annotations": 5}, "annotations=: 5 is not of type 'object'"),
    ({"annotations": {"readOnlyHint": "no"}}, "annotations= (at readOnlyHint): 'no'"),
    ({"icons": "x"}, "icons=: 'x' is not of type 'array'"),
    ({"icons": [{"mimeType": "image/png"}]}, "icons= (at 0): 'src' is a required property"),
    ({"meta": [1]}, "meta= must be a dict, not list"),
    ({"meta": {"when": float("nan")}}, "meta= (at when) holds nan"),
    ({"input_schema": {"type": "string"}}, "input_schema= (at type): 'object' was expected"),
    ({"output_schema": {"type": "array"}}, "output_schema= (at type): 'object' was expected"),
]


@pytest.mark.parametrize(("options", "message"), BAD_TOOLS, ids=[str(o) for o, _ in BAD_TOOLS])
def test_a_tool_no_client_could_list_is_refused_at_registration(options, message):
    mcp = NotebookMCP("defs")
    mcp.tool(double)
    with pytest.raises((TypeError, ValueError), match="Tool 'bad': ") as raised:
        mcp.tool(name="bad", **options)(double)
    assert message in str(raised.value)
    tools = listing(mcp, "tools/list")["tools"]
    assert [tool["name"] for tool in tools] == ["double"]


@pytest.mark.parametrize("default", [float("nan"), float("inf"), float("-inf")])
def test_a_default_json_cannot_carry_names_the_parameter(default):
    mcp = NotebookMCP("defs")

    def scaled(x: float = default) -> float:
        return x

    with pytest.raises(ValueError, match=r"Tool 'scaled': input_schema= \(at properties.x"):
        mcp.tool(scaled)
    assert listing(mcp, "tools/list")["tools"] == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"size": "big"}, "size=: 'big' is not of type 'integer'"),
        ({"size": -5}, "size=: -5 is less than the minimum of 0"),
        ({"annotations": 5}, "annotations=: 5 is not of type 'object'"),
        ({"annotations": {"priority": 2}}, "annotations= (at priority): 2 is greater than"),
        ({"annotations": {"audience": ["everyone"]}}, "annotations= (at audience.0)"),
    ],
)
def test_a_resource_no_client_could_list_is_refused(options, message):
    mcp = NotebookMCP("defs")
    with pytest.raises(ValueError, match="Resource 'notes': ") as raised:
        mcp.resource(uri="notes://today", name="notes", **options)(lambda: "hello")
    assert message in str(raised.value)
    assert listing(mcp, "resources/list")["resources"] == []


def test_what_clients_accept_still_registers_and_lists():
    mcp = NotebookMCP("defs")
    mcp.tool(
        annotations={"title": "Double", "readOnlyHint": True, "openWorldHint": False},
        icons=[{"src": "https://example.com/x.png", "sizes": ["48x48"], "theme": "dark"}],
        meta={"team": "data", "version": 2.5},
        output_schema={"type": "object", "properties": {"result": {"type": "integer"}}},
    )(double)
    mcp.resource(
        uri="notes://today",
        name="notes",
        size=0,
        annotations={"audience": ["user"], "priority": 0.5},
    )(lambda: "hello")
    tools = listing(mcp, "tools/list")["tools"]
    assert tools[0]["annotations"]["readOnlyHint"] is True
    assert tools[0]["_meta"] == {"team": "data", "version": 2.5}
    assert listing(mcp, "resources/list")["resources"][0]["size"] == 0


@dataclasses.dataclass
class Node:
    name: str
    children: list[Node]


def tree() -> Node:
    return Node("root", [Node("leaf", [])])


def test_a_tool_returning_a_recursive_type_still_registers_with_an_object_schema():
    # Its output schema is pydantic's {"$ref": ..., "$defs": ...}: it now says "type":
    # "object" beside the $ref, which the listing check (and a 2025-11-25 client) needs.
    mcp = NotebookMCP("defs")
    mcp.tool(tree)
    (listed,) = listing(mcp, "tools/list")["tools"]
    assert listed["outputSchema"]["type"] == "object" and "$ref" in listed["outputSchema"]
    message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "tree"}}
    result = asyncio.run(Server(mcp.registry).handle(message, Session()))["result"]
    assert (
        not result.get("isError") and result["structuredContent"]["children"][0]["name"] == "leaf"
    )
