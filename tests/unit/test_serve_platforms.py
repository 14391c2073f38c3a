"""`serve` and the stdio bridge on macOS and Windows, simulated on Linux (issue 13).

Stopping without SIGTERM, no console window for the kernel, a protocol stream that native
code and child processes cannot reach, and an open-file limit that does not cap clients,
in process; whole `serve` processes stopped as on Windows are in
tests/e2e/serve/test_serve_platforms.py.
"""

from __future__ import annotations

import ctypes
import io
import os
import signal
import subprocess
import sys
import threading
import types
from pathlib import Path
from typing import Any

import pytest

from mcp_notebook import (
    headless,
    notebookkernel,
    notebookstart,
    openfiles,
    stopping,
)
from mcp_notebook.bridge import protocol_stdout
from tests.platforms import POSIX, expected_soft_limit, low_soft_limit, write_notebook

CREATE_NO_WINDOW = 0x08000000


# -- no console window for the kernel -----------------------------------------------------------


class Launched(Exception):
    pass


@pytest.mark.parametrize("platform", ["win32", "linux", "darwin"])
def test_the_kernel_gets_no_console_window_on_windows(platform, monkeypatch, tmp_path):
    launches: list[dict[str, Any]] = []

    class Manager:
        def __init__(self, **options: Any) -> None:
            pass

        def start_kernel(self, **kwargs: Any) -> None:
            launches.append(kwargs)
            raise Launched

    monkeypatch.setattr(notebookkernel, "KernelManager", Manager)
    monkeypatch.setattr(sys, "platform", platform)
    kernel = notebookkernel.NotebookKernel(
        write_notebook(tmp_path, "x = 1"), notebookstart.ServeOptions()
    )
    with pytest.raises(Launched):
        kernel.start()
    [kwargs] = launches
    if platform == "win32":
        assert kwargs["creationflags"] & CREATE_NO_WINDOW
    else:
        assert "creationflags" not in kwargs


def test_jupyter_client_hands_creation_flags_to_popen(monkeypatch):
    from jupyter_client import launcher
    from jupyter_client.manager import KernelManager

    given: list[dict[str, Any]] = []

    def popen(cmd: list[str], **kwargs: Any) -> None:
        given.append(kwargs)
        raise Launched

    monkeypatch.setattr(launcher, "Popen", popen)
    manager = KernelManager(kernel_name="python3")
    with pytest.raises(Launched):
        manager.start_kernel(creationflags=CREATE_NO_WINDOW)
    manager.cleanup_resources()
    assert given[0]["creationflags"] == CREATE_NO_WINDOW


# -- the protocol stream ------------------------------------------------------------------------

STRAY_WRITES = """\
import ctypes, os, subprocess, sys
from mcp_notebook.bridge import protocol_stdout

protocol = protocol_stdout()
print("a print")
os.write(1, b"a write to fd 1\\n")
ctypes.CDLL(None).puts(b"native code's puts")
subprocess.run([sys.executable, "-c", "print('a child process')"], check=True)
protocol.write(b'{"jsonrpc": "2.0", "method": "ping"}\\n')
protocol.flush()
"""


@POSIX
def test_prints_native_writes_and_children_never_reach_the_protocol_stream():
    result = subprocess.run(
        [sys.executable, "-c", STRAY_WRITES], capture_output=True, timeout=60, check=True
    )
    assert result.stdout == b'{"jsonrpc": "2.0", "method": "ping"}\n'
    for stray in (b"a print", b"a write to fd 1", b"native code's puts", b"a child process"):
        assert stray in result.stderr


def test_on_windows_the_standard_output_handle_is_pointed_at_stderr(monkeypatch, tmp_path):
    calls: list[tuple[int, int]] = []
    redirected: list[tuple[int, int]] = []

    def set_std_handle(which: int, handle: int) -> int:
        calls.append((which, handle))
        return 1

    kernel32 = types.SimpleNamespace(SetStdHandle=set_std_handle)
    monkeypatch.setattr(ctypes, "windll", types.SimpleNamespace(kernel32=kernel32), raising=False)
    msvcrt = types.SimpleNamespace(get_osfhandle=lambda fd: 0x4000 + fd)
    monkeypatch.setitem(sys.modules, "msvcrt", msvcrt)
    monkeypatch.setattr(sys, "platform", "win32")
    copy = tmp_path / "stdout"
    monkeypatch.setattr(os, "dup", lambda fd: os.open(copy, os.O_WRONLY | os.O_CREAT, 0o600))
    monkeypatch.setattr(os, "dup2", lambda fd, fd2: redirected.append((fd, fd2)))
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    with protocol_stdout() as protocol:
        protocol.write(b"protocol")
    assert redirected == [(2, 1)]
    assert calls == [(-11, 0x4002)]  # SetStdHandle(STD_OUTPUT_HANDLE, stderr's handle)
    assert sys.stdout is sys.stderr
    assert copy.read_bytes() == b"protocol"


