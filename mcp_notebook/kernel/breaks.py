"""``%mcp break TOOL [--when EXPRESSION]``: the next matching call stops in the debugger.

The kernel's debugger is ipykernel's debugpy (JupyterLab's Debugger panel, VS Code). A
break on a tool puts a one-off line breakpoint, through debugpy's own pydevd, on the
first line of the tool's body just before a matching call runs it, on the kernel's main
thread, and takes it away when the call ends; the break is then used up. The breakpoint
suspends that thread only: the server's thread is never traced (mcp_notebook/threads.py).
``--when`` is a Python expression over the call's arguments (as the client sent them,
with the defaults of those it left out) and the notebook's globals; an expression that
raises does not match (a warning says why). It is decided here, in Python, before any
breakpoint exists, with or without a debugger attached; quotes around the whole of it
(``--when "a > 5"``, as a shell wants them) are taken off: a string is always true, and
it would stop every call.

While it is in the debugger the call's record is ``paused`` (the monitor shows "paused in
the debugger", a client that gave a progress token hears "paused at a breakpoint in
TOOL", a task says so in its status). Without a debugger listening the call runs as usual
(a warning in its output says why) and keeps the break for the next call; ``%mcp break``
says so when it is set. Listening: a front end attached through the kernel's control
channel (JupyterLab's Debugger panel; ipykernel's debugger knows, and after its
``disconnect`` debugpy still reports a client), or a client attached to debugpy directly
(VS Code on ``serve --debug-port``).
"""

from __future__ import annotations

import ast
import dis
import importlib
import inspect
import itertools
import linecache
import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

from ..protocol.calls import CallRecord

logger = logging.getLogger(__name__)
ANY = "*"  # %mcp break * and the monitor's "Pause next call": whichever tool is called next
# Far from the small ids a front end gives its own breakpoints.
_ids = itertools.count(2_000_000_000)


class Breaks:
    """Which tools' next call stops in the debugger, and the breakpoints armed for calls."""

    def __init__(self) -> None:
        self.wanted: dict[str, str | None] = {}  # tool name -> --when expression, or None
        self._lock = threading.Lock()
        self.tools: Callable[[], dict[str, Any]] = dict  # name -> Tool (the app's registry)
        self.namespace: Callable[[], dict[str, Any]] = dict  # the notebook's globals

    def add(self, tool: str, when: str | None = None) -> str | None:
        """Break on ``tool``'s next call where ``when`` holds; the condition as kept."""
        if when is not None:
            when = condition(when)  # a SyntaxError is the caller's to report
        with self._lock:
            self.wanted[tool] = when
        return when

    def remove(self, tool: str | None = None) -> list[str]:
        """Drop the break on ``tool`` (all breaks when None); the names dropped."""
        with self._lock:
            names = list(self.wanted) if tool is None else [tool] * (tool in self.wanted)
            for name in names:
                del self.wanted[name]
        return names

    def arm(self, record: CallRecord) -> Callable[[], None] | None:
        """On the kernel's main thread, as ``record``'s call starts: a breakpoint on its
        tool's first line if a break matches and a debugger is attached; the callable
        that takes it away (None when nothing was armed)."""
        key = self.key(record)
        if key is None:
            return None
        when = self.wanted.get(key)
        tool = self.tools().get(record.target)
        if when is not None and not self._matches(when, record, tool):
            return None
        debugger = _attached_debugger()
        if tool is None or debugger is None:
            if debugger is None:
                logger.warning(
                    "%%mcp break %s: no debugger is listening to the kernel (open "
                    "JupyterLab's Debugger panel, or attach VS Code); the call runs on, "
                    "and the break stays for the next one",
                    record.target,
                )
            return None
        py_db, api = debugger
        code = _code_of(tool.fn)
        if code is None:
            return None
        with self._lock:
            if key not in self.wanted or self.wanted.pop(key) != when:
                return None  # another call took it meanwhile
        filename, line, breakpoint_id = code.co_filename, first_body_line(code), next(_ids)
        _dump_cell(filename)
        # Stops once (a hit condition): the calls an async tool takes while the armed one
        # awaits, and a recursive call, pass the same line and run on.
        added = api.add_breakpoint(
            py_db, filename, "python-line", breakpoint_id, line, None, "None", None,
            "NONE", "@HIT@ == 1", False,
        )  # fmt: skip
        if getattr(added, "error_code", 0):
            logger.warning("%%mcp break: the debugger refused a breakpoint in %s", filename)
            return None
        record.paused = True
        record._changed()

        def release() -> None:
            if record.paused:
                record.paused = False
                try:  # the debugger may have gone (disconnected) while the call was paused
                    api.remove_breakpoint(py_db, filename, "python-line", breakpoint_id)
                except Exception:
                    logger.debug("%%mcp break: the breakpoint was gone", exc_info=True)
                record._changed()

        return release

    def key(self, record: CallRecord) -> str | None:
        """The break ``record``'s call may stop at: its tool's, else the one on any tool."""
        if record.method != "tools/call":
            return None
        wanted = self.wanted
        return record.target if record.target in wanted else ANY if ANY in wanted else None

    # The monitor's "Pause next call" (ui/monitor.py).
    @property
    def next_call(self) -> bool:
        return ANY in self.wanted

    @next_call.setter
    def next_call(self, on: bool) -> None:
        if on:
            self.add(ANY)
        else:
            self.remove(ANY)

    @property
    def listening(self) -> bool:
        """Whether a debugger would see the pause now (the monitor says when not)."""
        return debugger_listening()

    def _matches(self, when: str, record: CallRecord, tool: Any) -> bool:
        names = {**_defaults(getattr(tool, "fn", None)), **record.arguments}
        try:
            return bool(eval(when, self.namespace(), names))
        except Exception as exc:  # the person's expression: say why, do not stop
            logger.warning("%%mcp break --when %r failed: %s", when, exc)
            return False


