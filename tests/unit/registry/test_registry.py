"""What notebook users rely on when they register tools, resources and prompts.

Everything goes through the public ``NotebookMCP`` API; what a client would see is read
back through the sans-IO server (``tools/list``, ``tools/call``, ...) and every reply is
validated against the official MCP schema.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import enum
import io
import itertools
import json
import typing
from typing import Any, Literal, Optional, Union

import jsonschema
import pandas as pd
import pydantic
import pytest
from typing_extensions import TypedDict

from mcp_notebook import NotebookMCP
from mcp_notebook.protocol import Server, Session
from tests.schema import validate, validate_reply

# -- helpers ---------------------------------------------------------------------------

_ids = itertools.count(1)


async def reply_to(mcp: NotebookMCP, method: str, params: dict[str, Any] | None = None) -> dict:
    """The schema-valid JSON-RPC reply of a fresh server over ``mcp``'s registry."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(_ids), "method": method}
    if params is not None:
        message["params"] = params
    reply = await Server(mcp.registry).handle(message, Session())
    assert reply is not None
    return validate_reply(method, reply)


async def rpc(mcp: NotebookMCP, method: str, params: dict[str, Any] | None = None) -> dict:
    """The result of a request that must succeed."""
    reply = await reply_to(mcp, method, params)
    assert "error" not in reply, reply
    return reply["result"]


async def rpc_error(mcp: NotebookMCP, method: str, params: dict[str, Any] | None = None) -> dict:
    """The JSON-RPC error object of a request that must fail."""
    reply = await reply_to(mcp, method, params)
    assert "error" in reply, reply
    return reply["error"]


async def call(mcp: NotebookMCP, tool: str, /, **arguments: Any) -> dict:
    return await rpc(mcp, "tools/call", {"name": tool, "arguments": arguments})


async def tool_definition(mcp: NotebookMCP, name: str) -> dict:
    tools = (await rpc(mcp, "tools/list"))["tools"]
    found = [t for t in tools if t["name"] == name]
    assert len(found) == 1, [t["name"] for t in tools]
    return validate(found[0], "Tool")


async def read(mcp: NotebookMCP, uri: str) -> dict:
    contents = (await rpc(mcp, "resources/read", {"uri": uri}))["contents"]
    assert len(contents) == 1
    assert contents[0]["uri"] == uri
    return contents[0]


async def names(mcp: NotebookMCP, kind: str) -> list[str]:
    method, key = {
        "tools": ("tools/list", "tools"),
        "resources": ("resources/list", "resources"),
        "templates": ("resources/templates/list", "resourceTemplates"),
        "prompts": ("prompts/list", "prompts"),
    }[kind]
    return [item["name"] for item in (await rpc(mcp, method))[key]]


def property_validator(schema: dict, param: str) -> jsonschema.Draft202012Validator:
    """A validator for one parameter, keeping the schema's ``$defs`` for ``$ref``s."""
    prop = dict(schema["properties"][param])
    if "$defs" in schema:
        prop["$defs"] = schema["$defs"]
    return jsonschema.Draft202012Validator(prop)


def accepts(schema: dict, param: str, value: Any) -> bool:
    return property_validator(schema, param).is_valid(value)


def resolved(schema: dict, node: dict) -> dict:
    """``node`` with a local ``$ref`` followed (pydantic puts models in ``$defs``)."""
    if "$ref" in node:
        return schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def only_text(result: dict) -> str:
    assert len(result["content"]) == 1, result
    block = result["content"][0]
    assert block["type"] == "text"
    return block["text"]


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Movie(TypedDict):
    title: str
    year: int


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Row(typing.TypedDict):  # the stdlib spelling, not typing_extensions
    key: str
    value: int


class User(pydantic.BaseModel):
    name: str
    age: int = 0


# -- input schema inference --------------------------------------------------------------


async def test_schema_scalar_types_are_required_json_types():
    mcp = NotebookMCP()

    @mcp.tool
    def scalars(i: int, f: float, s: str, b: bool, n: None) -> str:
        return "ok"

    schema = (await tool_definition(mcp, "scalars"))["inputSchema"]
    assert schema["type"] == "object"
    types = {name: prop.get("type") for name, prop in schema["properties"].items()}
    assert types == {"i": "integer", "f": "number", "s": "string", "b": "boolean", "n": "null"}
    assert sorted(schema["required"]) == ["b", "f", "i", "n", "s"]
    assert accepts(schema, "i", 3) and not accepts(schema, "i", "3")
    assert accepts(schema, "f", 2.5) and accepts(schema, "f", 2)
    assert not accepts(schema, "b", "true")
    assert accepts(schema, "n", None) and not accepts(schema, "n", 0)


