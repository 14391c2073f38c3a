"""`serve --watch` fed files a hostile (or unlucky) editor saves: each is "cannot be read,
still serving" (clients warned), never an exception out of the reload."""

from __future__ import annotations

import json
import os
import threading

import pytest

from mcp_notebook import notebookfile
from mcp_notebook.notebookfile import UnreadableNotebook, code_cells
from mcp_notebook.notebookstart import NotebookError
from mcp_notebook.watching import Watcher
from tests.unit.kernel.test_reloading import StandInKernel, percent
from tests.waiting import wait_until

ODD_FILES = {
    "nested past the parser's recursion limit": "[" * 100_000 + "]" * 100_000,
    "an old format nbformat cannot validate": json.dumps({"nbformat": 3, "cells": []}),
    "a cell source that is not text": json.dumps(
        {"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a", 5]}]}
    ),
    "cells that are not a list": json.dumps({"nbformat": 4, "cells": {"a": 1}}),
}


@pytest.mark.parametrize("text", ODD_FILES.values(), ids=ODD_FILES.keys())
def test_an_odd_notebook_file_is_unreadable_not_an_exception(tmp_path, text):
    path = tmp_path / "n.ipynb"
    path.write_text(text)
    with pytest.raises(UnreadableNotebook, match="not a readable notebook"):
        code_cells(path)
    kernel = StandInKernel(path, ["a"])
    assert Watcher(kernel).reload() is False  # nothing ran; the last good cells stay served
    assert len(kernel.ran) == 1 and kernel.ran[0].startswith("app.log('warning'")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes at a path are POSIX's")
def test_a_named_pipe_in_place_of_the_notebook_is_refused_without_blocking(tmp_path):
    path = tmp_path / "n.ipynb"
    os.mkfifo(path)  # no writer: a plain open would wait for one forever
    with pytest.raises(UnreadableNotebook, match="not a regular file"):
        code_cells(path)
    kernel = StandInKernel(path, ["a"])
    assert Watcher(kernel).reload() is False  # nothing ran; the clients are warned
    assert len(kernel.ran) == 1 and "not a regular file" in kernel.ran[0]


def test_a_device_or_a_huge_file_is_refused_unread(tmp_path, monkeypatch):
    if os.path.exists(os.devnull) and os.name == "posix":
        with pytest.raises(UnreadableNotebook, match="not a regular file"):
            code_cells(type(tmp_path)(os.devnull))  # a character device (/dev/zero never ends)
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "cells": []}) + " " * 100)
    monkeypatch.setattr(notebookfile, "MAX_NOTEBOOK_BYTES", 64)
    with pytest.raises(UnreadableNotebook, match="larger than"):
        code_cells(path)


class Interruptible(StandInKernel):
    """A stand-in whose running cell ends with KeyboardInterrupt when interrupted."""

    def __init__(self, path, sources) -> None:
        super().__init__(path, sources)
        self.interrupts = 0
        self.interrupted_runs: list[str | None] = []  # the run each interrupt named
        self._interrupted = False

    def interrupt(self, run=None) -> None:
        self.interrupts += 1
        self.interrupted_runs.append(run)
        self._interrupted = True
        self.release.set()

    def run_cell(self, index, cell, *, stop_on_error=True, run=None) -> None:
        self.runs.append(run)
        self.running.set()
        self.release.wait(30)
        self.ran.append(cell.source)
        if self._interrupted:
            self._interrupted = False
            raise NotebookError(f"cell {cell.number} failed:\nKeyboardInterrupt")


def _reloading(watcher: Watcher) -> threading.Thread:
    thread = threading.Thread(target=watcher.reload, daemon=True)
    thread.start()
    return thread


def test_a_save_that_fixes_a_cell_that_never_ends_interrupts_it_and_runs_the_fix(tmp_path):
    path = tmp_path / "n.py"
    path.write_text(percent("a", "b", "c"))
    kernel = Interruptible(path, ["a", "b", "c"])
    watcher = Watcher(kernel)
    kernel.release.clear()  # the cells below run until released: "while True: pass"
    path.write_text(percent("a", "loop_forever()", "c"))
    reload = _reloading(watcher)
    wait_until(kernel.running.is_set, "the endless cell running")
    path.write_text(percent("a", "fixed()", "c"))  # the user fixes it and saves
    watcher._stale_run()  # what the watch thread does on that save
    reload.join(30)
    assert not reload.is_alive() and kernel.interrupts == 1
    assert kernel.ran[:2] == ["begin(1)", "loop_forever()"] and kernel.ran[2].startswith("abort(")
    # The interrupt names the endless cell's run: the kernel drops it for anything else.
    [endless] = kernel.runs
    assert endless is not None and kernel.interrupted_runs == [endless]
    kernel.ran.clear()
    assert watcher.reload() is True  # the fix runs, from the interrupted cell on
    assert kernel.ran == ["begin(1)", "fixed()", "c", "commit(); None"]
    assert len(set(kernel.runs)) == 3  # each cell's run its own token: none is stopped twice


def test_a_save_that_changes_only_later_cells_lets_the_running_cell_finish(tmp_path):
    path = tmp_path / "n.py"
    path.write_text(percent("a", "b", "c"))
    kernel = Interruptible(path, ["a", "b", "c"])
    watcher = Watcher(kernel)
    kernel.release.clear()
    path.write_text(percent("a", "train()", "c"))
    reload = _reloading(watcher)
    wait_until(kernel.running.is_set, "the long cell running")
    path.write_text(percent("a", "train()", "plot()"))  # an edit further down
    watcher._stale_run()
    assert kernel.interrupts == 0
    kernel.release.set()
    reload.join(30)
    assert kernel.ran == ["begin(1)", "train()", "c", "commit(); None"]
    kernel.ran.clear()
    assert watcher.reload() is True
    assert kernel.ran == ["begin(2)", "plot()", "commit(); None"]  # train() is not run twice