def condition(text: str) -> str:
    """A ``--when`` expression as it is evaluated: quotes around all of it taken off."""
    expression = text.strip()
    tree = ast.parse(expression, "<--when>", "eval")
    while isinstance(tree.body, ast.Constant) and isinstance(tree.body.value, str):
        expression = tree.body.value.strip()  # "a > 5": the expression a > 5
        tree = ast.parse(expression, "<--when>", "eval")
    compile(tree, "<--when>", "eval")
    return expression


def debugger_listening() -> bool:
    """Whether a debugger client would see a stop now (see the module's docstring)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    front_ends = getattr(getattr(shell, "kernel", None), "debugger", None)
    if getattr(front_ends, "debugpy_initialized", False):
        # debugpy started by ipykernel: its client is the kernel's, attached for a front end
        return bool(getattr(front_ends, "is_started", False))
    debugpy = sys.modules.get("debugpy")
    return debugpy is not None and bool(debugpy.is_client_connected())


def _attached_debugger() -> tuple[Any, Any] | None:
    """debugpy's pydevd and its API, if a debugger client is listening to this process."""
    if not debugger_listening():
        return None
    pydevd = sys.modules.get("pydevd")
    py_db = pydevd.get_global_debugger() if pydevd is not None else None
    if py_db is None:
        return None
    api = importlib.import_module("_pydevd_bundle.pydevd_api")  # on sys.path by debugpy
    return py_db, api.PyDevdAPI()


def _dump_cell(filename: str) -> None:
    """Write a cell's code to its file, as the debugger's ``dumpCell`` does: ipykernel
    names each cell's code after a file that exists only once a front end dumped it, and
    the debugger sets breakpoints (and shows sources) in files that exist."""
    path = Path(filename)
    if filename.startswith("<") or not path.is_absolute() or path.exists():
        return
    lines = linecache.getlines(filename)  # IPython keeps every cell's code there
    if lines:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(lines), encoding="utf-8")


def _defaults(fn: Any) -> dict[str, Any]:
    """The parameters a call may leave out, with the values the function then gets."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not p.empty}


def _code_of(fn: Any) -> CodeType | None:
    fn = getattr(fn, "__func__", fn)
    while hasattr(fn, "__wrapped__"):  # functools.wraps: the function the person wrote
        fn = fn.__wrapped__
    code = getattr(fn, "__code__", None)
    return code if isinstance(code, CodeType) else None


def first_body_line(code: CodeType) -> int:
    """The first line of a function's body (``co_firstlineno`` is its first decorator's)."""
    lines = [line for _, line in dis.findlinestarts(code) if line is not None]
    body = [line for line in lines if line > code.co_firstlineno]
    return min(body) if body else code.co_firstlineno


BREAKS = Breaks()
