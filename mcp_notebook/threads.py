"""Threads this package starts, kept out of a kernel's debugger.

When a breakpoint is hit, debugpy (the debugger in ipykernel, which JupyterLab's Debugger
panel and VS Code use) suspends every thread it traces. The server's thread must go on
answering ``ping``, lists and new sessions while a person steps through a call, so every
thread the package starts opts out as ipykernel's own threads (heartbeat, IOPub, control)
do: with two attributes that debugpy's pydevd reads. Outside a debugger they do nothing.
Imports nothing of the package, so every layer may use it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T", bound=threading.Thread)


def untraced(thread: T) -> T:
    """``thread``, marked (before it starts) so the debugger neither traces nor stops it."""
    thread.pydev_do_not_trace = True  # type: ignore[attr-defined]  # no trace function set
    thread.is_pydev_daemon_thread = True  # type: ignore[attr-defined]  # "suspend all" skips it
    return thread


def start_thread(
    target: Callable[..., Any], *, name: str, args: tuple[Any, ...] = ()
) -> threading.Thread:
    """Start a daemon thread the debugger leaves alone; return it."""
    thread = untraced(threading.Thread(target=target, name=name, args=args, daemon=True))
    thread.start()
    return thread


def start_timer(delay: float, function: Callable[[], Any]) -> threading.Timer:
    """Start a daemon ``threading.Timer`` the debugger leaves alone; return it."""
    timer = untraced(threading.Timer(delay, function))
    timer.daemon = True
    timer.start()
    return timer
