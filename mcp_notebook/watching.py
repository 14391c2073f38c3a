"""``mcp-notebook serve NOTEBOOK --watch``: when the file changes on disk, re-run what
changed in the same kernel, and keep serving.

The rule: the code cells from the first one whose code changed to the end run again, in
order. A cell may use anything an earlier cell defined, so a change can affect every cell
after it, never one before it; and running only the changed cells would leave the later
ones with stale values. The cells before the first change do not run again: the kernel
still holds what they made. Markdown, outputs and empty cells do not count.

What the cells register is applied whole (``kernel/reloading.py``): clients hear only what
changed, and a cell that fails leaves the last good registrations served and reports its
traceback on stderr and to clients as a log notification (``notifications/message``,
level "error"). The server in the kernel keeps running: every session and stream stays.

Editors save in bursts, often by writing a new file and renaming it over the old one: we
watch the folder (``watchfiles``, the ``watch`` extra), keep only events on this file's
name, and wait until saves pause for ``QUIET_MS``. A save while a reload runs is not lost:
the reload is followed by another, from the file as it is then.

macOS and Windows: their file systems ignore case (and macOS Unicode normalization) in
names by default, so the name typed on the command line may differ from the one events
carry; and on Windows a file another program holds open (the editor mid-save, a virus
scanner, a sync client) cannot be read for a moment, and no event comes when it is let go.
"""

from __future__ import annotations

import itertools
import logging
import re
import sys
import threading
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .notebookfile import (
    CodeCell,
    UnreadableNotebook,
    code_cells,
    first_change,
    markdown_cells,
    read_notebook,
)
from .notebookkernel import NotebookKernel
from .notebookstart import NotebookError
from .threads import untraced

logger = logging.getLogger(__name__)

QUIET_MS = 300  # saves closer together than this are one change
MAX_WAIT_MS = 2000  # ... unless they keep coming for this long
ARMED_MS = 250  # the watch says it is armed (and looks at its stop event) this often
_KERNEL = '__import__("mcp_notebook.kernel.reloading").kernel.reloading.reloads'
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SKILL_CALL = re.compile(r"\bmcp\.skill\(")  # a cell that makes a skill (skills.py)
LOCKED_S = 5.0  # how long a file another program holds open is waited for
LOCKED_POLL = 0.1  # ... looking this often
T = TypeVar("T")