async def test_schema_optional_and_union():
    mcp = NotebookMCP()

    @mcp.tool
    def unions(
        opt: Optional[int],  # noqa: UP045 - the spelling users write must work too
        pipe: int | None,
        either: Union[int, str],  # noqa: UP007
        later: int | None = None,
    ) -> str:
        return "ok"

    schema = (await tool_definition(mcp, "unions"))["inputSchema"]
    for name in ("opt", "pipe", "later"):
        assert accepts(schema, name, 5), name
        assert accepts(schema, name, None), name
        assert not accepts(schema, name, "five"), name
    assert accepts(schema, "either", 1)
    assert accepts(schema, "either", "one")
    assert not accepts(schema, "either", None)
    assert not accepts(schema, "either", [1])
    # Optional without a default is still required; a default makes it optional.
    assert set(schema["required"]) == {"opt", "pipe", "either"}
    assert schema["properties"]["later"]["default"] is None


async def test_schema_containers():
    mcp = NotebookMCP()

    @mcp.tool
    def containers(numbers: list[int], counts: dict[str, int], pair: tuple[int, str]) -> str:
        return "ok"

    schema = (await tool_definition(mcp, "containers"))["inputSchema"]
    props = schema["properties"]
    assert props["numbers"]["type"] == "array"
    assert accepts(schema, "numbers", [1, 2, 3])
    assert not accepts(schema, "numbers", [1, "2"])
    assert props["counts"]["type"] == "object"
    assert accepts(schema, "counts", {"a": 1})
    assert not accepts(schema, "counts", {"a": "1"})
    assert props["pair"]["type"] == "array"
    assert accepts(schema, "pair", [1, "a"])
    assert not accepts(schema, "pair", ["a", 1])
    assert not accepts(schema, "pair", [1])
    assert not accepts(schema, "pair", [1, "a", "extra"])
    assert sorted(schema["required"]) == ["counts", "numbers", "pair"]


async def test_schema_literal_and_enum():
    mcp = NotebookMCP()

    @mcp.tool
    def choose(mode: Literal["a", "b"], color: Color) -> str:
        return "ok"

    schema = (await tool_definition(mcp, "choose"))["inputSchema"]
    assert schema["properties"]["mode"]["enum"] == ["a", "b"]
    assert not accepts(schema, "mode", "c")
    assert resolved(schema, schema["properties"]["color"])["enum"] == ["red", "blue"]
    assert accepts(schema, "color", "red")
    assert not accepts(schema, "color", "green")
    assert not accepts(schema, "color", "RED")


async def test_schema_typeddict_dataclass_and_model_are_objects():
    mcp = NotebookMCP()

    @mcp.tool
    def structured(movie: Movie, point: Point, user: User) -> str:
        return "ok"

    schema = (await tool_definition(mcp, "structured"))["inputSchema"]
    for name, fields, required in [
        ("movie", {"title", "year"}, {"title", "year"}),
        ("point", {"x", "y"}, {"x"}),
        ("user", {"name", "age"}, {"name"}),
    ]:
        model = resolved(schema, schema["properties"][name])
        assert model["type"] == "object", name
        assert set(model["properties"]) == fields, name
        assert set(model["required"]) == required, name
    assert accepts(schema, "movie", {"title": "Alien", "year": 1979})
    assert not accepts(schema, "movie", {"title": "Alien"})
    assert accepts(schema, "point", {"x": 1})
    assert not accepts(schema, "point", {"x": "one"})
    assert accepts(schema, "user", {"name": "ada", "age": 36})
    assert not accepts(schema, "user", {"age": 36})


async def test_schema_stdlib_typing_typeddict():
    """``from typing import TypedDict`` is what users write, on every supported Python."""
    mcp = NotebookMCP()

    @mcp.tool
    def put(row: Row) -> Row:
        return row

    definition = await tool_definition(mcp, "put")
    schema = definition["inputSchema"]
    assert set(resolved(schema, schema["properties"]["row"])["required"]) == {"key", "value"}
    assert set(definition["outputSchema"]["properties"]) == {"key", "value"}


async def test_schema_defaults_are_optional_with_default():
    mcp = NotebookMCP()

    @mcp.tool
    def search(
        query: str,
        limit: int = 10,
        ratio: float = 0.5,
        exact: bool = False,
        mode: Literal["a", "b"] = "b",
        color: Color = Color.BLUE,
        tags: list[str] | None = None,
    ) -> str:
        return "ok"

    schema = (await tool_definition(mcp, "search"))["inputSchema"]
    assert schema["required"] == ["query"]
    assert "default" not in schema["properties"]["query"]
    defaults = {n: p["default"] for n, p in schema["properties"].items() if "default" in p}
    assert defaults == {
        "limit": 10,
        "ratio": 0.5,
        "exact": False,
        "mode": "b",
        "color": "blue",
        "tags": None,
    }


