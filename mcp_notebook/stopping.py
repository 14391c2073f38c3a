"""Every way the platform asks ``mcp-notebook serve`` (or ``bridge``) to stop, routed to one
clean stop.

POSIX sends SIGINT (Ctrl-C) or SIGTERM. Windows never delivers SIGTERM; it has Ctrl-C
(SIGINT), Ctrl+Break (SIGBREAK), and the console control event of a closed console window,
which maps to no signal. For it, Windows ends the process as soon as the handler returns
(after about 5 s at most), so that handler cleans up itself before returning instead of
counting on the main thread to get there first. (Log-off and shutdown events reach only
services; an interactive ``serve`` is simply ended then, and its kernel with it: discovery
prunes the file of a process that is gone.)
"""

from __future__ import annotations

import _thread
import logging
import signal
import sys
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

# Console handlers stay registered until the process ends: ctypes must never free one
# (a closed console during interpreter shutdown would call freed memory).
_console_handlers: list[Any] = []

SIGBREAK = 21  # signal.SIGBREAK, which exists only on Windows
# Console control events (wincon.h) that end the process once their handler returns.
CTRL_CLOSE_EVENT = 2
CTRL_LOGOFF_EVENT = 5
CTRL_SHUTDOWN_EVENT = 6
CLOSING_EVENTS = frozenset({CTRL_CLOSE_EVENT, CTRL_LOGOFF_EVENT, CTRL_SHUTDOWN_EVENT})


class Stopper:
    """Turns the first stop request into ``KeyboardInterrupt`` in the main thread, where
    ``serve`` unwinds and shuts its kernel down; later requests cannot cut that short.

    With ``repeat_ends`` (the bridge, whose cleanup is a courtesy to the notebook, not a
    kernel to save) a request after the first ends the process at once: the platform's
    default action is back from the first one on.
    """

    def __init__(self, cleanup: Callable[[], None], repeat_ends: bool = False) -> None:
        # serve: shuts the kernel down; bridge: ends the session. Safe twice, any thread.
        self._cleanup = cleanup
        self._repeat_ends = repeat_ends
        self._received: list[int] = []
        self.signals: list[int] = []  # the signals routed here (by install)
        self.console_handler: Any = None  # kept referenced: ctypes must not free it

    def on_signal(self, signum: int, frame: Any) -> None:
        first = not self._received
        self._received.append(signum)
        if self._repeat_ends:
            for routed in self.signals:  # (a handler runs on the main thread: it may)
                signal.signal(routed, signal.SIG_DFL)
        if first:
            raise KeyboardInterrupt

    def ignore_further(self) -> None:
        """Stopping anyway (stdin closed, the kernel died): the next signal must not
        interrupt the cleanup (with ``repeat_ends``, the one after it ends the process)."""
        self._received.append(0)

    def on_console_event(self, event: int) -> bool:
        """A console control handler (on a thread Windows starts for it)."""
        if event not in CLOSING_EVENTS:
            return False  # Ctrl-C, Ctrl+Break: Python's own handler turns them into signals
        _thread.interrupt_main(signal.SIGINT)  # serve's main thread unwinds as for Ctrl-C
        try:
            self._cleanup()  # the process ends when this returns: the kernel goes first
        except Exception:
            logger.exception("could not shut the kernel down")
        return True


def install(cleanup: Callable[[], None], repeat_ends: bool = False) -> Stopper:
    """Route this platform's stop requests to a clean stop (from the main thread)."""
    stopper = Stopper(cleanup, repeat_ends)
    stopper.signals = [signal.SIGINT, signal.SIGTERM]
    if sys.platform == "win32":
        stopper.signals.append(getattr(signal, "SIGBREAK", SIGBREAK))
    for signum in stopper.signals:
        signal.signal(signum, stopper.on_signal)
    if sys.platform == "win32":
        stopper.console_handler = _add_console_handler(stopper.on_console_event)
    return stopper


def _add_console_handler(handler: Callable[[int], bool]) -> Any:
    """``SetConsoleCtrlHandler``: no event ever comes without a console (a GUI client's pipes)."""
    import ctypes

    # BOOL WINAPI (DWORD)
    prototype = ctypes.WINFUNCTYPE(ctypes.c_int, ctypes.c_ulong)  # type: ignore[attr-defined]  # Windows only; mypy checks as Linux
    callback = prototype(lambda event: 1 if handler(event) else 0)
    if not ctypes.windll.kernel32.SetConsoleCtrlHandler(callback, 1):  # type: ignore[attr-defined]  # Windows only; mypy checks as Linux
        logger.debug("SetConsoleCtrlHandler failed; a closed console kills serve unwarned")
    _console_handlers.append(callback)
    return callback
