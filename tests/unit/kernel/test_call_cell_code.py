"""The Python a recorded call's cell is written in (kernel/cellcode.py) and where a break
stops (kernel/breaks.py): values that evaluate back to equal ones, or nothing."""

from __future__ import annotations

import datetime
import decimal
import uuid
from pathlib import PurePosixPath

import pandas as pd
import pytest
from pydantic import BaseModel

from mcp_notebook.kernel.breaks import Breaks, first_body_line
from mcp_notebook.kernel.cellcode import _source
from mcp_notebook.protocol.calls import CallRecord


class Point(BaseModel):
    x: int


def test_values_with_a_faithful_literal_are_written_as_python():
    imports: set[str] = set()
    day = datetime.date(2024, 5, 1)
    assert _source(day, imports) == "datetime.date(2024, 5, 1)"
    assert _source([1, "a", (2.5,), {"k": None}], imports) == "[1, 'a', (2.5,), {'k': None}]"
    assert _source(decimal.Decimal("1.10"), imports) == "decimal.Decimal('1.10')"
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    assert _source(frame, imports) == (
        "pd.DataFrame.from_records([{'a': 1, 'b': 'x'}, {'a': 2, 'b': 'y'}])"
    )
    assert _source(PurePosixPath("/tmp/x"), imports) == "pathlib.PurePosixPath('/tmp/x')"
    assert {"datetime", "pd", "pathlib"} <= imports


def test_values_that_would_not_come_back_equal_get_no_literal():
    imports: set[str] = set()
    assert _source(Point(x=1), imports) is None  # converted in the cell instead
    assert _source(float("nan"), imports) is None  # nan is not a Python literal
    assert "pd" not in imports
    some = uuid.UUID("12345678-1234-5678-1234-567812345678")
    assert _source(some, imports) == "uuid.UUID('12345678-1234-5678-1234-567812345678')"


def test_a_break_stops_at_the_first_line_of_the_body_below_decorators_and_docstring():
    source = "@staticmethod\n@staticmethod\ndef f(n):\n    '''Doc.'''\n    m = n\n    return m\n"
    namespace: dict = {}
    exec(compile(source, "<cell>", "exec"), namespace)
    assert first_body_line(namespace["f"].__func__.__func__.__code__) == 5


def test_when_sees_defaults_and_globals_and_a_failing_expression_does_not_match():
    breaks = Breaks()
    breaks.namespace = lambda: {"limit": 10}

    class Tool:
        @staticmethod
        def fn(n: int, factor: int = 2) -> int:
            return n * factor

    record = CallRecord("tools/call", "scaled", {"n": 20}, "me")
    assert breaks._matches("n > limit and factor == 2", record, Tool)
    assert not breaks._matches("n < limit", record, Tool)
    assert not breaks._matches("missing > 1", record, Tool)  # NameError: a warning, no stop
    breaks.add("scaled", "n > 1")
    assert breaks.remove("scaled") == ["scaled"] and breaks.remove("scaled") == []


def test_a_when_in_quotes_is_the_expression_inside_them():
    breaks = Breaks()
    assert breaks.add("scaled", '"n > 10"') == "n > 10"  # as a shell wants it quoted
    assert breaks.add("scaled", "'n > 10'") == "n > 10"
    assert breaks.add("scaled", "\"'x' in name\"") == "'x' in name"
    assert breaks.add("scaled", "name == 'ada'") == "name == 'ada'"  # a string inside stays
    assert breaks.wanted == {"scaled": "name == 'ada'"}
    for empty in ('""', "' '"):
        with pytest.raises(SyntaxError):
            breaks.add("scaled", empty)
