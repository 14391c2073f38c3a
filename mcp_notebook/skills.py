"""``mcp.skill(...)``: the notebook's own words served as an Agent Skill.

A mixin of :class:`~mcp_notebook.app.NotebookMCP`. A skill's text comes from ``text=``,
from a folder on disk (``path=``), or from the notebook's markdown cells (``from_cells=``,
the default when neither is given): all of them, those under a heading, or those with a
cell tag. Cells are read from the *saved* notebook file, so the skill follows what was
saved when the ``mcp.skill`` cell ran; run it again after editing to update it. A
generated ``references/tools.md`` gives the tools the text names, with their input
schemas and the arguments of a recent successful call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .registry.skills import (
    Skill,
    SkillError,
    check_skill_path,
    folder_key,
    folder_resources,
    read_folder,
    read_name,
    render_skill_md,
)

if TYPE_CHECKING:
    from .protocol.calls import CallLog
    from .registry import Registry

TOOLS_FILE = "references/tools.md"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


class SkillRegistrations:
    """``mcp.skill``."""

    if TYPE_CHECKING:
        registry: Registry
        calls: CallLog
        notebook_path: str | None
        skill_folders_read: dict[str, str]
        skill_folder_copies: dict[str, Path]

    def skill(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        text: str | None = None,
        from_cells: bool | str | Mapping[str, str] | None = None,
        path: str | Path | None = None,
        files: Mapping[str, str | bytes] | None = None,
        tools: Iterable[str] | bool = True,
        frontmatter: Mapping[str, Any] | None = None,
        notebook: str | Path | None = None,
    ) -> Skill:
        """Serve a skill; returns it (``.uri``, ``.entry`` with the manifest).

        ``name`` may carry a prefix (``"team/sales-analysis"``). ``text=`` is the markdown
        body of SKILL.md; ``path=`` a folder holding a SKILL.md (every file in it is
        served, nested skills too); otherwise ``from_cells=`` picks the notebook's
        markdown cells: ``True`` (all), ``{"heading": "How to use"}`` (the cells under
        that heading, up to the next heading of its level) or ``{"tag": "skill"}``.
        With ``path=``, ``name`` is optional: the frontmatter's name, or it with a prefix.
        ``files={"references/x.md": "..."}`` adds supporting files; ``tools=`` names the
        tools to describe in references/tools.md (default: those the text names,
        ``False``: none); ``frontmatter=`` adds fields (license, metadata, ...).
        """
        if path is not None:
            if text is not None or from_cells is not None or files:
                raise SkillError("mcp.skill(path=...) serves a folder as it is: no text/files")
            written = folder_key(path)
            # In an export, the package's copy of the folder (export/package.py); a path
            # the export did not see (made differently at run time) is read as given.
            folder = self.skill_folder_copies.get(written, Path(path))
            found = read_folder(folder, prefix=_prefix(name, folder))
            self.skill_folders_read[written] = str(folder.resolve())
            self.registry.add_skill(found[0].path, list(folder_resources(found)))
            return found[0]
        if text is None:
            title, text = _from_notebook(
                notebook or getattr(self, "notebook_path", None), from_cells
            )
            name = name or _slug(title)
        if not name:
            raise SkillError("mcp.skill() needs a name (or a notebook heading to take it from)")
        check_skill_path(name)
        body = text.strip()
        if description is None:
            description = _first_paragraph(body)
        if not description:
            raise SkillError(f"Skill {name!r} needs description= (what it is for, when to use it)")
        extra = dict(files or {})
        chosen = self._referenced_tools(body, tools)
        if chosen and TOOLS_FILE not in extra:
            extra[TOOLS_FILE] = self._tools_reference(chosen)
            body += f"\n\nThe tools named here, with their arguments: [{TOOLS_FILE}]({TOOLS_FILE})"
        skill_md = render_skill_md(name.rsplit("/", 1)[-1], description, body, frontmatter or {})
        encoded = {k: v.encode("utf-8") if isinstance(v, str) else v for k, v in extra.items()}
        made = Skill(name, skill_md, encoded)
        self.registry.add_skill(made.path, list(made.resources()))
        return made

    def _referenced_tools(self, body: str, tools: Iterable[str] | bool) -> list[str]:
        registered = self.registry.tools
        if tools is False:
            return []
        if tools is True:
            return [
                n for n in registered if re.search(rf"(?<![\w.-]){re.escape(n)}(?![\w-])", body)
            ]
        chosen = list(tools)
        unknown = [n for n in chosen if n not in registered]
        if unknown:
            raise SkillError(f"tools={unknown}: no such tool is registered (yet)")
        return chosen

    def _tools_reference(self, names: list[str]) -> str:
        """references/tools.md: each tool's description, input schema and an example call."""
        examples: dict[str, Any] = {}
        for record in self.calls:
            if record.method == "tools/call" and record.status == "done":
                examples[record.target] = record.arguments  # the latest wins
        parts = ["# Tools", ""]
        for tool_name in names:
            tool = self.registry.tools[tool_name]
            parts += [f"## `{tool_name}`", "", tool.description or "", ""]
            schema = json.dumps(tool.input_schema, indent=2, sort_keys=True)
            parts += ["Arguments (JSON Schema):", "", "```json", schema, "```", ""]
            if tool_name in examples:
                call = {"name": tool_name, "arguments": examples[tool_name]}
                shown = json.dumps(call, indent=2, sort_keys=True, default=str)
                parts += [
                    "A call that worked (`tools/call` params):",
                    "",
                    "```json",
                    shown,
                    "```",
                    "",
                ]
        return "\n".join(parts)


