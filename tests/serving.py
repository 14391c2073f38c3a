"""`mcp-notebook serve` as a subprocess, for tests that need a headless notebook server."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from typing import Any

from tests import portable

SERVE = [sys.executable, "-m", "mcp_notebook.cli", "serve"]


class ServeProcess:
    def __init__(self, *args: str, **popen: Any) -> None:
        self.process = subprocess.Popen(
            [*SERVE, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **{**portable.spawn_options(), **popen},
        )
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stderr:
            self.stderr.append(line)

    def wait_for_url(self, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.stderr:
                found = re.search(r"Streamable HTTP at (\S+)", line)
                if found:
                    return found.group(1)
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError("serve did not start:\n" + "".join(self.stderr))

    def children(self) -> list[int]:
        return portable.children(self.process.pid)

    def stop(self) -> int:
        if self.process.poll() is None:
            portable.interrupt(self.process)  # Ctrl-C
        try:
            return self.process.wait(60)
        finally:
            if self.process.poll() is None:
                self.process.kill()