async def test_schema_parameter_descriptions_from_google_docstring():
    mcp = NotebookMCP()

    @mcp.tool
    def scale(value: float, factor: float = 2.0, note: str = "") -> float:
        """Multiply a value by a factor.

        Args:
            value: The number to scale.
            factor (float): How much to multiply by,
                defaults to two.
            note: Free text.

        Returns:
            The scaled value.
        """
        return value * factor

    definition = await tool_definition(mcp, "scale")
    props = definition["inputSchema"]["properties"]
    assert props["value"]["description"] == "The number to scale."
    assert props["factor"]["description"] == "How much to multiply by, defaults to two."
    assert props["note"]["description"] == "Free text."
    assert definition["description"] == "Multiply a value by a factor."


async def test_tool_description_is_docstring_summary_without_sections():
    mcp = NotebookMCP()

    @mcp.tool
    def greet(name: str) -> str:
        """Say hello to someone.

        Args:
            name: Who to greet.

        Raises:
            ValueError: never.
        """
        return f"hello {name}"

    @mcp.tool
    def undocumented(x: int) -> int:
        return x

    description = (await tool_definition(mcp, "greet"))["description"]
    assert description == "Say hello to someone."
    # No docstring: a description made from the name (strict clients require one).
    assert (await tool_definition(mcp, "undocumented"))["description"] == "Undocumented."
    schema = (await tool_definition(mcp, "undocumented"))["inputSchema"]
    assert "description" not in schema["properties"]["x"]


@pytest.mark.parametrize(
    "name, sentence",
    [
        ("get_weather", "Get weather."),
        ("getWeather", "Get weather."),
        ("fetch-URL", "Fetch URL."),
        ("load_CSV_file", "Load CSV file."),
        ("x", "X."),
        ("report.v2", "Report v2."),
        ("___", "___"),  # nothing to make words of: the name itself
    ],
)
def test_a_description_made_from_a_name(name, sentence):
    from mcp_notebook.registry.components import sentence_from

    assert sentence_from(name) == sentence


async def test_every_component_registered_without_a_description_gets_one():
    """Strict clients (and the conformance suite's prompts-list check) reject a listing
    entry without a description: each kind gets a default, and an explicit one wins."""
    mcp = NotebookMCP()

    @mcp.tool
    def count_rows(table: str) -> int:
        return 0

    @mcp.tool(input_schema={"type": "object", "properties": {}})
    def ping_db():
        """Check the database answers.

        More text that is not the summary."""

    mcp.resource("some text", name="release_notes", uri="notes://release")

    @mcp.resource_template("notes://day/{day}", name="dayNotes")
    def day_notes(day: str) -> str:
        return day

    mcp.prompt("review", "\n  Review {code} for bugs.\nBe brief.")

    @mcp.prompt
    def haiku(topic: str) -> str:
        return f"A haiku about {topic}"

    mcp.prompt("explicit", "Hi {name}", description="Greets.")

    tools = {t["name"]: t for t in (await rpc(mcp, "tools/list"))["tools"]}
    assert tools["count_rows"]["description"] == "Count rows."
    assert tools["ping_db"]["description"] == "Check the database answers."
    (resource,) = (await rpc(mcp, "resources/list"))["resources"]
    assert resource["description"] == "Release notes (notes://release)."
    (template,) = (await rpc(mcp, "resources/templates/list"))["resourceTemplates"]
    assert template["description"] == "Day notes (notes://day/{day})."
    prompts = {p["name"]: p for p in (await rpc(mcp, "prompts/list"))["prompts"]}
    assert prompts["review"]["description"] == "Review {code} for bugs."
    assert prompts["haiku"]["description"] == "Haiku."
    assert prompts["explicit"]["description"] == "Greets."
    for entry in [*tools.values(), resource, template, *prompts.values()]:
        assert isinstance(entry["description"], str) and entry["description"]


async def test_explicit_options_are_passed_through():
    mcp = NotebookMCP()
    input_schema = {
        "type": "object",
        "properties": {"q": {"type": "string", "description": "query"}},
        "required": ["q"],
    }
    output_schema = {
        "type": "object",
        "properties": {"hits": {"type": "integer"}},
        "required": ["hits"],
    }
    annotations = {"readOnlyHint": True, "openWorldHint": False}

    @mcp.tool(
        name="db.search",
        title="Search the database",
        description="Explicit description.",
        annotations=annotations,
        input_schema=input_schema,
        output_schema=output_schema,
    )
    def search(**kwargs: Any) -> int:
        """Docstring that must not win."""
        return 3

    definition = await tool_definition(mcp, "db.search")
    assert definition == {
        "name": "db.search",
        "title": "Search the database",
        "description": "Explicit description.",
        "inputSchema": input_schema,
        "outputSchema": output_schema,
        "annotations": annotations,
    }
    assert await names(mcp, "tools") == ["db.search"]


