"""`serve --watch` and the notebook reader on macOS and Windows, simulated on Linux.

Files Windows tools save (a UTF-8 byte order mark, CRLF line endings), names that macOS and
Windows file systems match whatever their case or Unicode normalization, and a file
another program holds open for a moment (Windows' sharing violation).
"""

from __future__ import annotations

import json
import os
import sys
import unicodedata
from pathlib import Path

import pytest

from mcp_notebook.notebookfile import code_cells
from mcp_notebook.watching import Watcher, same_name
from tests.unit.kernel.test_reloading import StandInKernel, percent

BOM = "\ufeff"


def test_an_ipynb_saved_with_a_byte_order_mark_is_read(tmp_path):
    # Notepad before Windows 10 1903, PowerShell 5's Set-Content -Encoding UTF8 and Visual
    # Studio start UTF-8 files with a BOM; json.loads refuses it.
    path = tmp_path / "n.ipynb"
    document = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": []}
    document["cells"] = [{"cell_type": "code", "source": ["x = 1\n", "y = 2"], "metadata": {}}]
    path.write_text(BOM + json.dumps(document), encoding="utf-8")
    assert [c.source for c in code_cells(path)] == ["x = 1\ny = 2"]


def test_a_percent_py_saved_by_a_windows_editor_is_read_as_its_cells(tmp_path):
    pytest.importorskip("jupytext")
    path = tmp_path / "n.py"
    text = "# %%\nx = 1\n\n# %%\n@mcp.tool\ndef f() -> int:\n    return x\n"
    path.write_bytes((BOM + text).replace("\n", "\r\n").encode("utf-8"))  # BOM and CRLF
    # Not "\ufeff# %%\nx = 1" as the first cell, which the kernel refuses (U+FEFF).
    assert [c.source for c in code_cells(path)] == [
        "x = 1",
        "@mcp.tool\ndef f() -> int:\n    return x",
    ]


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_events_name_the_file_whatever_its_case_or_normalization(tmp_path, monkeypatch, platform):
    # `serve Café.ipynb` typed (NFC) for a file macOS reports as "café.ipynb" in NFD.
    kernel = StandInKernel(tmp_path / "Café.py", ["a"])
    watcher = Watcher(kernel)
    reported = tmp_path / unicodedata.normalize("NFD", "café.py")
    monkeypatch.setattr(sys, "platform", platform)
    assert watcher.ours(None, str(reported))
    assert not watcher.ours(None, str(tmp_path / "Café.py.tmp"))  # the editor's temporary


def test_on_linux_names_are_compared_exactly():
    assert same_name("n.py", "n.py", "linux")
    assert not same_name("N.py", "n.py", "linux")  # two notebooks may be named so there
    assert same_name("N.py", "n.py", "darwin") and same_name("N.PY", "n.py", "win32")


def hold_open(monkeypatch, path: Path, locked: dict[str, int]) -> None:
    """Windows' sharing violation: opening ``path`` fails while another program holds it
    (for ``locked["reads"]`` more opens)."""
    open_file = os.open

    def held(file, *args, **kwargs):
        if os.fspath(file) == str(path) and locked["reads"]:
            locked["reads"] -= 1
            raise PermissionError(
                13,
                "The process cannot access the file because it is being used by another process",
                str(file),
            )
        return open_file(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", held)


def test_a_save_locked_for_a_moment_is_run_once_it_is_let_go(tmp_path, monkeypatch):
    path = tmp_path / "n.py"
    path.write_text(percent("a", "b"))
    kernel = StandInKernel(path, ["a", "b"])
    watcher = Watcher(kernel)
    path.write_text(percent("a", "B"))
    locked = {"reads": 3}  # the editor (or a virus scanner) still holds it for 3 reads
    hold_open(monkeypatch, path, locked)
    # No event comes when the other program lets go: this reload must run the save.
    assert watcher.reload() is True
    assert kernel.ran == ["begin(1)", "B", "commit(); None"] and locked["reads"] == 0


def test_a_save_still_held_open_does_not_end_the_watch(tmp_path, monkeypatch):
    # The watch's thread looks at a save at once, while its editor may still hold it
    # (Windows: a sharing violation); the reload running a cell must go on, and so must
    # the watch (an exception there ended it: "no more reloads").
    path = tmp_path / "n.py"
    path.write_text(percent("a", "b"))
    watcher = Watcher(StandInKernel(path, ["a", "b"]))
    watcher._running = (watcher.cells, 1, "run-1")
    hold_open(monkeypatch, path, {"reads": sys.maxsize})
    watcher._stale_run()  # no exception: the watch goes on