# -- open files ---------------------------------------------------------------------------------


START_IN_A_KERNEL = """\
import resource
from mcp_notebook.app import mcp

mcp.start(port=0, auth=False)
print(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
mcp.stop()
"""


@POSIX
def test_mcp_start_raises_a_low_open_file_limit(runtime_dir):
    result = subprocess.run(
        [sys.executable, "-c", START_IN_A_KERNEL],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        preexec_fn=low_soft_limit,
    )
    assert result.stdout.split() == [str(expected_soft_limit())]


class Resource:
    """The ``resource`` module with given limits (macOS: the hard limit is often infinite,
    and a soft limit above ``kern.maxfilesperproc`` is refused with ValueError)."""

    RLIMIT_NOFILE = 8
    RLIM_INFINITY = -1

    def __init__(self, soft: int, hard: int, refuse: bool = False, most: int = 0) -> None:
        self.limits = (soft, hard)
        self.refuse = refuse
        self.most = most  # kern.maxfilesperproc, if set

    def getrlimit(self, which: int) -> tuple[int, int]:
        return self.limits

    def setrlimit(self, which: int, limits: tuple[int, int]) -> None:
        if self.refuse or (self.most and limits[0] > self.most):
            raise ValueError("current limit exceeds maximum limit")
        self.limits = limits


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ((256, -1), (4096, -1)),  # macOS: 256, unlimited
        ((256, 1024), (1024, 1024)),  # never above the hard limit
        ((8192, -1), (8192, -1)),  # never lowered
        ((-1, -1), (-1, -1)),
    ],
)
def test_the_soft_limit_is_raised_to_the_target_or_the_hard_limit(before, after, monkeypatch):
    fake = Resource(*before)
    monkeypatch.setitem(sys.modules, "resource", fake)
    openfiles.raise_open_file_limit()
    assert fake.limits == after


def test_a_refused_raise_is_not_an_error(monkeypatch):
    fake = Resource(256, -1, refuse=True)
    monkeypatch.setitem(sys.modules, "resource", fake)
    openfiles.raise_open_file_limit()
    assert fake.limits == (256, -1)


def test_a_lower_per_process_maximum_still_raises_what_it_allows(monkeypatch):
    """macOS: kern.maxfilesperproc lowered below the target refuses it; take what it allows."""
    fake = Resource(256, -1, most=1500)
    monkeypatch.setitem(sys.modules, "resource", fake)
    openfiles.raise_open_file_limit()
    assert fake.limits == (1024, -1)


def test_on_windows_there_is_no_limit_to_raise(monkeypatch):
    monkeypatch.setitem(sys.modules, "resource", None)  # Windows has no resource module
    monkeypatch.setattr(sys, "platform", "win32")
    openfiles.raise_open_file_limit()


def test_a_closed_console_does_not_wait_the_full_five_seconds_for_a_busy_kernel(monkeypatch):
    """Windows ends the process ~5 s after a closed console's handler is called, and
    jupyter_client waits 5 s for a busy kernel to exit before killing it: the console's
    cleanup hurries, so the kernel is gone before Windows ends serve."""
    waits: list[float] = []

    class Manager:
        has_kernel = True
        shutdown_wait_time = 5.0

        def shutdown_kernel(self, now: bool = False) -> None:
            waits.append(self.shutdown_wait_time)

    interrupted: list[int] = []  # the main thread's unwinding is the other tests' concern
    monkeypatch.setattr(stopping._thread, "interrupt_main", interrupted.append)
    monkeypatch.setattr(signal, "signal", lambda signum, handler: None)
    kernel = notebookkernel.NotebookKernel(Path("x.ipynb"), notebookstart.ServeOptions())
    kernel.manager = Manager()  # type: ignore[assignment]
    stopped = threading.Event()
    stopper = headless._stop_on_request(kernel, stopped)
    assert stopper.on_console_event(stopping.CTRL_CLOSE_EVENT) is True
    assert interrupted == [signal.SIGINT] and stopped.is_set()
    assert waits == [notebookkernel.HURRIED_SHUTDOWN] and notebookkernel.HURRIED_SHUTDOWN < 4


def test_the_console_handler_is_never_freed(monkeypatch):
    """ctypes frees a callback nobody references; Windows would then call freed memory."""
    registered: list[Any] = []
    kernel32 = types.SimpleNamespace(SetConsoleCtrlHandler=lambda cb, add: registered.append(cb))
    monkeypatch.setattr(ctypes, "WINFUNCTYPE", ctypes.CFUNCTYPE, raising=False)
    monkeypatch.setattr(ctypes, "windll", types.SimpleNamespace(kernel32=kernel32), raising=False)
    stopping._add_console_handler(lambda event: True)  # the caller keeps no reference
    assert registered and registered[-1] in stopping._console_handlers
