"""The fenced code blocks of README.md and docs/**/*.md, and what the docs tests do with each.

Every block is one of:

- ``python`` / ``ipython``: notebook cells; run in order, per page, in a fresh kernel;
- ``bash`` / ``console`` / ``sh`` / ``shell`` whose every command is safe to run here
  (``SAFE_COMMANDS``): run, after the page's earlier cells, in the same folder and runtime
  folder as its kernel (so ``mcp-notebook config`` finds the server a cell started);
- ``json``: parsed;
- anything else, or a block that cannot run here (it needs Claude Code, your own notebook,
  a cluster...): marked by the line right above it, which the reader sees, in the form
  ``*Not run: the reason.*`` (``MARK``).

A block that is none of these fails tests/unit/docs/test_blocks.py. ``{directive}`` fences (MyST
directives such as ``{toctree}``) are not code blocks.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

NOTEBOOK = {"python", "ipython", "py"}
SHELL = {"bash", "console", "sh", "shell"}
MARK = re.compile(r"^\*Not run: (?P<reason>\S.*\S)\*$")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
# A shell line is run only if it is one of these (after `$ ` prompts are dropped): they
# read, print or list, and change nothing outside the test's own folders.
SAFE_COMMANDS = (
    re.compile(r"^mcp-notebook (--version|--help|-h)$"),
    re.compile(r"^mcp-notebook (serve|bridge|list|config|export) (--help|-h)$"),
    re.compile(r"^mcp-notebook list$"),
    re.compile(r"^mcp-notebook config (claude-desktop|claude-code|cursor|vscode)( \S+)?$"),
    re.compile(r"^jupyter (labextension list|server extension list)$"),
)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    mark: str | None  # the reason it is not run, if marked

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def commands(self) -> list[str]:
        """The shell block's commands, one per line (prompts and comments dropped)."""
        found = []
        for raw in self.code.splitlines():
            line = raw.strip()
            if line.startswith("$ "):
                line = line[2:]
            if line and not line.startswith("#"):
                found.append(line)
        return found

    @property
    def runs(self) -> str | None:
        """How the tests check this block: "kernel", "shell", "json", or None (not run)."""
        if self.mark is not None:
            return None
        if self.language in NOTEBOOK:
            return "kernel"
        if self.language == "json":
            return "json"
        commands = self.commands()
        if self.language in SHELL and commands and all(safe(c) for c in commands):
            return "shell"
        return None


def safe(command: str) -> bool:
    return any(rule.match(command) for rule in SAFE_COMMANDS)


def pages() -> list[Path]:
    """README.md and every Markdown page of the site."""
    found = [ROOT / "README.md"]
    found += sorted(p for p in DOCS.rglob("*.md") if "_build" not in p.parts)
    return found


def blocks(page: Path) -> list[Block]:
    """The code blocks of ``page``, in order."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, info = opening["fence"], opening["info"].strip()
        end = index + 1
        while end < len(lines) and not (
            lines[end].strip().startswith(fence) and set(lines[end].strip()) == {fence[0]}
        ):
            end += 1
        body = "\n".join(lines[index + 1 : end])
        if not info.startswith("{"):
            language = info.split()[0].lower() if info else ""
            found.append(Block(page, index + 1, language, body, mark_above(lines, index)))
        index = end + 1
    return found


def mark_above(lines: list[str], index: int) -> str | None:
    """The reason given by the ``*Not run: ...*`` line just above line ``index``, if any."""
    above = index - 1
    while above >= 0 and not lines[above].strip():
        above -= 1
    if above < 0:
        return None
    mark = MARK.match(lines[above].strip())
    return mark["reason"] if mark else None


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


def shell_words(command: str) -> list[str]:
    return shlex.split(command)
