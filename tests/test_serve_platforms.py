"""`serve` and the stdio bridge on macOS and Windows, simulated on Linux (issue 13).

Stopping without SIGTERM, no console window for the kernel, a protocol stream that native
code and child processes cannot reach, and an open-file limit that does not cap clients.
"""

from __future__ import annotations

import _thread
import ctypes
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest

from mcp_notebook import (
    discovery,
    headless,
    notebookkernel,
    notebookstart,
    openfiles,
    stopping,
)
from mcp_notebook.bridge import protocol_stdout
from mcp_notebook.startview import GUTTER

from .serving import ServeProcess
from .stdio import INITIALIZE, RawStdio

ROOT = Path(__file__).resolve().parents[1]
CREATE_NO_WINDOW = 0x08000000
# Real POSIX processes (signals, rlimits, libc); the tests of the Windows side simulate it.
POSIX = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, rlimits and libc")


def exited(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_until(condition: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def write_notebook(folder: Path, *cells: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path = folder / "served.ipynb"
    nbformat.write(notebook, path)
    return path


@pytest.fixture
def runtime_dir(tmp_path, monkeypatch) -> Path:
    """A discovery folder of this test's own (the kernel inherits the variable)."""
    monkeypatch.setenv("MCP_NOTEBOOK_RUNTIME_DIR", str(tmp_path / "runtime"))
    return discovery.folder()


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


def serve_until(stop: Any, folder: Path, path: Path) -> tuple[int, int, Any]:
    """Run ``serve_http`` on this (the main) thread; once its kernel has written its
    discovery file, ``stop(kernel pid)`` on another thread. The exit code, kernel pid and
    what ``stop`` returned."""
    seen: dict[str, Any] = {}

    def stop_once_serving() -> None:
        try:
            wait_until(lambda: list(folder.glob("*.json")), "the discovery file")
            seen["pid"] = discovery.running()[0].pid
            seen["stopped"] = stop(seen["pid"])
        except BaseException as exc:
            seen["error"] = exc
        finally:
            if "stopped" not in seen:  # never leave serve running: the test fails instead
                _thread.interrupt_main()

    stopper = threading.Thread(target=stop_once_serving, daemon=True)
    stopper.start()
    code = headless.serve_http(path, notebookstart.ServeOptions(port=0, auth=False))
    stopper.join(60)  # a console handler may return after serve did
    if "error" in seen:
        raise seen["error"]
    return code, seen.get("pid", 0), seen.get("stopped")


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


def stop_as_on_windows(how: str, notebook: str) -> None:
    """``serve_http`` with ``stopping.install`` run as on Windows (the kernel itself
    starts as on Linux), stopped by Ctrl+Break or a closed console; prints what it saw.

    Run in a process of its own: the stop interrupts jupyter_client on the main thread,
    which a process that goes on using it would not survive, and signal handlers change.
    """
    signals, kernel32 = stopping_as_on_windows()
    folder = discovery.folder()

    def ctrl_break(pid: int) -> None:
        os.kill(os.getpid(), signal.SIGUSR1)

    def close_the_console(pid: int) -> dict[str, Any]:
        assert kernel32.console_handlers, "no console control handler"
        [handler] = kernel32.console_handlers
        ctrl_c = handler(0)  # CTRL_C_EVENT: left to Python's own handler (SIGINT)
        closed = handler(stopping.CTRL_CLOSE_EVENT)
        # Windows ends the process as soon as the handler returns: all must be done by now.
        files = [p.name for p in folder.glob("*.json")]
        return {"ctrl_c": ctrl_c, "closed": closed, "exited": exited(pid), "files": files}

    stop = {"ctrl-break": ctrl_break, "close": close_the_console}[how]
    code, pid, stopped = serve_until(stop, folder, Path(notebook))
    seen = {
        "code": code,
        "exited": exited(pid),
        "files": [p.name for p in folder.glob("*.json")],
        "handlers": sorted(signals.handlers),
        "on_close": stopped,
    }
    print(json.dumps(seen))


def stopped_as_on_windows(how: str, notebook: Path) -> dict[str, Any]:
    code = "from tests.test_serve_platforms import stop_as_on_windows as s; s(*sys.argv[1:])"
    result = subprocess.run(
        [sys.executable, "-c", "import sys; " + code, how, str(notebook)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


# Stopped once serving, or while the notebook's cells still run (its server already up).
WHEN = pytest.mark.parametrize(
    "cells",
    [["x = 1"], ["%load_ext mcp_notebook\nmcp.start()", "import time\ntime.sleep(2)"]],
    ids=["serving", "starting"],
)


@POSIX
@WHEN
def test_ctrl_break_on_windows_stops_serve_and_its_kernel(runtime_dir, tmp_path, cells):
    seen = stopped_as_on_windows("ctrl-break", write_notebook(tmp_path, *cells))
    assert WindowsSignals.SIGBREAK in seen["handlers"]
    assert seen["code"] == 0
    assert seen["exited"] and seen["files"] == []


@POSIX
@WHEN
def test_a_closed_console_on_windows_stops_serve_and_its_kernel(runtime_dir, tmp_path, cells):
    seen = stopped_as_on_windows("close", write_notebook(tmp_path, *cells))
    on_close = seen["on_close"]
    assert (on_close["ctrl_c"], on_close["closed"]) == (0, 1)  # only closing is ours to handle
    # By the time the handler returned (and Windows would end serve), all was cleaned up.
    assert on_close["exited"] and on_close["files"] == []
    assert seen["code"] == 0


@POSIX
def test_sigterm_stops_serve_its_kernel_and_its_discovery_file(runtime_dir, tmp_path):
    path = write_notebook(tmp_path, "x = 1")
    served = ServeProcess(str(path), "--port", "0", "--no-auth")
    served.wait_for_url()
    [record] = discovery.running()
    served.process.send_signal(signal.SIGTERM)
    assert served.process.wait(60) == 0
    assert exited(record.pid)
    assert list(runtime_dir.glob("*.json")) == []
    assert served.process.stdout.read() == ""


@POSIX
def test_stdin_closed_by_a_gui_client_stops_serve_its_kernel_and_its_discovery_file(
    runtime_dir, tmp_path
):
    raw = RawStdio("serve", str(write_notebook(tmp_path, "x = 1")), "--transport", "stdio")
    raw.send(INITIALIZE)
    raw.reply_to(1)
    # initialize is answered while the notebook starts; tools/list once it serves.
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    raw.reply_to(2)
    [record] = discovery.running()
    assert raw.close() == 0  # what a client that does not signal does: close the pipe
    assert exited(record.pid)
    assert list(runtime_dir.glob("*.json")) == []
    assert all(b'"jsonrpc"' in line for line in raw.lines)


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


def low_soft_limit() -> None:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))


def expected_soft_limit() -> int:
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    return openfiles.TARGET if hard == resource.RLIM_INFINITY else min(hard, openfiles.TARGET)


@POSIX
def test_serve_raises_its_kernels_low_open_file_limit(tmp_path):
    cell = (
        "import resource\n"
        "print('kernel soft limit:', resource.getrlimit(resource.RLIMIT_NOFILE)[0])"
    )
    path = write_notebook(tmp_path, cell)
    served = ServeProcess(str(path), "--port", "0", "--no-auth", preexec_fn=low_soft_limit)
    try:
        served.wait_for_url()
        kernel_says = [line for line in served.stderr if "kernel soft limit:" in line]
        assert kernel_says == [f"{GUTTER}kernel soft limit: {expected_soft_limit()}\n"]
    finally:
        served.stop()


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
