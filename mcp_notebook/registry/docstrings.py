"""Split a Google-style docstring into a summary and per-parameter descriptions."""

from __future__ import annotations

import inspect
import re

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$"
)
_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Return ``(description, {param: description})``; the description ends at a section."""
    text = inspect.cleandoc(doc or "")
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    indent = 0
    for line in text.splitlines():
        header = _SECTION.match(line.strip()) if not line.startswith(" ") else None
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            summary.append(line)
            continue
        if section not in ("Args", "Arguments", "Parameters", "Params") or not line.strip():
            continue
        line_indent = len(line) - len(line.lstrip())
        match = _PARAM.match(line.strip())
        if match and (current is None or line_indent <= indent):
            current, indent = match.group(1).lstrip("*"), line_indent
            params[current] = match.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(summary).strip(), params
