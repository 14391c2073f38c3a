"""Argument and result checks: the fast validator never disagrees with jsonschema."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_notebook import NotebookMCP
from mcp_notebook.registry.validation import SchemaCheck


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(TypedDict):
    x: float
    y: float


@dataclass
class Box:
    label: str
    size: int = 1


def _schemas() -> list[dict[str, Any]]:
    """The input and output schemas of tools that cover what type hints can say."""
    mcp = NotebookMCP()

    @mcp.tool
    def scalars(a: int, b: float, c: str, d: bool = False) -> int:
        return a

    @mcp.tool
    def containers(xs: list[int], pair: tuple[int, str], tags: dict[str, float]) -> list[str]:
        return []

    @mcp.tool
    def choices(color: Color, mode: Literal["a", "b"], maybe: int | None = None) -> Point:
        return {"x": 0, "y": 0}

    @mcp.tool
    def nested(point: Point, box: Box, boxes: list[Box]) -> Box:
        return box

    schemas = []
    for tool in mcp.registry.tools.values():
        schemas.append(tool.input_schema)
        schemas.append(tool.output_schema)
    # Hand-written schemas (input_schema=) use keywords hints do not produce.
    schemas.append(
        {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 0, "maximum": 10, "multipleOf": 2},
                "s": {"type": "string", "minLength": 2, "maxLength": 3},
                "e": {"enum": [1, "one", None]},
            },
            "required": ["n"],
            "additionalProperties": False,
        }
    )
    return schemas


SCHEMAS = _schemas()

KEYS = "a b c d xs pair tags color mode maybe point box boxes x y label size n s e result"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "a", "ab", "red", "blue", "b", "x", "one", "ABC"]),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(KEYS.split()),
            children,
            max_size=6,
        )
    ),
    max_leaves=12,
)


def test_the_fast_validator_is_in_use() -> None:
    # jsonschema-rs is a dependency: without it every call pays ~10 µs per check.
    for schema in SCHEMAS:
        assert SchemaCheck(schema).fast is not None, schema


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
@settings(max_examples=300, deadline=None)
@given(instance=json_values)
def test_verdicts_match_jsonschema(index: int, instance: Any) -> None:
    schema = SCHEMAS[index]
    reference = jsonschema.Draft202012Validator(schema)
    check = SchemaCheck(schema)
    assert (check.error(instance) is None) == reference.is_valid(instance)
    assert check.fast.is_valid(instance) == reference.is_valid(instance)  # alone, too


def test_integers_beyond_64_bits_are_judged_alike() -> None:
    check = SchemaCheck({"type": "integer", "maximum": 2**80})
    assert check.error(2**75) is None
    assert check.error(2**81) is not None


@pytest.mark.parametrize(
    ("schema", "instance"),
    [
        ({"type": "number", "multipleOf": 0.1}, 0.3),  # float arithmetic: jsonschema says no
        ({"type": "string", "pattern": "^\\s$"}, "\ufeff"),  # the regex engines differ
        ({"patternProperties": {"^\\s$": {"type": "integer"}}}, {"\ufeff": "x"}),
        ({"type": "array", "items": {"multipleOf": 0.1}}, [0.3]),
    ],
)
def test_where_the_validators_differ_jsonschema_alone_decides(schema: dict, instance: Any) -> None:
    check = SchemaCheck(schema)
    assert check.fast is None
    expected = jsonschema.Draft202012Validator(schema).is_valid(instance)
    assert (check.error(instance) is None) == expected


def test_whole_multiples_keep_the_fast_path() -> None:
    check = SchemaCheck({"type": "integer", "multipleOf": 2})
    assert check.fast is not None
    assert check.error(4) is None and check.error(3) is not None


VALID = [
    {"a": 1, "b": 2.5, "c": "x"},
    {"a": 1, "b": 2, "c": "", "d": True},
    {"result": 3},
    {"xs": [1, 2], "pair": [1, "a"], "tags": {"k": 1.5}},
    {"color": "red", "mode": "b", "maybe": None},
    {"x": 1, "y": 2.5},
    {"point": {"x": 0, "y": 0}, "box": {"label": "a"}, "boxes": [{"label": "b", "size": 2}]},
    {"label": "l", "size": 3},
    {"n": 4, "s": "ab", "e": "one"},
]


@pytest.mark.parametrize("instance", VALID)
def test_valid_instances_pass_on_the_fast_path(instance: dict[str, Any]) -> None:
    fitting = [s for s in SCHEMAS if jsonschema.Draft202012Validator(s).is_valid(instance)]
    assert fitting, f"no schema accepts {instance}"
    for schema in fitting:
        check = SchemaCheck(schema)
        assert check.fast.is_valid(instance)
        assert check.error(instance) is None


def test_a_huge_bad_argument_is_not_echoed_back_whole() -> None:
    # jsonschema quotes the value in its message: 4 MiB in, 4 MiB of error out, before.
    mcp = NotebookMCP()

    @mcp.tool
    def takes_an_int(n: int) -> int:
        return n

    message = mcp.registry.tools["takes_an_int"].argument_error({"n": "x" * (4 * 1024 * 1024)})
    assert message is not None and len(message) < 1000
    assert "is not of type 'integer'" in message
    assert "characters cut" in message
