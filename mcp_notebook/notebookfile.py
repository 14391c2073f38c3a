"""Reading a notebook's code cells: an ``.ipynb``, or a Jupytext percent-format ``.py``.

``serve`` and ``serve --watch`` read notebooks only through :func:`code_cells`. A ``.py``
file is read with ``jupytext`` (the ``jupytext`` extra), imported only for such a file.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import McpNotebookError

PERCENT_SUFFIXES = (".py",)
# Past this, the file is refused unread: a notebook this big is no save in progress.
MAX_NOTEBOOK_BYTES = 256 * 1024 * 1024
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class UnreadableNotebook(McpNotebookError, ValueError):
    """The file is not a notebook we can read (yet: an editor may be half-way through a save)."""


@dataclass(frozen=True)
class CodeCell:
    number: int  # its place among all the notebook's cells, from 1 (what messages name)
    source: str


def code_cells(path: Path) -> list[CodeCell]:
    """The code cells that have code, in order. ``FileNotFoundError`` if it is gone."""
    return [
        CodeCell(index + 1, source)
        for index, (kind, source) in enumerate(_cells(path))
        if kind == "code" and source.strip()
    ]


def markdown_cells(path: Path) -> list[str]:
    """The markdown cells' sources, in order (what a skill made from cells reads)."""
    return [source for kind, source in _cells(path) if kind == "markdown"]


def _cells(path: Path) -> list[tuple[str, str]]:
    """(cell type, source) of every cell of the notebook at ``path``."""
    data = read_notebook(path)
    try:
        # utf-8-sig: Windows tools (Notepad before 2019, PowerShell 5, Visual Studio) start
        # UTF-8 files with a byte order mark, which JSON and Python code refuse.
        text = data.decode("utf-8-sig")  # cut inside a character: half a save
        if path.suffix.lower() in PERCENT_SUFFIXES:
            cells = [(c.cell_type, c.source) for c in _read_percent(text).cells]
        else:
            cells = _read_ipynb(text)
    # Bad JSON or UTF-8, a cell's fields, JSON nested past the parser's recursion limit.
    except (ValueError, KeyError, TypeError, RecursionError) as exc:
        raise UnreadableNotebook(f"{path.name} is not a readable notebook: {exc}") from exc
    return cells


def read_notebook(path: Path) -> bytes:
    """The file's bytes, read without ever blocking: opened non-blocking, and refused
    (:class:`UnreadableNotebook`) unless it is a regular file of at most
    :data:`MAX_NOTEBOOK_BYTES` (a named pipe put in its place would block a plain read
    until some writer came, and a device such as /dev/zero never ends).
    ``FileNotFoundError`` if it is gone, other ``OSError`` as ``open`` raises them."""
    descriptor = os.open(path, _READ_FLAGS)
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise UnreadableNotebook(f"{path.name} is not a regular file; it is left unread")
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(MAX_NOTEBOOK_BYTES + 1)
    finally:
        os.close(descriptor)
    if len(data) > MAX_NOTEBOOK_BYTES:
        limit = MAX_NOTEBOOK_BYTES // (1024 * 1024)
        raise UnreadableNotebook(f"{path.name} is larger than {limit} MiB; it is left unread")
    return data


def _read_ipynb(text: str) -> list[tuple[str, str]]:
    """(cell type, source) of each cell. Format 4 is read as plain JSON: nbformat's import
    costs about a second (it validates with jsonschema), on the start path of ``serve``.
    Older formats go through nbformat, which converts them."""
    document = json.loads(text)
    if not isinstance(document, dict) or not isinstance(document.get("cells", []), list):
        raise ValueError("no list of cells")
    if not isinstance(document.get("nbformat"), int) or document["nbformat"] < 4:
        import nbformat

        try:
            read = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]  # nbformat has no annotations
        except nbformat.ValidationError as exc:  # not a ValueError: jsonschema's own
            raise ValueError(exc.message) from exc
        return [(c.cell_type, c.source) for c in read.cells]
    cells = []
    for cell in document.get("cells", []):
        if not isinstance(cell, dict):
            raise ValueError("a cell that is not an object")
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        cells.append((str(cell.get("cell_type", "")), source))
    return cells


def _read_percent(text: str) -> Any:
    try:
        import jupytext
    except ImportError:
        raise UnreadableNotebook(
            "a .py notebook (Jupytext percent format, `# %%` cells) needs jupytext: "
            'pip install "mcp-notebook[jupytext]"'
        ) from None
    return jupytext.reads(text, fmt="py:percent")


def first_change(old: list[CodeCell], new: list[CodeCell]) -> int | None:
    """The index (in ``new``) of the first code cell whose code differs from ``old``'s:
    the cells from there on are the ones to run again. ``len(new)`` when cells were only
    removed from the end; None when the code is the same (a markdown edit, a moved cell
    number, outputs)."""
    for index, (before, after) in enumerate(zip(old, new, strict=False)):
        if before.source != after.source:
            return index
    if len(old) == len(new):
        return None
    return min(len(old), len(new))
