"""`serve` on Windows, simulated on Linux, and its POSIX stops: Ctrl+Break and a closed
console stop serve and its kernel, as SIGTERM and a closed stdin do; its kernel's low
open-file limit is raised. Whole `serve` processes (the in-process parts are
tests/unit/test_serve_platforms.py).
"""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mcp_notebook import (
    discovery,
    headless,
    notebookstart,
    stopping,
)
from mcp_notebook.startview import GUTTER
from tests.platforms import (
    POSIX,
    WindowsSignals,
    exited,
    expected_soft_limit,
    low_soft_limit,
    stopping_as_on_windows,
    write_notebook,
)
from tests.serving import ServeProcess
from tests.stdio import INITIALIZE, RawStdio
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]


def serve_until(stop: Any, folder: Path, path: Path) -> tuple[int, int, Any]:
    """Run ``serve_http`` on this (the main) thread; once its kernel has written its
    discovery file, ``stop(kernel pid)`` on another thread. The exit code, kernel pid and
    what ``stop`` returned."""
    seen: dict[str, Any] = {}

    def stop_once_serving() -> None:
        try:
            wait_until(lambda: list(folder.glob("*.json")), "the discovery file", timeout=120)
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
    code = (
        "from tests.e2e.serve.test_serve_platforms import stop_as_on_windows as s; s(*sys.argv[1:])"
    )
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
