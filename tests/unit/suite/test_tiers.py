"""A test's tier is the folder it lives in, and the fast tier stays fast: the static checks
(mypy, import-linter, ruff) are a tier of their own, which plain `python -m pytest` (CI)
runs once and `-m unit` leaves out; unit tests mirror the package."""

from __future__ import annotations

import ast
import re

from tests.conftest import TESTS, TIERS, tier_of_path

ROOT = TESTS.parent
# A quoted checker's name: how a test names the program it runs.
CHECKER = re.compile(r"""["'](mypy|lint-imports|ruff)["']""")
TEST_MODULES = sorted(TESTS.rglob("test_*.py"))


def test_tests_static_is_the_static_tier():
    assert tier_of_path(TESTS / "static" / "test_types_and_imports.py") == "static"
    assert sorted(p.name for p in (TESTS / "static").glob("test_*.py")) == [
        "test_lint.py",
        "test_types_and_imports.py",
    ]
    # And every other test module lives in the folder of its tier too.
    outside = [p.relative_to(ROOT).as_posix() for p in TEST_MODULES if tier_of_path(p) is None]
    assert not outside, f"move these into one of tests/{{{','.join(TIERS)}}}/: {outside}"
    assert tier_of_path(TESTS / "waiting.py") is None  # a helper, in no tier
    # The unit tier mirrors the package: tests of its top-level modules sit at tests/unit/
    # itself; docs/ checks the documentation's code blocks, suite/ the tests' own helpers.
    rooms = {p.name for p in (ROOT / "mcp_notebook").iterdir() if (p / "__init__.py").exists()}
    folders = {p.parent.name for p in (TESTS / "unit").glob("*/test_*.py")}
    assert folders - rooms <= {"docs", "suite"}, folders - rooms


def test_no_test_outside_the_static_tier_runs_a_static_checker():
    running = {
        path.relative_to(ROOT).as_posix(): sorted(set(CHECKER.findall(text)))
        for path in TEST_MODULES
        if tier_of_path(path) != "static"
        and CHECKER.search(text := path.read_text(encoding="utf-8"))
    }
    assert not running, f"move these to tests/static/: {running}"


def test_unit_tests_import_nothing_from_the_other_tiers():
    """What unit and slower tests share is a helper at tests/, so that ``-m unit`` imports
    no kernel, e2e or static module (and none of what they import)."""
    other = tuple(f"tests.{tier}." for tier in TIERS if tier != "unit")
    importing = {
        path.relative_to(ROOT).as_posix(): sorted(found)
        for path in sorted((TESTS / "unit").rglob("*.py"))
        if (found := {m for m in _imported(path) if m.startswith(other)})
    }
    assert not importing, f"move what these share to a helper under tests/: {importing}"


def _imported(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    return {name + "." for name in names}
