"""The package's shape, as its maintainers rely on it: small modules."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mcp_notebook"
MAX_LINES = 450


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_package_has_modules_to_check():
    names = {path.relative_to(PACKAGE).as_posix() for path in modules()}
    assert {"headless.py", "registration.py", "kernel/magics.py"} <= names


def test_no_module_is_over_450_lines():
    too_long = {
        path.relative_to(PACKAGE).as_posix(): lines
        for path in modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert not too_long, f"split these modules (at most {MAX_LINES} lines each): {too_long}"