async def test_output_schema_from_return_annotation():
    mcp = NotebookMCP()

    @mcp.tool
    def as_dataclass() -> Point:
        return Point(1, 2)

    @mcp.tool
    def as_typeddict() -> Movie:
        return {"title": "Alien", "year": 1979}

    @mcp.tool
    def as_model() -> User:
        return User(name="ada")

    @mcp.tool
    def as_int() -> int:
        return 1

    @mcp.tool
    def as_list() -> list[int]:
        return [1]

    @mcp.tool
    def as_str() -> str:
        return "x"

    @mcp.tool
    def as_none() -> None:
        return None

    @mcp.tool
    def unannotated():
        return None

    for name, fields in [
        ("as_dataclass", {"x", "y"}),
        ("as_typeddict", {"title", "year"}),
        ("as_model", {"name", "age"}),
    ]:
        schema = (await tool_definition(mcp, name))["outputSchema"]
        root = resolved(schema, schema)
        assert root["type"] == "object", name
        assert set(root["properties"]) == fields, name
    int_schema = (await tool_definition(mcp, "as_int"))["outputSchema"]
    assert int_schema["type"] == "object"
    assert int_schema["properties"]["result"]["type"] == "integer"
    assert int_schema["required"] == ["result"]
    list_schema = (await tool_definition(mcp, "as_list"))["outputSchema"]
    assert list_schema["properties"]["result"]["type"] == "array"
    for name in ("as_str", "as_none", "unannotated"):
        assert "outputSchema" not in await tool_definition(mcp, name), name


async def test_every_tool_definition_validates_as_schema_tool():
    mcp = NotebookMCP()

    @mcp.tool
    def everything(
        a: int,
        b: Optional[float],  # noqa: UP045
        c: list[dict[str, int]],
        d: tuple[int, str],
        e: Literal["x", "y"],
        f: Color,
        g: Movie,
        h: Point,
        i: User,
        j: bool = True,
    ) -> Point:
        """Takes everything.

        Args:
            a: an int.
        """
        return h

    @mcp.tool(annotations={"destructiveHint": True}, title="Nothing")
    def nothing() -> None:
        pass

    @mcp.tool
    def counts() -> dict[str, int]:
        return {}

    result = await rpc(mcp, "tools/list")
    assert [t["name"] for t in result["tools"]] == ["everything", "nothing", "counts"]
    for tool in result["tools"]:
        validate(tool, "Tool")
        jsonschema.Draft202012Validator.check_schema(tool["inputSchema"])
        if "outputSchema" in tool:
            assert tool["outputSchema"]["type"] == "object"
            jsonschema.Draft202012Validator.check_schema(tool["outputSchema"])


def test_invalid_tool_registration_is_rejected():
    mcp = NotebookMCP()
    with pytest.raises(TypeError):
        mcp.tool(42)
    with pytest.raises(ValueError, match="tool name"):
        mcp.tool(name="has spaces")(lambda: None)
    assert mcp.registry.tools == {}


# -- argument conversion -----------------------------------------------------------------


async def test_structured_parameters_receive_python_objects():
    mcp = NotebookMCP()
    received: dict[str, Any] = {}

    @mcp.tool
    def take(point: Point, color: Color, user: User, pair: tuple[int, str]) -> str:
        received.update(point=point, color=color, user=user, pair=pair)
        return "ok"

    result = await call(
        mcp, "take", point={"x": 3}, color="blue", user={"name": "ada", "age": 36}, pair=[1, "a"]
    )
    assert not result.get("isError"), result
    assert received["point"] == Point(3, 0)
    assert isinstance(received["point"], Point)
    assert received["color"] is Color.BLUE
    assert isinstance(received["user"], User)
    assert received["user"].name == "ada" and received["user"].age == 36
    assert received["pair"] == (1, "a")


async def test_nested_and_optional_structured_parameters_are_converted():
    mcp = NotebookMCP()
    received: dict[str, Any] = {}

    @mcp.tool
    def many(points: list[Point], maybe: Point | None = None) -> int:
        received.update(points=points, maybe=maybe)
        return len(points)

    await call(mcp, "many", points=[{"x": 1}, {"x": 2, "y": 5}])
    assert received == {"points": [Point(1, 0), Point(2, 5)], "maybe": None}
    await call(mcp, "many", points=[], maybe={"x": 9})
    assert received["maybe"] == Point(9, 0)


async def test_async_tool_is_awaited():
    mcp = NotebookMCP()

    @mcp.tool
    async def slow(n: int) -> int:
        await asyncio.sleep(0)
        return n + 1

    result = await call(mcp, "slow", n=1)
    assert result["structuredContent"] == {"result": 2}
    assert not result.get("isError")


async def test_defaults_are_applied_when_arguments_are_omitted():
    mcp = NotebookMCP()

    @mcp.tool
    def add(a: int, b: int = 10) -> int:
        return a + b

    result = await call(mcp, "add", a=1)
    assert result["structuredContent"] == {"result": 11}


# -- return values through tools/call ---------------------------------------------------------


async def test_str_result_is_one_text_block():
    mcp = NotebookMCP()

    @mcp.tool
    def hello(name: str) -> str:
        return f"hello {name}"

    result = await call(mcp, "hello", name="ada")
    assert result["content"] == [{"type": "text", "text": "hello ada"}]
    assert not result.get("isError")
    assert "structuredContent" not in result


