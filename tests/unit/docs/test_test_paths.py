"""Every test the project's documents name as evidence exists where they say.

docs/security.md, docs/platforms.md and benchmarks/README.md cite the test that shows each
claim; when tests move, a citation that points nowhere is a claim without its evidence.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CITED = re.compile(r"(?<![\w/.-])tests/[\w/]+\.py")
# Paths in a user's own project, written by `%mcp record save` or an export.
USERS_PATHS = {"tests/test_agent_calls.py", "tests/test_PACKAGE.py"}


def documents() -> list[Path]:
    found = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md"]
    return found + sorted((ROOT / "docs").rglob("*.md"))


def test_every_test_a_document_cites_exists() -> None:
    missing = {
        f"{document.relative_to(ROOT)}: {path}"
        for document in documents()
        for path in CITED.findall(document.read_text(encoding="utf-8"))
        if path not in USERS_PATHS and not (ROOT / path).is_file()
    }
    assert not missing, sorted(missing)
