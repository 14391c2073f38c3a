"""Helpers for stdio servers: the SDK's stdio client parameters and a raw line client;
and a fake notebook endpoint for the bridge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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

    def messages(self) -> list[dict[str, Any]]:
        with self._arrived:
            return [json.loads(line) for line in self.lines]

    def wait_for(self, found: Callable[[dict[str, Any]], bool], timeout: float = 60) -> Any:
        """The first message written so far or until ``timeout`` for which ``found`` holds."""

        def search() -> dict[str, Any] | None:
            return next((m for m in map(json.loads, self.lines) if found(m)), None)

        with self._arrived:
            if not self._arrived.wait_for(lambda: search() is not None, timeout):
                raise AssertionError("not found; stderr:\n" + b"".join(self.stderr).decode())
        return search()

    def close(self, timeout: float = 60) -> int:
        self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()


# -- a stand-in for a notebook's HTTP endpoint, for bridge tests -----------------------------

# (status, content type, body) or (status, content type, body, extra headers)
Answer = tuple[Any, ...]


@dataclass
class Seen:
    """One HTTP request the fake endpoint received."""

    verb: str
    headers: dict[str, str]  # names lower-cased
    body: Any

    @property
    def method(self) -> str | None:
        return self.body.get("method") if isinstance(self.body, dict) else None


class FakeNotebook:
    """An HTTP/1.1 endpoint whose POST answers come from ``answer(seen)``.

    ``answer`` returns (status, content type, body): ``bytes`` are sent with a
    Content-Length; an iterable of pieces is sent chunked, each piece flushed at once (a
    generator can wait between pieces). A client that hangs up mid-body lands in
    ``disconnected``.
    """

    def __init__(self, answer: Callable[[Seen], Answer]) -> None:
        self.answer = answer
        self.seen: list[Seen] = []
        self.disconnected: list[Seen] = []
        self.hung_up = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._reply(405, "application/json", b"")

            def do_DELETE(self) -> None:
                self._reply(200, "application/json", b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                seen = Seen("POST", {k.lower(): v for k, v in self.headers.items()}, None)
                seen.body = json.loads(raw) if raw else None
                fake.seen.append(seen)
                status, content_type, body, *extra = fake.answer(seen)
                try:
                    self._reply(status, content_type, body, *extra)
                except (BrokenPipeError, ConnectionResetError):
                    fake.disconnected.append(seen)
                    fake.hung_up.set()
                    self.close_connection = True

            def _reply(self, status: int, content_type: str, body: Any, extra: Any = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                if isinstance(body, bytes):
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for piece in body:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}/mcp"

    def posted(self, method: str) -> list[Seen]:
        return [seen for seen in self.seen if seen.method == method]

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


def json_body(message: Any) -> bytes:
    return json.dumps(message).encode()


def sse_event(message: Any) -> bytes:
    return b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n"


def json_line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"