async def test_structured_results_have_structured_content_and_same_json_text():
    mcp = NotebookMCP()

    @mcp.tool
    def as_dict():
        return {"a": 1, "b": [1, 2]}

    @mcp.tool
    def as_dataclass() -> Point:
        return Point(1, 2)

    @mcp.tool
    def as_model() -> User:
        return User(name="ada", age=36)

    @mcp.tool
    def as_list():
        return [1, "two", None]

    for name, expected in [
        ("as_dict", {"a": 1, "b": [1, 2]}),
        ("as_dataclass", {"x": 1, "y": 2}),
        ("as_model", {"name": "ada", "age": 36}),
    ]:
        result = await call(mcp, name)
        assert not result.get("isError"), result
        assert result["structuredContent"] == expected, name
        assert json.loads(only_text(result)) == expected, name
    result = await call(mcp, "as_list")
    assert json.loads(only_text(result)) == [1, "two", None]
    # structuredContent must be an object, so a list is wrapped.
    assert result["structuredContent"] == {"result": [1, "two", None]}


async def test_wrapped_scalar_result_matches_output_schema():
    mcp = NotebookMCP()

    @mcp.tool
    def count() -> int:
        return 42

    definition = await tool_definition(mcp, "count")
    result = await call(mcp, "count")
    assert result["structuredContent"] == {"result": 42}
    jsonschema.validate(result["structuredContent"], definition["outputSchema"])
    assert json.loads(only_text(result)) == 42


async def test_none_result_is_empty_content():
    mcp = NotebookMCP()
    calls = []

    @mcp.tool
    def side_effect() -> None:
        calls.append(1)

    result = await call(mcp, "side_effect")
    assert result["content"] == []
    assert not result.get("isError")
    assert calls == [1]


async def test_exception_is_error_result_with_message_and_no_traceback():
    mcp = NotebookMCP()

    def inner() -> None:
        raise ValueError("the widget is broken")

    @mcp.tool
    def fails() -> str:
        inner()
        return "unreachable"

    result = await call(mcp, "fails")
    assert result["isError"] is True
    text = " ".join(block.get("text", "") for block in result["content"])
    assert "the widget is broken" in text
    assert "Traceback" not in text
    assert 'File "' not in text
    assert "inner" not in text
    assert "structuredContent" not in result


async def test_result_not_matching_output_schema_is_error_result():
    mcp = NotebookMCP()

    @mcp.tool
    def wrong_int() -> int:
        return "not a number"  # type: ignore[return-value]

    @mcp.tool
    def wrong_shape() -> Point:
        return {"x": "one"}  # type: ignore[return-value]

    @mcp.tool(output_schema={"type": "object", "properties": {}, "required": ["hits"]})
    def missing_field() -> dict:
        return {"other": 1}

    for name in ("wrong_int", "wrong_shape", "missing_field"):
        result = await call(mcp, name)
        assert result["isError"] is True, (name, result)
        assert "output schema" in only_text(result), name


# -- resources -----------------------------------------------------------------------------


async def test_str_resource():
    mcp = NotebookMCP()
    returned = mcp.resource("# Notes\nhello", name="notes", description="My notes")
    assert returned == "# Notes\nhello"

    listed = (await rpc(mcp, "resources/list"))["resources"]
    assert len(listed) == 1
    entry = validate(listed[0], "Resource")
    assert entry["name"] == "notes"
    assert entry["description"] == "My notes"
    assert entry["mimeType"] == "text/plain"
    contents = await read(mcp, entry["uri"])
    assert contents["text"] == "# Notes\nhello"
    assert "blob" not in contents


async def test_bytes_resource_is_base64_blob():
    mcp = NotebookMCP()
    data = bytes(range(256))
    mcp.resource(data, name="raw", uri="data://raw", mime_type="application/x-test")

    contents = await read(mcp, "data://raw")
    assert "text" not in contents
    assert base64.b64decode(contents["blob"]) == data
    assert contents["mimeType"] == "application/x-test"


async def test_png_bytes_resource_gets_image_mime_type():
    mcp = NotebookMCP()
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    mcp.resource(png, name="plot")

    (entry,) = (await rpc(mcp, "resources/list"))["resources"]
    contents = await read(mcp, entry["uri"])
    assert contents["mimeType"] == "image/png"
    assert base64.b64decode(contents["blob"]) == png


async def test_dataframe_resource_is_csv_at_df_uri():
    mcp = NotebookMCP()
    frame = pd.DataFrame({"city": ["Oslo", "Lima"], "sales": [3, 5]})
    mcp.resource(frame, name="sales")

    (entry,) = (await rpc(mcp, "resources/list"))["resources"]
    assert entry["uri"] == "df://sales"
    assert entry["mimeType"] == "text/csv"
    contents = await read(mcp, "df://sales")
    assert contents["mimeType"] == "text/csv"
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(contents["text"])), frame)


