"""Other platforms, simulated on Linux, and what the platform tests share: Windows'
stopping (no SIGTERM: Ctrl+Break and the console's close event), a low open-file limit."""

from __future__ import annotations

import ctypes
import signal
import sys
import types
from pathlib import Path
from typing import Any

import psutil
import pytest

from mcp_notebook import openfiles, stopping
from tests.sources import notebook

# Real POSIX processes (signals, rlimits, libc); the tests of the Windows side simulate it.
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, rlimits and libc")


def exited(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def write_notebook(folder: Path, *cells: str) -> Path:
    return notebook(folder / "served.ipynb", *cells)


# -- stopping: Windows has no SIGTERM -----------------------------------------------------------


class WindowsSignals:
    """The signal module as ``serve`` sees it on Windows: SIGTERM handlers are installed
    but never called; SIGBREAK (Ctrl+Break) exists and reaches the main thread like any
    signal, here through SIGUSR1 as its stand-in."""

    SIGINT = signal.SIGINT
    SIGTERM = signal.SIGTERM
    SIGBREAK = 21
    STAND_IN = {SIGINT: signal.SIGINT, SIGBREAK: signal.SIGUSR1}

    def __init__(self) -> None:
        self.handlers: dict[int, Any] = {}

    def signal(self, signum: int, handler: Any) -> Any:
        self.handlers[signum] = handler
        if signum in self.STAND_IN:
            return signal.signal(self.STAND_IN[signum], handler)
        return None


class Kernel32:
    def __init__(self) -> None:
        self.console_handlers: list[Any] = []

    def SetConsoleCtrlHandler(self, handler: Any, add: int) -> int:
        assert add
        self.console_handlers.append(handler)
        return 1


def stopping_as_on_windows() -> tuple[WindowsSignals, Kernel32]:
    """From here on in this process, ``stopping.install`` does what it does on Windows
    (SIGBREAK's stand-in is SIGUSR1, the console handlers are kept in ``Kernel32``)."""
    signals, kernel32 = WindowsSignals(), Kernel32()
    stopping.signal = signals  # type: ignore[assignment]
    ctypes.WINFUNCTYPE = ctypes.CFUNCTYPE  # type: ignore[attr-defined]
    ctypes.windll = types.SimpleNamespace(kernel32=kernel32)  # type: ignore[attr-defined]
    install = stopping.install

    def install_on_windows(cleanup: Any, repeat_ends: bool = False) -> stopping.Stopper:
        platform, sys.platform = sys.platform, "win32"
        try:
            return install(cleanup, repeat_ends)
        finally:
            sys.platform = platform

    stopping.install = install_on_windows

    def unhandled(signum: int, frame: Any) -> None:
        raise AssertionError("Ctrl+Break (SIGBREAK) has no handler")

    signal.signal(signal.SIGUSR1, unhandled)  # until a handler for SIGBREAK is installed
    return signals, kernel32


def low_soft_limit() -> None:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))


def expected_soft_limit() -> int:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return openfiles.TARGET if hard == resource.RLIM_INFINITY else min(hard, openfiles.TARGET)
