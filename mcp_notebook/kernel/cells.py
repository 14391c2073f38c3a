"""Which cell holds the kernel's main thread: IPython's events keep a ``CellWatch``.

The server's thread reads it to tell a client that its call waits behind a running cell
(:mod:`mcp_notebook.protocol.queueing`). The hooks run on the kernel thread, around every
execution: ``pre_execute`` / ``post_execute`` fire for silent cells too; ``pre_run_cell``
(not for silent ones) says whether the cell gets a number. Cells that an ipykernel
subshell runs on another thread do not hold the main thread, so they are not counted.
"""

from __future__ import annotations

import threading
from typing import Any

from ..protocol.queueing import CellWatch

watch = CellWatch()
_shell: list[Any] = []  # the shell the hooks are registered with (once per kernel)
_next = [0]  # the execution count the next numbered cell gets


def install(shell: Any) -> CellWatch:
    """Register the hooks with ``shell`` once; the watch the kernel's executor reads."""
    if not _shell:
        _shell.append(shell)
        _next[0] = shell.execution_count
        shell.events.register("pre_execute", _pre_execute)
        shell.events.register("pre_run_cell", _pre_run_cell)
        shell.events.register("post_execute", _post_execute)
    return watch


def _on_main() -> bool:
    return threading.current_thread() is threading.main_thread()


def _pre_execute() -> None:
    if _on_main():
        watch.started()


def _pre_run_cell(info: Any) -> None:
    # IPython 9 counts the cell before this event, IPython 8 after the cell: the count
    # read between cells is the next cell's in both.
    if _on_main():
        watch.numbered(_next[0] if getattr(info, "store_history", False) else None)


def _post_execute() -> None:
    if _on_main():
        watch.ended()
        _next[0] = _shell[0].execution_count