async def test_callable_resource_is_read_again_on_each_read():
    mcp = NotebookMCP()
    state = {"status": "starting"}

    @mcp.resource(uri="status://now")
    def status() -> str:
        """The current status."""
        return state["status"]

    (entry,) = (await rpc(mcp, "resources/list"))["resources"]
    assert entry["name"] == "status"
    assert entry["description"] == "The current status."
    assert (await read(mcp, "status://now"))["text"] == "starting"
    state["status"] = "running"
    assert (await read(mcp, "status://now"))["text"] == "running"


async def test_callable_resource_returning_dataframe_changes_between_reads():
    mcp = NotebookMCP()
    frames = [pd.DataFrame({"n": [1]})]
    mcp.resource(lambda: frames[-1], name="latest", uri="df://latest")

    assert pd.read_csv(io.StringIO((await read(mcp, "df://latest"))["text"]))["n"].tolist() == [1]
    frames.append(pd.DataFrame({"n": [1, 2, 3]}))
    text = (await read(mcp, "df://latest"))["text"]
    assert pd.read_csv(io.StringIO(text))["n"].tolist() == [1, 2, 3]


async def test_resource_template_function():
    mcp = NotebookMCP()
    seen = []

    @mcp.resource_template("notes://{day}", mime_type="text/markdown")
    def notes(day: str) -> str:
        """Notes of one day."""
        seen.append(day)
        return f"# {day}"

    @mcp.resource_template("items://{n}")
    def item(n: int) -> str:
        seen.append(n)
        return "x" * n

    templates = (await rpc(mcp, "resources/templates/list"))["resourceTemplates"]
    assert [validate(t, "ResourceTemplate")["uriTemplate"] for t in templates] == [
        "notes://{day}",
        "items://{n}",
    ]
    assert templates[0]["name"] == "notes"
    assert templates[0]["description"] == "Notes of one day."
    # Templates are not concrete resources.
    assert (await rpc(mcp, "resources/list"))["resources"] == []

    contents = await read(mcp, "notes://monday")
    assert contents["text"] == "# monday"
    assert contents["mimeType"] == "text/markdown"
    assert (await read(mcp, "items://3"))["text"] == "xxx"
    assert seen == ["monday", 3]


def test_invalid_resource_registration_raises():
    mcp = NotebookMCP()
    with pytest.raises(TypeError, match="int"):
        mcp.resource(42, name="answer")
    with pytest.raises(TypeError):
        mcp.resource({"a": 1}, name="mapping")
    with pytest.raises(ValueError, match="name"):
        mcp.resource("a value without a name")
    with pytest.raises(ValueError, match="scheme"):
        mcp.resource("text", name="bad", uri="no-scheme-here")
    with pytest.raises(ValueError, match="scheme"):
        mcp.resource_template("{day}/notes")
    with pytest.raises(TypeError, match="day"):
        mcp.resource_template("notes://{day}")(lambda other: "x")
    assert mcp.registry.resources == {}
    assert mcp.registry.templates == {}


def test_anonymous_lambda_resource_needs_a_name():
    """A lambda has no usable name: like a value, it needs name= (or uri=)."""
    mcp = NotebookMCP()
    with pytest.raises(ValueError, match="name"):
        mcp.resource(lambda: "x")
    assert mcp.registry.resources == {}
    mcp.resource(lambda: "x", uri="data://x")
    assert [r.uri for r in mcp.registry.resources.values()] == ["data://x"]


# -- prompts -------------------------------------------------------------------------------


async def test_template_prompt_arguments_and_defaults():
    mcp = NotebookMCP()
    mcp.prompt("review", "Review {a} in the style of {b}.", defaults={"b": "x"})

    (prompt,) = (await rpc(mcp, "prompts/list"))["prompts"]
    validate(prompt, "Prompt")
    assert prompt["name"] == "review"
    assert prompt["arguments"] == [
        {"name": "a", "required": True},
        {"name": "b", "required": False},
    ]
    result = await rpc(mcp, "prompts/get", {"name": "review", "arguments": {"a": "code"}})
    assert result["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Review code in the style of x."}}
    ]
    result = await rpc(
        mcp, "prompts/get", {"name": "review", "arguments": {"a": "code", "b": "Strunk"}}
    )
    assert result["messages"][0]["content"]["text"] == "Review code in the style of Strunk."
    error = await rpc_error(mcp, "prompts/get", {"name": "review", "arguments": {"b": "y"}})
    assert error["code"] == -32602
    assert "a" in error["message"]


async def test_template_prompt_escaped_braces_are_not_arguments():
    mcp = NotebookMCP()
    mcp.prompt("as_json", 'Answer {question} as {{"answer": ...}}.')

    (prompt,) = (await rpc(mcp, "prompts/list"))["prompts"]
    assert prompt["arguments"] == [{"name": "question", "required": True}]
    result = await rpc(mcp, "prompts/get", {"name": "as_json", "arguments": {"question": "Q"}})
    assert result["messages"][0]["content"]["text"] == 'Answer Q as {"answer": ...}.'
    with pytest.raises(ValueError, match="placeholder"):
        mcp.prompt("positional", "Hello {0}")


