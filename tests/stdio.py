"""Helpers for stdio servers: the SDK's stdio client parameters and a raw line client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any

from mcp.client.stdio import StdioServerParameters

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "1"},
    },
}


def module_params(*args: str) -> StdioServerParameters:
    """``python -m mcp_notebook ARGS`` as the SDK's stdio client spawns it."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "mcp_notebook", *args], env=dict(os.environ)
    )


class RawStdio:
    """Speak newline-delimited JSON-RPC to a subprocess and keep every stdout line."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_notebook", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: list[bytes] = []
        self.stderr: list[bytes] = []
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            with self._arrived:
                self.lines.append(line)
                self._arrived.notify_all()

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr.append(line)

    def send(self, message: dict[str, Any]) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def reply_to(self, request_id: Any, timeout: float = 120) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            for line in self.lines:
                message = json.loads(line)
                if message.get("id") == request_id and "method" not in message:
                    return message
            return None

        with self._arrived:
            if not self._arrived.wait_for(lambda: found() is not None, timeout):
                raise AssertionError(
                    f"no reply to {request_id}; stderr:\n" + b"".join(self.stderr).decode()
                )
        return found()

    def close(self, timeout: float = 60) -> int:
        self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
