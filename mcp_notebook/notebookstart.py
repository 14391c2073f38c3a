"""What the parts of ``mcp-notebook serve`` share: its options, its errors, where the
start is shown, and the notebook's code cells as serve reads them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .errors import McpNotebookError
from .notebookfile import CodeCell, UnreadableNotebook, code_cells


class NotebookError(McpNotebookError, RuntimeError):
    """A cell failed while the notebook was starting (or the kernel did not start).

    ``summary``: one line for a client (the message holds the whole traceback)."""

    def __init__(self, message: str, summary: str | None = None) -> None:
        super().__init__(message)
        self.summary = summary or message.splitlines()[0]


class Stopped(McpNotebookError, RuntimeError):
    """The start was stopped on request (Ctrl-C, SIGTERM, stdin closed): not a failure."""


@dataclass
class ServeOptions:
    host: str = "127.0.0.1"
    port: int | None = None
    token: str | None = None
    auth: bool = True
    name: str | None = None
    startup_timeout: float = 600.0
    allow_remote_no_auth: bool = False  # --no-auth on a non-loopback host, on purpose
    watch: bool = False  # re-run what changes on disk (watching.py)
    dispatcher: bool = False  # every client gets the dispatcher's tools
    debug_port: int | None = None  # the kernel's debugger (DAP) on 127.0.0.1:PORT
    confirm: str = "deny"  # tools that ask first: deny, elicit or allow (confirmation.py)
    # --auth-* (auth/config.py FLAGS): the kernel's server checks OAuth tokens instead.
    oauth: dict[str, str] | None = None


class View(Protocol):
    """Where the start is shown (startview.StartView on stderr)."""

    def step(self, done: int, total: int, text: str) -> None: ...
    def output(self, text: str) -> None: ...
    def tick(self) -> None: ...
    def finish(self, text: str) -> None: ...


def read_code_cells(path: Path) -> list[CodeCell]:
    """The notebook's code cells that have code, in order (``.ipynb`` or percent ``.py``)."""
    try:
        return code_cells(path)
    except UnreadableNotebook as exc:
        raise NotebookError(str(exc)) from None
    except OSError as exc:
        raise NotebookError(f"{path.name} is not a notebook: {exc}") from None


def sets_instructions(cells: list[CodeCell]) -> bool:
    """Whether the notebook may set ``mcp.instructions``, which its handshake carries:
    then nothing can answer the handshake before the notebook has run."""
    return any("instructions" in cell.source for cell in cells)
