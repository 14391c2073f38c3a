"""The package's shape, as its maintainers rely on it: small modules, and the protocol
versions it speaks written down once (protocol/versions.py), so adding or dropping one
cannot leave a stale copy behind in a check, a message or generated code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "mcp_notebook"
MAX_LINES = 450
VERSIONS_MODULE = "protocol/versions.py"
# An MCP revision's name is its date. Prose in docstrings and comments may name one; a
# string the code uses (a check, a message, a template) must take it from versions.py.
# Not checked: the vendored view SDK (apps/static/view.min.js) speaks its own versions.
VERSION = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def test_the_package_has_modules_to_check():
    names = {relative(path) for path in modules()}
    assert {"headless.py", "registration.py", "kernel/magics.py", VERSIONS_MODULE} <= names


def test_no_module_is_over_450_lines():
    too_long = {
        relative(path): lines
        for path in modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not too_long, f"split these modules (at most {MAX_LINES} lines each): {too_long}"


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the module's, classes' and functions' docstring constants."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def version_literals(source: str) -> list[tuple[int, str]]:
    """(line, version) of each protocol version in a string the code uses (f-string parts
    included), docstrings left out."""
    tree = ast.parse(source)
    skip = docstrings(tree)
    return [
        (node.lineno, match.group())
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
        for match in VERSION.finditer(node.value)
    ]


def test_the_check_finds_a_version_in_code_but_not_in_prose():
    source = '''"""Served since 2025-06-18."""
# 2026-07-28 removed the handshake.
OLD = "2025-03-26"
def f(v):
    """Only for 2025-11-25."""
    return f"{v} or 2026-07-28"
'''
    assert sorted(version_literals(source)) == [(3, "2025-03-26"), (6, "2026-07-28")]


def test_protocol_versions_are_written_only_in_protocol_versions():
    elsewhere = {
        relative(path): found
        for path in modules()
        if relative(path) != VERSIONS_MODULE
        and (found := version_literals(path.read_text(encoding="utf-8")))
    }
    assert not elsewhere, f"use the constants of {VERSIONS_MODULE}: {elsewhere}"


def test_protocol_versions_defines_the_versions_the_package_speaks():
    found = {version for _, version in version_literals((PACKAGE / VERSIONS_MODULE).read_text())}
    assert {"2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"} <= found
