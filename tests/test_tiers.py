"""The fast tier stays fast: the static checks (mypy, import-linter, ruff) are a tier of their
own, which plain `python -m pytest` (CI) runs once and `-m unit` leaves out."""

from __future__ import annotations

import re
from pathlib import Path

from .conftest import TIER_OF_PATH

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# A quoted checker's name: how a test names the program it runs.
CHECKER = re.compile(r"""["'](mypy|lint-imports|ruff)["']""")


def tier_by_path(path: str) -> str:
    return next((tier for prefix, tier in TIER_OF_PATH.items() if path.startswith(prefix)), "")


def test_tests_static_is_the_static_tier():
    assert tier_by_path("tests/static/test_types_and_imports.py") == "static"
    assert sorted(p.name for p in (TESTS / "static").glob("test_*.py")) == [
        "test_lint.py",
        "test_types_and_imports.py",
    ]


def test_no_test_outside_the_static_tier_runs_a_static_checker():
    running = {
        rel: sorted(set(CHECKER.findall(path.read_text(encoding="utf-8"))))
        for path in sorted(TESTS.rglob("test_*.py"))
        if tier_by_path(rel := path.relative_to(ROOT).as_posix()) != "static"
        and CHECKER.search(path.read_text(encoding="utf-8"))
    }
    assert not running, f"move these to tests/static/: {running}"
