"""A failed call's traceback starts at the user's own frame, cells named as IPython does."""

from __future__ import annotations

import linecache

import pytest

from mcp_notebook.protocol.calls import CallLog, CallRecord
from mcp_notebook.protocol.tracebacks import user_traceback
from mcp_notebook.registry.components import Tool

CELL_FILE = "/tmp/ipykernel_4242/3141592653.py"
CELL_SOURCE = "def divide(a: int) -> int:\n    x = a\n    return x // 0\n"


def _cell_function(source: str = CELL_SOURCE, filename: str = CELL_FILE, name: str = "divide"):
    namespace: dict = {}
    # As IPython does for a cell: its source is in linecache under the cell's file name.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


def _name(filename: str) -> str | None:
    return "Cell In[5]" if filename == CELL_FILE else None


def _failure(fn, **arguments) -> BaseException:
    tool = Tool(fn, fn.__name__)
    with pytest.raises(Exception) as raised:
        tool.invoke(arguments, {})
    return raised.value


def test_the_package_frames_are_left_out_and_the_cell_is_named():
    text = user_traceback(_failure(_cell_function(), a=3), _name)
    frames = [line for line in text.splitlines() if line.startswith(("  File", "  Cell"))]
    # This test's own frame (it caught the error), then the cell: Tool.invoke is gone.
    assert frames == [frames[0], "  Cell In[5], line 3, in divide"]
    assert frames[0].endswith(", in _failure") and "test_tracebacks.py" in frames[0]
    assert "\n    return x // 0\n" in text
    assert text.rstrip().endswith("ZeroDivisionError: integer division or modulo by zero")
    assert "mcp_notebook" not in text


def test_without_a_namer_the_file_stays_but_the_package_frames_still_go():
    text = user_traceback(_failure(_cell_function(), a=3))
    assert f'File "{CELL_FILE}", line 3, in divide' in text
    assert "components.py" not in text


def test_chained_exceptions_are_trimmed_and_named_too():
    source = (
        "def load(name: str) -> str:\n"
        "    try:\n"
        "        return {}[name]\n"
        "    except KeyError as missing:\n"
        "        raise ValueError(f'no {name}') from missing\n"
    )
    text = user_traceback(_failure(_cell_function(source, name="load"), name="x"), _name)
    assert text.count("Cell In[5], line") == 2
    assert "The above exception was the direct cause" in text
    assert "mcp_notebook" not in text


def test_a_failure_of_the_package_itself_keeps_its_frames():
    # The arguments do not fit the signature: raised inside the package, no user frame.
    with pytest.raises(Exception) as raised:
        Tool(_cell_function(), "divide").invoke({"a": "not a number"}, {})
    text = user_traceback(raised.value, _name)
    assert "mcp_notebook" in text and "Cell In[5]" not in text


def test_a_namer_that_fails_does_not_lose_the_traceback():
    def broken(filename: str) -> str:
        raise AttributeError("no compile on this shell")

    text = user_traceback(_failure(_cell_function(), a=3), broken)
    assert CELL_FILE in text and "ZeroDivisionError" in text


def test_the_call_history_keeps_the_trimmed_text(monkeypatch):
    monkeypatch.setattr(CallRecord, "code_name", staticmethod(_name))
    log = CallLog()
    record = log.add(CallRecord("tools/call", "divide", {"a": 3}, "test-client"))
    record.set_status("running")
    record.finish("error", error=_failure(_cell_function(), a=3))
    assert record.traceback is not None
    assert "Cell In[5], line 3, in divide" in record.traceback
    assert "mcp_notebook" not in record.traceback
    assert record.error is not None and record.error.__traceback__ is not None  # %mcp debug