class Watcher:
    """Watches ``kernel.path`` and reloads ``kernel`` (two threads: the file system's, ours)."""

    def __init__(self, kernel: NotebookKernel) -> None:
        self.kernel = kernel
        self.path = kernel.path
        self.cells: list[CodeCell] = list(kernel.read())  # the last good run
        self._text: str | None = None  # the text last read (None: compare the cells)
        self._markdown = _markdown_or_none(self.path)  # its markdown (skills read it)
        self._failed_from: int | None = None  # the first cell of a failed run, until one works
        # The cells of the reload in progress, the index of the one running now and its
        # run token (the kernel's SIGINT stops that run only: kernel/runinterrupts.py).
        self._running: tuple[list[CodeCell], int, str] | None = None
        self._runs = itertools.count(1)
        self._run_lock = threading.Lock()
        self._changed = threading.Event()
        self.ready = threading.Event()  # the file system watch is armed (or broken)
        self.broken = False
        self._stopping = threading.Event()
        self._threads = [
            untraced(threading.Thread(target=self._watch, name="watch-notebook", daemon=True)),
            untraced(
                threading.Thread(target=self._reload_loop, name="reload-notebook", daemon=True)
            ),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._changed.set()  # wakes the reload loop
        for thread in self._threads:
            thread.join(timeout=2)  # a cell still running is cut short by the shutdown

    # -- the two threads ---------------------------------------------------------------
    def _watch(self) -> None:
        from watchfiles import watch

        try:
            for changes in watch(
                self.path.parent,
                watch_filter=self.ours,
                recursive=False,
                step=QUIET_MS,
                debounce=MAX_WAIT_MS,
                rust_timeout=ARMED_MS,  # also how often it looks at the stop event
                yield_on_timeout=True,
                stop_event=self._stopping,
                raise_interrupt=False,
            ):
                # Nothing slow here: events keep coming while we reload. The first pass,
                # once armed, catches a save made while the notebook was starting.
                if changes or not self.ready.is_set():
                    self._changed.set()
                    if changes:
                        self._stale_run()
                self.ready.set()
        except Exception:
            logger.exception("serve --watch: watching %s failed; no more reloads", self.path)
            self.broken = True
            self.ready.set()  # nothing to wait for

    def ours(self, _change: Any, path: str) -> bool:
        """Whether an event is about our file (the folder's other files do not count)."""
        return same_name(Path(path).name, self.path.name)

    def _reload_loop(self) -> None:
        while True:
            self._changed.wait()
            if self._stopping.is_set():
                return
            self._changed.clear()  # a save from now on brings another pass
            try:
                self.reload()
            except Exception:
                if self._stopping.is_set():
                    return  # the kernel is going away under us
                logger.exception("serve --watch: reloading %s failed", self.path)

    # -- one reload --------------------------------------------------------------------
    def reload(self) -> bool:
        """Run what changed since the last good run; whether the kernel ran anything."""
        try:
            text = self._patiently(lambda: _read_text(self.path))
        except OSError:
            text = None
        except UnreadableNotebook as exc:  # a named pipe, a device: nothing to run
            return self._unreadable(exc)
        if text is None or not text.strip():
            # Gone for a moment (a replace in progress) or empty (an in-place save between
            # truncating and writing): the rest of the save brings another event.
            return False
        if text == self._text and self._failed_from is None:
            return False  # only touched
        try:
            cells = self._patiently(lambda: code_cells(self.path))
        except (UnreadableNotebook, OSError) as exc:
            # Half a save, or a typo in the JSON: the next save brings another try.
            return self._unreadable(exc)
        self._text = text
        changed = [i for i in (first_change(self.cells, cells), self._failed_from) if i is not None]
        changed += self._skills_to_remake(cells)
        if not changed:
            return False
        # After a failed run the namespace holds what its first cells did: run them again
        # even if the file went back to the last good code.
        first = min(*changed, len(cells))
        numbers = [c.number for c in cells[first:]]
        which = f"cells {numbers[0]}-{numbers[-1]}" if numbers else "no cell (cells removed)"
        _say(f"{self.path.name} changed: running {which} again")
        self.kernel.run_own(f"{_KERNEL}.begin({first})")
        try:
            for index in range(first, len(cells)):
                run = f"{id(self):x}-{next(self._runs)}"  # what an interrupt names
                with self._run_lock:
                    self._running = (cells, index, run)
                try:
                    self.kernel.run_cell(index, cells[index], stop_on_error=False, run=run)
                finally:
                    with self._run_lock:  # no interrupt is decided after the cell
                        self._running = None
        except NotebookError as exc:
            self._failed(first, f"{exc}\nStill serving what was registered before this change.")
            return True
        # ";": the list it returns is read below, not printed as the cell's result
        # "; None": a code of ours kept out of the history has no trailing ";" IPython
        # sees (it reads the last stored cell), so commit's list was shown on stderr.
        commit = f"{_KERNEL}.commit(); None"
        reply = self.kernel.run_own(commit, {"announced": f"{_KERNEL}.announced"})
        self.cells = self.kernel.cells = cells
        self._failed_from = None
        told = reply["content"]["user_expressions"]["announced"]["data"]["text/plain"]
        _say(f"{self.path.name} reloaded; clients told: {told}")
        return True

    def _skills_to_remake(self, cells: list[CodeCell]) -> list[int]:
        """The markdown changed: a skill made from the markdown cells (``mcp.skill``)
        follows it, so its cell and those after it run again, as if its code had changed."""
        markdown = _markdown_or_none(self.path)
        if markdown is None:
            return []
        before, self._markdown = self._markdown, markdown
        if before is None or before == markdown:
            return []  # the first look, or outputs and metadata only
        return [i for i, cell in enumerate(cells) if _SKILL_CALL.search(cell.source)][:1]

    def _unreadable(self, problem: Exception) -> bool:
        _say(f"{self.path.name} changed but cannot be read; still serving: {problem}")
        self._tell_clients("warning", str(problem))
        return False

    def _stale_run(self) -> None:
        """A save while a reload runs a cell (the watch's thread): if it changed that cell
        or one before it, the cell's run is stale, and it would run again anyway; it is
        interrupted, as Kernel > Interrupt would, so that a cell that never ends (a loop
        the save fixes) cannot hold every later reload back. A change only to later cells
        lets it finish: a long cell is not run twice for nothing."""
        running = self._running
        if running is None:
            return
        cells, index, run = running
        try:
            changed = first_change(cells, code_cells(self.path))
        except (UnreadableNotebook, OSError):
            # Half a save, or (Windows) a file its editor still holds: its end brings
            # another event. Anything raised here would end the watch for good.
            return
        if changed is None or changed > index:
            return
        with self._run_lock:
            if self._running is running:
                number = cells[index].number
                _say(f"{self.path.name} changed while cell {number} ran: interrupting it")
                # The SIGINT arrives a moment later: if the cell has ended by then, the
                # kernel drops it (a tool call or the next cell is not touched).
                self.kernel.interrupt(run)

    def _failed(self, first: int, message: str) -> None:
        _say(message)
        self.kernel.run_own(f"{_KERNEL}.abort({_ANSI.sub('', message)!r})")
        failed = self._failed_from
        self._failed_from = first if failed is None else min(first, failed)

    def _tell_clients(self, level: str, message: str) -> None:
        code = f"{_KERNEL}.app.log({level!r}, {message!r}, 'mcp-notebook.watch')"
        self.kernel.run_own(code)

    def _patiently(self, read: Callable[[], T]) -> T:
        """``read()``, tried again while the file is locked (``PermissionError``: Windows'
        sharing violation), for up to :data:`LOCKED_S` or until the watch stops."""
        deadline = time.monotonic() + LOCKED_S
        while True:
            try:
                return read()
            except PermissionError:
                if time.monotonic() > deadline or self._stopping.wait(LOCKED_POLL):
                    raise


def watch(kernel: NotebookKernel) -> Callable[[], None]:
    """Start watching ``kernel``'s notebook (serve's ``on_ready``); returns what stops it."""
    watcher = Watcher(kernel)
    watcher.start()
    # Serving starts once a save cannot be missed any more.
    if watcher.ready.wait(timeout=10) and not watcher.broken:
        _say(f"Watching {kernel.path} for changes")
    else:
        _say(f"Not watching {kernel.path} yet: the file system watch is slow to start")
    return watcher.stop


def _markdown_or_none(path: Path) -> list[str] | None:
    try:
        return markdown_cells(path)
    except (UnreadableNotebook, OSError):
        return None


def same_name(found: str, wanted: str, platform: str | None = None) -> bool:
    """Whether file name ``found`` (from an event) names the file ``wanted`` (as given):
    exactly on Linux; on macOS and Windows, whose file systems by default ignore case
    (and on macOS the Unicode normalization: a name typed as NFC, stored as NFD), folded.
    On a case-sensitive volume there a sibling whose name differs only in case may then
    wake the watch: the reload reads our file, finds it unchanged, and runs nothing."""
    if (platform or sys.platform) not in ("darwin", "win32"):
        return found == wanted
    return _folded(found) == _folded(wanted)


def _folded(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _read_text(path: Path) -> str | None:
    """The file's text; None if it is gone (an editor's replace in progress). Never
    blocks: a named pipe or a device in its place is ``UnreadableNotebook``."""
    try:
        return read_notebook(path).decode("utf-8-sig", errors="replace")
    except FileNotFoundError:
        return None


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