def _from_notebook(
    notebook: str | Path | None, selection: bool | str | Mapping[str, str] | None
) -> tuple[str, str]:
    """(the first heading, the chosen markdown cells' text) of the saved notebook."""
    if notebook is None:
        raise SkillError(
            "This kernel does not know its notebook file: pass text=..., path=..., or "
            "notebook='file.ipynb' to take the skill from its markdown cells"
        )
    notebook = _existing(Path(notebook))
    cells = _markdown_cells(notebook)
    texts = [source for source, _ in cells]
    title = next((m.group(2) for t in texts for m in map(_HEADING.match, t.splitlines()) if m), "")
    if selection is None or selection is True:
        chosen = texts
    elif isinstance(selection, Mapping) and set(selection) == {"tag"}:
        chosen = [source for source, tags in cells if selection["tag"] in tags]
    elif isinstance(selection, Mapping) and set(selection) == {"heading"}:
        chosen = _under_heading(texts, selection["heading"])
    else:
        raise SkillError("from_cells= takes True, {'heading': 'text'} or {'tag': 'name'}")
    if not chosen:
        raise SkillError(f"No markdown cells in {notebook} match from_cells={selection!r}")
    return title, "\n\n".join(t.strip() for t in chosen)


def _markdown_cells(notebook: Path) -> list[tuple[str, list[str]]]:
    """(source, tags) of each markdown cell of a format-4 .ipynb, read as plain JSON: no
    nbformat, which an exported server does not carry."""
    try:
        document = json.loads(notebook.read_text(encoding="utf-8-sig"))
        if not isinstance(document, dict) or document.get("nbformat", 0) < 4:
            raise ValueError("not a version 4 notebook (open and save it in Jupyter)")
        found = []
        for cell in document.get("cells", []):
            if isinstance(cell, dict) and cell.get("cell_type") == "markdown":
                source = cell.get("source", "")
                text = "".join(source) if isinstance(source, list) else str(source)
                tags = (cell.get("metadata") or {}).get("tags") or []
                found.append((text, [str(t) for t in tags]))
        return found
    except (OSError, ValueError, TypeError, AttributeError) as error:
        raise SkillError(f"Cannot read the notebook {notebook}: {error}") from None


def _existing(notebook: Path) -> Path:
    """``notebook``, or its name in the kernel's folder: older Jupyter Servers give the
    path from the server's root, and the kernel runs in the notebook's folder."""
    if notebook.is_absolute() or notebook.exists() or not Path(notebook.name).exists():
        return notebook
    return Path(notebook.name)


def _under_heading(texts: list[str], heading: str) -> list[str]:
    """The markdown lines under ``heading`` (its own line included), up to the next heading
    of the same or a higher level, across cells."""
    lines = [line for text in texts for line in [*text.splitlines(), ""]]
    kept: list[str] = []
    level = 0
    for line in lines:
        match = _HEADING.match(line)
        if match and level and len(match.group(1)) <= level:
            break
        if match and not level and match.group(2).strip().lower() == heading.strip().lower():
            level = len(match.group(1))
        if level:
            kept.append(line)
    return ["\n".join(kept)] if kept else []


def _prefix(name: str | None, folder: Path) -> str | None:
    """The prefix ``mcp.skill(name, path=...)`` puts before the folder's skill name: the
    name may repeat the frontmatter's (``"refunds"``) or add a prefix (``"team/refunds"``);
    which of the two is checked when the folder's SKILL.md has been read."""
    if name is None:
        return None
    check_skill_path(name)
    prefix, _, last = name.rpartition("/")
    wanted = read_name(folder)
    if last != wanted:
        raise SkillError(
            f"mcp.skill({name!r}, path=...): the folder's SKILL.md names the skill "
            f"{wanted!r}; the name's last segment must be that"
        )
    return prefix or None


def _slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:64].strip("-")


def _first_paragraph(body: str) -> str:
    """The first paragraph that is not a heading, on one line, as a description."""
    for block in re.split(r"\n\s*\n", body):
        lines = [line for line in block.splitlines() if not _HEADING.match(line)]
        text = " ".join(line.strip() for line in lines).strip()
        if text:
            return text[:1024]
    return ""
