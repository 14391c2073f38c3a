"""A notebook's code cells -> the code of a module that registers the same things.

Pure (no files, no IPython): it reads cell sources, and says what it left out and why.

The rule, cell by cell, in order:

- a cell that starts with a cell magic (``%%bash``, ``%%time``...) is left out;
- line magics and shell lines (``%mcp start``, ``%load_ext``, ``!pip install``) are
  removed; those with an effect the export cannot have (``%time f()``, ``!cmd``) are
  reported; so is ``from mcp_notebook import mcp`` (the export has its own ``mcp``);
- a cell that does not parse as Python after that, or that needs IPython (calls
  ``get_ipython()`` or imports IPython, ipykernel or ipywidgets), is left out;
- statements that only show something are removed: an expression without a call
  (``orders``, ``df.shape``, ``x == 1``), or a call of ``display``, ``print``, ``pprint``,
  ``plt.show``, ``mcp.monitor``, ``mcp.status``; so are ``mcp.start(...)`` / ``mcp.stop()``
  (the export serves itself). Other expressions (``orders.head()``) stay: they run, and
  their value is dropped;
- a cell left with nothing is left out ("display-only").

What runs differently is reported too: a tool that reads a variable a later cell assigns
(the export sees the value after every cell ran), ``mcp.resource(var=...)`` (read from the
module's variable, changed only by the code itself), a tool with ``confirm=True`` (nobody
is at a notebook: the client is asked).
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field

# Magics removed without a word: they only set the notebook up.
QUIET_MAGICS = frozenset(
    {"mcp", "load_ext", "reload_ext", "matplotlib", "config", "autoreload", "aimport", "pip"}
)
FRONT_ENDS = frozenset({"IPython", "ipykernel", "ipywidgets"})
DISPLAY_CALLS = frozenset(
    {"display", "print", "pprint", "pprint.pprint", "plt.show", "mcp.monitor", "mcp.status"}
)
SERVING_CALLS = frozenset({"mcp.start", "mcp.stop"})
_MAGIC = re.compile(r"^\s*(%{1,2}|!)\s*([A-Za-z_][\w.]*)?")


@dataclass(frozen=True)
class Problem:
    """Something of the notebook the export leaves out or runs differently."""

    cell: int  # the cell's number among all the notebook's cells, from 1 (0: none)
    what: str
    outcome: str  # "left out" or "runs differently"

    def __str__(self) -> str:
        where = f"cell {self.cell}: " if self.cell else ""
        return f"{where}{self.what} ({self.outcome})"


@dataclass
class Extracted:
    code: str  # the module's body: the kept cells, in order, each under "# %% cell N"
    exported: list[int] = field(default_factory=list)
    display_only: list[int] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)  # top-level names of imported modules


def extract(cells: Iterable[tuple[int, str]]) -> Extracted:
    """``cells``: (number, source) of each code cell, in order."""
    result = Extracted("")
    kept: list[tuple[int, ast.Module, str]] = []
    for number, source in cells:
        cell = _cell(number, source, result)
        if cell is None:
            continue
        module, text = cell
        if not module.body:
            result.display_only.append(number)
            continue
        kept.append((number, module, text))
    _report_live_reads([(number, module) for number, module, _ in kept], result)
    parts = []
    for number, module, text in kept:
        result.exported.append(number)
        result.imports |= _imports(module)
        parts.append(f"# %% cell {number}\n{text}\n")
    result.code = "\n\n".join(parts)
    return result


def _cell(number: int, source: str, result: Extracted) -> tuple[ast.Module, str] | None:
    """The cell's statements worth exporting and their text (comments kept), or None when
    it is left out (reported)."""
    first = source.lstrip().split("\n", 1)[0]
    if first.startswith("%%"):
        magic = _MAGIC.match(first)
        name = magic.group(2) if magic else ""
        result.problems.append(Problem(number, f"cell magic %%{name}", "left out"))
        return None
    lines = []
    for line in source.split("\n"):
        magic = _MAGIC.match(line)
        if magic is None or line.lstrip().startswith("%%"):
            lines.append(line)
            continue
        kind, name = magic.group(1), magic.group(2) or ""
        if kind == "%" and name in QUIET_MAGICS:
            lines.append("")  # keep line numbers: error messages name the cell's lines
            continue
        shown = line.strip() if len(line.strip()) <= 60 else line.strip()[:57] + "..."
        result.problems.append(Problem(number, f"{shown!r} removed", "runs differently"))
        lines.append("")
    try:
        module = ast.parse("\n".join(lines))
    except SyntaxError as exc:
        result.problems.append(
            Problem(
                number, f"not Python without IPython (line {exc.lineno}: {exc.msg})", "left out"
            )
        )
        return None
    needs = _needs_front_end(module)
    if needs is not None:
        result.problems.append(Problem(number, f"needs IPython ({needs})", "left out"))
        return None
    kept = []
    for statement in module.body:
        if _shows_only(statement) or _imports_the_notebooks_mcp(statement):
            end = statement.end_lineno or statement.lineno
            lines[statement.lineno - 1 : end] = [""] * (end - statement.lineno + 1)
        else:
            kept.append(statement)
            _report_registration(number, statement, result)
    module.body = kept
    return module, _tidy(lines)


def _tidy(lines: list[str]) -> str:
    """The lines without trailing spaces, more than two blank lines in a row, blank ends."""
    out: list[str] = []
    for line in lines:
        line = line.rstrip()
        if line or (out and any(out[-2:])):
            out.append(line)
    return "\n".join(out).strip("\n")


def _needs_front_end(module: ast.Module) -> str | None:
    for node in ast.walk(module):
        if isinstance(node, ast.Name) and node.id == "get_ipython":
            return "get_ipython()"
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in FRONT_ENDS:
                    return f"import {alias.name}"
        module_name = node.module if isinstance(node, ast.ImportFrom) and not node.level else None
        if module_name and module_name.split(".")[0] in FRONT_ENDS:
            return f"from {module_name} import ..."
    return None


def _imports_the_notebooks_mcp(statement: ast.stmt) -> bool:
    """``from mcp_notebook import mcp``: the notebook's own server, set up as %load_ext
    does; the export defines its own ``mcp`` (the kernel's is not in the runtime)."""
    return (
        isinstance(statement, ast.ImportFrom)
        and statement.module == "mcp_notebook"
        and not statement.level
        and all(a.name == "mcp" and a.asname in (None, "mcp") for a in statement.names)
    )


def _shows_only(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.Expr):
        return False
    value = statement.value
    if isinstance(value, ast.Call):
        name = dotted(value.func)
        return name in DISPLAY_CALLS or name in SERVING_CALLS
    if isinstance(value, (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
        return False
    return not any(isinstance(node, (ast.Call, ast.NamedExpr)) for node in ast.walk(value))


def dotted(node: ast.AST) -> str:
    """``a.b.c`` for an attribute chain on a name; "" for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else ""
    return ""


def _report_registration(number: int, statement: ast.stmt, result: Extracted) -> None:
    """mcp.resource(var=...) and confirm=True run differently without the notebook."""
    for node in ast.walk(statement):
        if not isinstance(node, ast.Call) or not dotted(node.func).startswith("mcp."):
            continue
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        var = keywords.get("var")
        if dotted(node.func) == "mcp.resource" and isinstance(var, ast.Constant):
            result.problems.append(
                Problem(
                    number,
                    f"mcp.resource(var={var.value!r}) serves the module's variable: no cell "
                    "re-runs, so only the code itself changes it",
                    "runs differently",
                )
            )
        if dotted(node.func) == "mcp.app" or "app" in keywords:
            result.problems.append(
                Problem(
                    number,
                    "an app view (app=, mcp.app) is drawn by mcp-notebook's apps/ (with "
                    "IPython's display formatter): the runtime an export installs has "
                    "neither, and the export's check refuses it",
                    "runs differently",
                )
            )
        confirm = keywords.get("confirm")
        if isinstance(confirm, ast.Constant) and confirm.value is True:
            result.problems.append(
                Problem(
                    number,
                    "a tool with confirm=True: nobody is at a notebook, so it is denied unless "
                    "the package runs with --confirm elicit (the client's user is asked) or "
                    "--confirm allow (MCP_NOTEBOOK_CONFIRM for the ASGI app)",
                    "runs differently",
                )
            )


def _report_live_reads(kept: list[tuple[int, ast.Module]], result: Extracted) -> None:
    """A registered function reading a variable that a later cell assigns again."""
    assigned_in = [(number, _assigned(module)) for number, module in kept]
    for index, (number, module) in enumerate(kept):
        for function in _registered_functions(module):
            free = _free_names(function)
            for later, names in assigned_in[index + 1 :]:
                for name in sorted(free & names):
                    result.problems.append(
                        Problem(
                            number,
                            f"{function.name}() reads {name!r}, which cell {later} assigns "
                            "again: the export sees its value after every cell ran",
                            "runs differently",
                        )
                    )


def _registered_functions(module: ast.Module) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    found = []
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in statement.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if dotted(target).startswith("mcp."):
                    found.append(statement)
                    break
    return found


def _assigned(module: ast.Module) -> set[str]:
    """Names a cell binds at its top level (not inside functions)."""
    names: set[str] = set()
    for statement in module.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(statement.name)
            continue
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _free_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Module-level names a function reads (neither its own nor builtins)."""
    local = {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    declared_global: set[str] = set()
    loads: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Global):
            declared_global |= set(node.names)
        elif isinstance(node, ast.Name):
            (loads if isinstance(node.ctx, ast.Load) else local).add(node.id)
    return (loads - (local - declared_global)) - set(dir(builtins)) - {"mcp"}


def _imports(module: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "__future__"}
