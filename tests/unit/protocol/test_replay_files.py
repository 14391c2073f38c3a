"""Where `%mcp record save PATH` / `mcp.calls.to_pytest(PATH)` may write, by Windows' rules.

A name Windows cannot have at all (`a?.py`, a path too long) fails there with an OSError,
which `%mcp record save` reports. These are the names Windows accepts and writes somewhere
else without a word; they are refused on Windows (simulated: `sys.platform = "win32"`),
and left alone elsewhere, where they are ordinary names.
"""

from __future__ import annotations

import sys

import pytest

from mcp_notebook.protocol.calls import CallLog, CallRecord
from mcp_notebook.protocol.replays import windows_name_problem

SILENTLY_ELSEWHERE = [
    "nul.py",  # a device: the tests go nowhere
    r"tests\CON",
    "tests/aux.test.py",
    "COM1.py",
    r"C:\work\lpt9",
    "tests/calls:v2.py",  # an NTFS stream "v2.py" of a file "calls"
    "d:calls.py",  # drive D's current folder, not here (after the drive: fine below)
    "tests/calls.",  # written as "calls"
    "tests/calls.py ",
]
PLAIN = [
    "tests/test_agent_calls.py",
    r"C:\Users\me\tests\test_calls.py",
    r"\\server\share\console.py",
    "tests/nullable.py",
    "../test_com10.py",
    "./test.py",
]


@pytest.mark.parametrize("path", SILENTLY_ELSEWHERE)
def test_names_windows_writes_somewhere_else_are_refused_there(path):
    if path == "d:calls.py":
        assert windows_name_problem(path, windows=True) is None  # "d:" is the drive...
        path = "tests/d:calls.py"  # ... a ":" after it is not
    assert windows_name_problem(path, windows=True)


@pytest.mark.parametrize("path", PLAIN)
def test_plain_names_are_fine_on_windows(path):
    assert windows_name_problem(path, windows=True) is None


def log_with_a_call() -> CallLog:
    log = CallLog()
    record = log.add(CallRecord("tools/call", "add", {"a": 1}, "client"))
    record.finish("done", result={"content": [{"type": "text", "text": "2"}], "isError": False})
    return log


def test_to_pytest_refuses_a_device_name_on_windows(tmp_path, monkeypatch):
    log = log_with_a_call()
    monkeypatch.setattr(sys, "platform", "win32")
    with pytest.raises(ValueError, match="device name on Windows"):
        log.to_pytest(tmp_path / "nul.py")
    assert not (tmp_path / "nul.py").exists()


def test_elsewhere_such_names_are_ordinary_files(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert windows_name_problem("tests/nul.py") is None
    log_with_a_call().to_pytest(tmp_path / "nul.py")
    assert "CALLS" in (tmp_path / "nul.py").read_text(encoding="utf-8")
