"""Every thread the package starts stays out of a kernel's debugger (mcp_notebook/threads.py)."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import mcp_notebook
from mcp_notebook.threads import start_thread, start_timer

PACKAGE = Path(mcp_notebook.__file__).parent


def test_started_threads_carry_debugpys_opt_out():
    done = threading.Event()
    thread = start_thread(done.wait, name="test-untraced")
    timer = start_timer(0, done.set)
    for started in (thread, timer):
        assert started.daemon
        assert started.pydev_do_not_trace is True  # type: ignore[attr-defined]
        assert started.is_pydev_daemon_thread is True  # type: ignore[attr-defined]
    thread.join(30)
    assert not thread.is_alive()


def _bare_threads(tree: ast.AST) -> list[int]:
    """Lines that build a ``threading.Thread`` or ``Timer`` outside ``untraced(...)``."""
    wrapped: set[int] = set()
    found: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "untraced":
            wrapped.update(id(arg) for arg in node.args)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("Thread", "Timer")
            and getattr(node.func.value, "id", None) == "threading"
            and id(node) not in wrapped
        ):
            found.append(node.lineno)
    return found


def test_no_module_starts_a_thread_the_debugger_would_stop():
    bare = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "threads.py"
        and (lines := _bare_threads(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert bare == {}, "start threads with mcp_notebook.threads (start_thread, untraced)"


def test_the_check_sees_a_bare_thread():
    assert _bare_threads(ast.parse("threading.Thread(target=f)")) == [1]
    assert _bare_threads(ast.parse("untraced(threading.Thread(target=f))")) == []
