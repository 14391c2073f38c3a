"""`mcp-notebook serve` as a subprocess, for tests that need a headless notebook server."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from typing import Any

from tests import portable
from tests.waiting import wait_until

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
        def url() -> str | None:
            for line in self.stderr:
                if found := re.search(r"Streamable HTTP at (\S+)", line):
                    return found.group(1)
            return "exited" if self.process.poll() is not None else None

        try:
            found = wait_until(url, "serve to start", timeout)
        except AssertionError as late:
            raise AssertionError(f"{late}:\n" + "".join(self.stderr)) from None
        if found == "exited":
            raise AssertionError("serve did not start:\n" + "".join(self.stderr))
        return found

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
