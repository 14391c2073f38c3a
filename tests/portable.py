"""What tests need from the OS, the same way on Linux, macOS and Windows.

Process facts come from psutil rather than /proc; stopping or interrupting a child picks
the platform's mechanism (POSIX signals, or Windows console control events). Each platform
branch is here, once, so a test reads the same everywhere.
"""

from __future__ import annotations

import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

# Windows values, spelled out: the names exist only in Windows' signal and subprocess.
CTRL_BREAK_EVENT = 1  # signal.CTRL_BREAK_EVENT
CREATE_NEW_PROCESS_GROUP = 0x00000200  # subprocess.CREATE_NEW_PROCESS_GROUP

OWNER_ONLY_ON_WINDOWS = (
    "on Windows owner-only access is an ACL that jupyter_core's secure_write sets, not "
    "mode bits (os.stat reports 0o666 or 0o444 whatever the ACL says)"
)


def spawn_options() -> dict[str, Any]:
    """Popen keyword arguments that let :func:`stop` and :func:`interrupt` reach the child.

    On Windows a console control event goes to a whole process group: the child gets a
    group of its own, so that Ctrl+Break reaches it and not the test runner.
    """
    if sys.platform == "win32":
        return {"creationflags": CREATE_NEW_PROCESS_GROUP}
    return {}


def stop(process: subprocess.Popen) -> None:
    """Ask ``process`` to shut down cleanly, as a service manager or a closed console does.

    SIGTERM on POSIX. Windows has no SIGTERM to deliver (Popen turns it into
    TerminateProcess, which no handler sees); Ctrl+Break is what a process can catch
    (Python's SIGBREAK). The child must have been started with :func:`spawn_options`.
    """
    if sys.platform == "win32":
        process.send_signal(CTRL_BREAK_EVENT)
    else:
        process.send_signal(signal.SIGTERM)


def interrupt(process: subprocess.Popen) -> None:
    """Ctrl+C for ``process``: SIGINT on POSIX.

    On Windows Ctrl+C cannot be aimed at one process group (the event is disabled in a
    group created for the child), so the child gets Ctrl+Break, which ``serve`` handles as
    its Ctrl+C. The child must have been started with :func:`spawn_options`.
    """
    if sys.platform == "win32":
        process.send_signal(CTRL_BREAK_EVENT)
    else:
        process.send_signal(signal.SIGINT)


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, whose exit status nobody collected, does not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s direct children."""
    return [child.pid for child in psutil.Process(pid).children()]


def rss(pid: int | None = None) -> int:
    """Resident memory of ``pid`` (this process by default), in bytes."""
    return psutil.Process(pid).memory_info().rss


def open_handles(pid: int | None = None) -> int:
    """Open file descriptors (POSIX) or handles (Windows) of ``pid`` (this process)."""
    process = psutil.Process(pid)
    if sys.platform == "win32":
        return process.num_handles()
    return process.num_fds()


def cpu_seconds(pid: int) -> float:
    """CPU time ``pid`` used so far, user and system, in seconds."""
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def assert_owner_only(path: str | Path) -> None:
    """``path`` is readable and writable by its owner only.

    POSIX: the mode bits are 0o600. Windows: skips the rest of the test, with the reason
    that the check there is an ACL, which jupyter_core's secure_write sets; call it last.
    """
    if sys.platform == "win32":
        pytest.skip(OWNER_ONLY_ON_WINDOWS)
    mode = stat.S_IMODE(Path(path).stat().st_mode)
    assert mode == 0o600, f"{path} has mode {oct(mode)}, not 0o600"


# What the Linux-only end-to-end tooling needs, said when it skips elsewhere.
CHROMIUM_NEEDS = (
    "these tests drive Debian's /usr/bin/chromium, installed with apt-get when missing; "
    "no such package exists for this system (the browser is host tooling: the server "
    "and its confirmations are tested without it)"
)
NODE_NEEDS = (
    "the conformance suite runs on Node 22 from npm's node-linux-<arch> package (a Linux "
    "binary), installed with npm into the test cache"
)


def require_linux(needs: str) -> None:
    """Skip, on any other system, a test whose host tooling exists only on Linux.

    For end-to-end tests whose feature other tests cover everywhere; ``needs`` says what
    they need and why, so that the skip says it too.
    """
    if not sys.platform.startswith("linux"):
        pytest.skip(f"Linux only, not {sys.platform}: {needs}")