async def test_function_prompt_returning_str():
    mcp = NotebookMCP()

    @mcp.prompt
    def summarize(topic: str, length: str = "short") -> str:
        """Summarize a topic.

        Args:
            topic: What to summarize.
        """
        return f"Give a {length} summary of {topic}."

    (prompt,) = (await rpc(mcp, "prompts/list"))["prompts"]
    assert prompt["name"] == "summarize"
    assert prompt["description"] == "Summarize a topic."
    assert prompt["arguments"] == [
        {"name": "topic", "required": True, "description": "What to summarize."},
        {"name": "length", "required": False},
    ]
    result = await rpc(mcp, "prompts/get", {"name": "summarize", "arguments": {"topic": "MCP"}})
    assert result["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Give a short summary of MCP."}}
    ]


async def test_function_prompt_returning_messages():
    mcp = NotebookMCP()

    @mcp.prompt("chat")
    def conversation(question: str) -> list:
        return [
            {"role": "user", "content": question},
            ("assistant", "Let me think."),
            {"role": "user", "content": {"type": "text", "text": "Go on."}},
        ]

    assert await names(mcp, "prompts") == ["chat"]
    result = await rpc(mcp, "prompts/get", {"name": "chat", "arguments": {"question": "Why?"}})
    assert [(m["role"], m["content"]["text"]) for m in result["messages"]] == [
        ("user", "Why?"),
        ("assistant", "Let me think."),
        ("user", "Go on."),
    ]


async def test_prompt_role_must_be_user_or_assistant():
    mcp = NotebookMCP()

    @mcp.prompt
    def system_prompt() -> list:
        return [{"role": "system", "content": "You are a cat."}]

    error = await rpc_error(mcp, "prompts/get", {"name": "system_prompt"})
    assert error["code"] == -32603
    assert "role" in error["message"]

    # A template with a bad role is refused at registration or, at the latest, when rendered.
    try:
        mcp.prompt("sys", "You are {what}.", role="system")
    except ValueError as exc:
        assert "role" in str(exc)
    else:
        error = await rpc_error(mcp, "prompts/get", {"name": "sys", "arguments": {"what": "x"}})
        assert "role" in error["message"]


# -- re-registration, removal and listeners -------------------------------------------------


async def test_reregistering_a_tool_replaces_it_in_place():
    mcp = NotebookMCP()

    @mcp.tool
    def first() -> str:
        return "1"

    @mcp.tool
    def middle() -> str:
        """Old."""
        return "old"

    @mcp.tool
    def last() -> str:
        return "3"

    @mcp.tool(name="middle")
    def middle_v2(flag: bool = False) -> str:
        """New."""
        return "new"

    assert await names(mcp, "tools") == ["first", "middle", "last"]
    definition = await tool_definition(mcp, "middle")
    assert definition["description"] == "New."
    assert "flag" in definition["inputSchema"]["properties"]
    assert only_text(await call(mcp, "middle")) == "new"


async def test_reregistering_resources_templates_and_prompts_replaces_in_place():
    mcp = NotebookMCP()
    mcp.resource("a", name="one")
    mcp.resource("b", name="two")
    mcp.resource("c", name="three")
    mcp.resource("B", name="two")

    resources = (await rpc(mcp, "resources/list"))["resources"]
    assert [r["name"] for r in resources] == ["one", "two", "three"]
    assert (await read(mcp, resources[1]["uri"]))["text"] == "B"

    mcp.resource(pd.DataFrame({"v": [1]}), name="frame")
    mcp.resource(pd.DataFrame({"v": [2]}), name="frame")
    assert await names(mcp, "resources") == ["one", "two", "three", "frame"]
    assert "2" in (await read(mcp, "df://frame"))["text"]

    mcp.resource_template("a://{x}", name="ta")(lambda x: "old")
    mcp.resource_template("b://{x}", name="tb")(lambda x: "b")
    mcp.resource_template("a://{x}", name="ta")(lambda x: "new")
    # The DataFrame registers its page and schema templates (named after it) too.
    assert await names(mcp, "templates") == ["frame", "frame", "ta", "tb"]
    assert (await read(mcp, "a://1"))["text"] == "new"

    mcp.prompt("p1", "one")
    mcp.prompt("p2", "two {x}")
    mcp.prompt("p3", "three")
    mcp.prompt("p2", "TWO")
    prompts = (await rpc(mcp, "prompts/list"))["prompts"]
    assert [p["name"] for p in prompts] == ["p1", "p2", "p3"]
    assert "arguments" not in prompts[1] or prompts[1]["arguments"] == []
    result = await rpc(mcp, "prompts/get", {"name": "p2"})
    assert result["messages"][0]["content"]["text"] == "TWO"


