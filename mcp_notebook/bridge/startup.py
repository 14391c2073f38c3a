"""A notebook that is still starting, as the bridge behind ``serve --transport stdio`` sees it.

``serve`` reads the client's stdin from its first moment, while the kernel starts and the
notebook runs on another thread: :class:`Startup` is what that thread tells the bridge
(the step it is at, then the endpoint, or why the notebook failed), and
:class:`LateTarget` is a bridge target whose address becomes known only then.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..protocol.lifecycle import Identity
from .upstream import Target, Unreachable

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    """Where the start is: ``done`` of ``total`` steps (the kernel, each code cell, the
    server), and what runs now."""

    done: int
    total: int
    text: str


class Startup:
    """The start of one notebook, reported by the thread that runs it.

    ``identity``: what the notebook's server will say in its handshake, for the answers
    given before it is up; None when that cannot be known yet (the bridge then holds the
    handshake too). Watchers are called on the reporting thread, outside any lock here.
    """

    def __init__(self, name: str, identity: Identity | None) -> None:
        self.name, self.identity = name, identity
        self.step = Step(0, 1, "starting the kernel")
        self.address: tuple[str, str | None] | None = None  # (url, token) once it serves
        self.failure: str | None = None
        self._changed = threading.Condition()
        self._watchers: list[Callable[[], None]] = []

    @property
    def settled(self) -> bool:
        return self.address is not None or self.failure is not None

    def watch(self, callback: Callable[[], None]) -> None:
        with self._changed:
            self._watchers.append(callback)

    def advance(self, step: Step) -> None:
        with self._changed:
            if self.settled:
                return
            self.step = step
        self._tell()

    def ready(self, url: str, token: str | None) -> bool:
        """The notebook ran and serves at ``url``; False if the start was given up already."""
        with self._changed:
            if self.settled:
                return False
            self.address = (url, token)
            self._changed.notify_all()
        self._tell()
        return True

    def fail(self, reason: str) -> bool:
        """The notebook will not serve (a cell failed, the kernel died, the client left)."""
        with self._changed:
            if self.settled:
                return False
            self.failure = reason
            self._changed.notify_all()
        logger.debug("start given up: %s", reason)
        self._tell()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the notebook serves or has failed; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: self.settled, timeout)

    def _tell(self) -> None:
        with self._changed:
            watchers = list(self._watchers)
        for watcher in watchers:
            try:
                watcher()
            except Exception:  # a watcher's bug must not stop the start
                logger.exception("a start-up watcher failed")


class LateTarget(Target):
    """A target known once the notebook has run: resolving it waits until then."""

    def __init__(self, startup: Startup) -> None:
        super().__init__(name=startup.name)
        self.startup = startup

    def describe(self) -> str:
        return f"notebook {self.startup.name!r}"

    def resolve(self) -> tuple[str, str | None]:
        self.startup.wait()
        if self.startup.address is None:
            raise Unreachable(self.startup.failure or "the notebook did not start")
        return self.startup.address
