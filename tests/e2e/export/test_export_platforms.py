"""``python -m PACKAGE --transport http`` stopped as on Windows (simulated on Linux, as
tests/unit/test_serve_platforms.py does for ``serve``): Ctrl+Break and a closed console stop the
exported server cleanly, through the same stop path as ``serve``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from mcp_notebook import stopping
from mcp_notebook.export import runtime
from tests.platforms import POSIX, stopping_as_on_windows
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]


def _listening(url: str) -> bool:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port), timeout=5).close()
    except OSError:
        return False
    return True


def stop_export_as_on_windows(how: str) -> None:
    """Serve an exported app on this (the main) thread and stop it as Windows would; print
    what was seen. Run in a process of its own (it patches signal handling for good)."""
    signals, kernel32 = stopping_as_on_windows()
    app = runtime.exported_app("winexport", {})

    @app.tool
    def add(a: int, b: int) -> int:
        return a + b

    seen: dict[str, Any] = {}

    def stop_once_serving() -> None:
        try:
            wait_until(lambda: app.status()["running"], "the exported server", timeout=120)
            url = app.status()["url"]
            seen["listening"] = _listening(url)
            if how == "ctrl-break":
                os.kill(os.getpid(), signal.SIGUSR1)  # SIGBREAK's stand-in
            else:
                [handler] = kernel32.console_handlers or [None]
                assert handler is not None, "no console control handler"
                seen["closed"] = handler(stopping.CTRL_CLOSE_EVENT)
                # Windows ends the process once the handler returns: no more serving now.
                seen["listening_after"] = _listening(url)
        except BaseException as exc:
            seen["error"] = repr(exc)
            signal.raise_signal(signal.SIGINT)  # never leave it serving: fail instead

    stopper = threading.Thread(target=stop_once_serving, daemon=True)
    stopper.start()
    code = runtime.main(app, ["--transport", "http", "--port", "0", "--no-auth"])
    stopper.join(60)  # a console handler may return after main() did
    seen.update(code=code, handlers=sorted(signals.handlers), running=app.status()["running"])
    print(json.dumps(seen))


def stopped_as_on_windows(how: str) -> dict[str, Any]:
    code = (
        "from tests.e2e.export.test_export_platforms import stop_export_as_on_windows as s; "
        "s(sys.argv[1])"
    )
    result = subprocess.run(
        [sys.executable, "-c", "import sys; " + code, how],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


@POSIX
def test_ctrl_break_on_windows_stops_an_exported_http_server():
    seen = stopped_as_on_windows("ctrl-break")
    assert "error" not in seen, seen["error"]
    assert stopping.SIGBREAK in seen["handlers"]
    assert seen["listening"] and seen["code"] == 0 and not seen["running"]


@POSIX
def test_a_closed_console_on_windows_stops_an_exported_http_server_before_it_returns():
    seen = stopped_as_on_windows("close")
    assert "error" not in seen, seen["error"]
    assert seen["closed"] == 1 and seen["listening"] and not seen["listening_after"]
    assert seen["code"] == 0 and not seen["running"]


pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