async def test_reregistering_a_resource_name_at_a_new_uri_leaves_one_entry():
    mcp = NotebookMCP()
    mcp.resource("v1", name="doc", uri="notes://v1")
    mcp.resource("v2", name="doc", uri="notes://v2")

    resources = (await rpc(mcp, "resources/list"))["resources"]
    assert [(r["name"], r["uri"]) for r in resources] == [("doc", "notes://v2")]
    error = await rpc_error(mcp, "resources/read", {"uri": "notes://v1"})
    assert error["code"] == -32002


async def test_remove_by_name_and_uri():
    mcp = NotebookMCP()

    @mcp.tool
    def keep() -> str:
        return "k"

    @mcp.tool
    def drop() -> str:
        return "d"

    mcp.resource("x", name="by_name")
    mcp.resource("y", name="by_uri", uri="data://by-uri")
    mcp.resource_template("t://{x}", name="tmpl")(lambda x: x)
    mcp.prompt("greeting", "hi")

    mcp.remove("drop")
    assert await names(mcp, "tools") == ["keep"]
    error = await rpc_error(mcp, "tools/call", {"name": "drop"})
    assert error["code"] == -32602

    mcp.remove("by_name")
    mcp.remove("data://by-uri")
    assert await names(mcp, "resources") == []
    mcp.remove("tmpl")
    assert await names(mcp, "templates") == []
    mcp.remove("greeting")
    assert await names(mcp, "prompts") == []

    with pytest.raises(KeyError, match="nope"):
        mcp.remove("nope")
    with pytest.raises(KeyError):
        mcp.remove("drop")  # already gone


def test_every_change_notifies_registry_listeners():
    mcp = NotebookMCP()
    events: list[str] = []
    unsubscribe = mcp.registry.subscribe(lambda kind, detail: events.append(kind))

    mcp.tool(lambda: "x", name="t")
    mcp.tool(lambda: "y", name="t")  # re-registration is a change too
    mcp.resource("text", name="r")
    mcp.resource_template("n://{x}", name="tpl")(lambda x: x)
    mcp.prompt("p", "hello")
    assert events == ["tools", "tools", "resources", "resources", "prompts"]

    events.clear()
    mcp.remove("t")
    mcp.remove("r")
    mcp.remove("tpl")
    mcp.remove("p")
    assert events == ["tools", "resources", "resources", "prompts"]

    events.clear()
    with pytest.raises(KeyError):
        mcp.remove("missing")
    assert events == []

    unsubscribe()
    mcp.tool(lambda: "z", name="after")
    assert events == []


def test_re_registering_a_resource_announces_its_content_changed():
    mcp = NotebookMCP()
    events: list[tuple[str, str | None]] = []
    mcp.registry.subscribe(lambda kind, detail: events.append((kind, detail)))
    mcp.resource("v1", name="notes")
    mcp.resource("v2", name="notes")
    assert events == [
        ("resources", None),
        ("resources", None),
        ("updated", "resource://notes"),
    ]
    events.clear()
    mcp.resource_updated("notes")
    assert events == [("updated", "resource://notes")]


def test_failed_registration_changes_nothing_and_notifies_nobody():
    mcp = NotebookMCP()
    events: list[str] = []
    mcp.registry.subscribe(lambda kind, detail: events.append(kind))
    with pytest.raises(TypeError):
        mcp.resource(3.14, name="pi")
    with pytest.raises(ValueError):
        mcp.tool(name="bad name!")(lambda: None)
    assert events == []
    assert mcp.registry.tools == {} and mcp.registry.resources == {}


def test_exactly_typed_scalar_arguments_pass_through_and_others_are_converted() -> None:
    seen: list[dict] = []
    mcp = NotebookMCP()

    @mcp.tool
    def scalars(a: int, b: float = 1.5, c: str = "x", d: bool = False) -> str:
        seen.append({"a": a, "b": b, "c": c, "d": d})
        return "ok"

    tool = mcp.registry.tools["scalars"]
    for arguments in ({"a": 1}, {"a": 1, "b": 2.5, "c": "y", "d": True}, {"a": 2.0, "b": 3}):
        assert tool.argument_error(arguments) is None
        tool.invoke(arguments, {})
    assert seen == [
        {"a": 1, "b": 1.5, "c": "x", "d": False},  # missing ones: the function's defaults
        {"a": 1, "b": 2.5, "c": "y", "d": True},
        {"a": 2, "b": 3.0, "c": "x", "d": False},  # 2.0 -> int, 3 -> float, as pydantic does
    ]
    assert [type(v) for v in seen[2].values()] == [int, float, str, bool]


def test_a_missing_required_scalar_is_named_by_the_conversion() -> None:
    from mcp_notebook.registry import ArgumentError
    from mcp_notebook.registry.signature import SignatureModel

    def needs(name: str, limit: int) -> str:
        return name

    model = SignatureModel(needs)
    assert model.convert({"name": "a", "limit": 3}) == {"name": "a", "limit": 3}
    with pytest.raises(ArgumentError, match="limit"):
        model.convert({"name": "a"})  # e.g. a template whose query variable was left out
