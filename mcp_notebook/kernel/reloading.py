"""The kernel's half of ``serve --watch``: re-run cells into a copy of the registry, then
apply it whole, or drop it if a cell fails.

``mcp-notebook serve --watch`` (``watching.py``) drives it with short code lines:

- ``mark(i)`` before code cell ``i`` runs: remember what was registered then. Re-running
  from cell ``k`` starts from what cells ``0..k-1`` had registered, so a component that a
  removed or changed cell registered is gone unless the new cells register it again, and
  one that an unchanged earlier cell registered stays. ``mark(i, run, request)`` (a
  reload's cell) also arms the interrupt aimed at that cell only (``runinterrupts.py``).
- ``begin(k)``: from now on cells register into a copy holding that state; clients keep
  the last good registrations, untouched. ``%mcp start``/``%mcp stop`` in a re-run cell
  leave the running server alone: its sessions and streams must survive the reload.
- ``commit()`` after the last cell: the copy becomes the registry in one step and clients
  hear only what changed (``Registry.adopt``). A registration from another thread during
  the reload (a background thread's timer, say) goes to the live registry at once and is
  made again over the copy when it is adopted; one racing the hand-over lands on one side
  of it, never lost in between (``Registry.staged``). ``abort(message)`` after a failed cell:
  the copy is dropped and clients get ``message`` as an error log notification.

The namespace cannot be rolled back: the cells that ran before the failing one have
re-bound their variables and functions.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any

from ..app import NotebookMCP, ServerInfo, mcp
from ..registry import Kind, Registry, RegistryState
from .runinterrupts import interrupts

logger = logging.getLogger(__name__)
LOGGER_NAME = "mcp-notebook.watch"
# Distinct URIs a reload remembers as updated (a template's URIs need not be few); past
# it, the rest are not announced at commit (a warning is logged).
MAX_UPDATES = 10_000


@dataclass(frozen=True)
class Snapshot:
    registry: RegistryState
    watched: dict[str, str]  # variable -> URI (mcp.watched), as it was


class Reloads:
    def __init__(self, app: NotebookMCP) -> None:
        self.app = app
        self.before: list[Snapshot] = []  # before each code cell of the last good run
        self._staged: list[Snapshot] | None = None  # the same, for the run in progress
        self._live: tuple[Registry, dict[str, str]] | None = None
        # resources/updated heard from the re-run cells, each URI once, announced at commit.
        self._updates: dict[str, None] = {}
        self.announced: list[str] = []  # what the last commit told clients

    def _snapshot(self) -> Snapshot:
        return Snapshot(self.app.registry.state(), dict(self.app.watched))

    def mark(self, index: int, run: str | None = None, request: str | None = None) -> None:
        if run is not None and request is not None:
            interrupts.arm(run, request, _shell())
        else:  # the first run's marks: hooked before any reload can be interrupted
            interrupts.hook(_shell())
        marks = self._staged if self._staged is not None else self.before
        del marks[index:]
        marks.append(self._snapshot())

    def begin(self, first: int) -> None:
        if self._live is not None:
            self.abort(None)  # a run the watcher gave up on (it should not happen)
        base = self.before[first] if first < len(self.before) else self._snapshot()
        staging = self.app.registry.staged(base.registry)
        staging.subscribe(self._heard)
        self._updates = {}
        self._staged = self.before[:first]
        self._live = (self.app.registry, self.app.watched)
        self.app.registry, self.app.watched = staging, dict(base.watched)
        # The instance's attributes shadow the methods until commit or abort.
        vars(self.app).update(start=self._keep_serving, stop=self._keep_serving)

    def commit(self) -> list[str]:
        if self._live is None or self._staged is None:
            raise RuntimeError("no reload in progress")
        staging, (live, _) = self.app.registry, self._live
        self._end(live, self.app.watched)
        self.before = self._staged
        self._staged = None
        updates, self._updates = list(self._updates), {}
        self.announced = staging.adopt(updates)
        return self.announced

    def abort(self, message: str | None) -> None:
        if self._live is not None:
            staging = self.app.registry
            self._end(*self._live)
            staging.drop()
        self._staged = None
        self._updates = {}
        if message:
            self.app.log("error", message, LOGGER_NAME)

    def _end(self, registry: Registry, watched: dict[str, str]) -> None:
        self.app.registry, self.app.watched = registry, watched
        self._live = None
        for name in ("start", "stop"):
            vars(self.app).pop(name, None)

    def _heard(self, kind: Kind, detail: str | None) -> None:
        if kind != "updated" or detail is None or detail in self._updates:
            return
        if len(self._updates) < MAX_UPDATES:
            self._updates[detail] = None
            if len(self._updates) == MAX_UPDATES:
                logger.warning(
                    "serve --watch: %d resources updated; no more announced", MAX_UPDATES
                )

    def _keep_serving(self, *args: Any, **kwargs: Any) -> ServerInfo | None:
        logger.info("serve --watch: a re-run cell's %%mcp start/stop leaves the server running")
        url = self.app.url
        if url is None:
            return None
        return ServerInfo(url, self.app.token, self.app.name)


def _shell() -> Any:
    ipython = sys.modules.get("IPython.core.getipython")
    return None if ipython is None else ipython.get_ipython()


reloads = Reloads(mcp)
