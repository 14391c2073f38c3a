"""Helpers for stdio servers: the SDK's stdio client parameters and a raw line client;
and a fake notebook endpoint for the bridge."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
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
    """Speak newline-delimited JSON-RPC to a subprocess and keep every stdout line.

    ``popen``: more Popen arguments (``portable.spawn_options()`` to stop it as a client does).
    """

    def __init__(self, *args: str, **popen: Any) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_notebook", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            **popen,
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
    ``disconnected``. DELETEs land in ``deleted`` and are answered 200 while
    ``answer_deletes`` is set (clear it to hold them unanswered).
    """

    def __init__(self, answer: Callable[[Seen], Answer]) -> None:
        self.answer = answer
        self.seen: list[Seen] = []
        self.disconnected: list[Seen] = []
        self.deleted: list[Seen] = []
        self.answer_deletes = threading.Event()
        self.answer_deletes.set()
        self.hung_up = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._reply(405, "application/json", b"")

            def do_DELETE(self) -> None:
                fake.deleted.append(
                    Seen("DELETE", {k.lower(): v for k, v in self.headers.items()}, None)
                )
                fake.answer_deletes.wait(60)
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
        # A short poll: close() (shutdown) waits for the loop to look, 0.5 s by default.
        serve = functools.partial(self._http.serve_forever, poll_interval=0.02)
        threading.Thread(target=serve, daemon=True).start()
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


# -- a stdio client for either framing, that keeps every frame's raw bytes -----------------

CONTENT_LENGTH_HEADER = re.compile(rb"Content-Length: (\d+)\r\n\r\n")


def strict_json(body: bytes) -> Any:
    """Decode as a strict client does: UTF-8, and no NaN / Infinity tokens."""

    def refuse(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    return json.loads(body.decode("utf-8"), parse_constant=refuse)


def encode_frame(framing: str, body: bytes) -> bytes:
    if framing == "content-length":
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    return body + b"\n"


class FramedStdio:
    """Write raw bytes to ``python -m mcp_notebook ARGS`` and read back its frames.

    ``messages`` holds the strict decoding of every frame the process wrote; a frame that
    does not decode (not UTF-8, a NaN token, not JSON) is kept in ``bad`` instead.
    """

    def __init__(self, *args: str, framing: str = "ndjson") -> None:
        self.framing = framing
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_notebook", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.messages: list[Any] = []
        self.bad: list[tuple[bytes, str]] = []
        self.stderr: list[bytes] = []
        self._arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        pending = b""
        fd = self.process.stdout.fileno()
        while chunk := os.read(fd, 1 << 16):
            pending += chunk
            bodies, pending = self._split(pending)
            with self._arrived:
                for body in bodies:
                    try:
                        message = strict_json(body)
                    except ValueError as exc:
                        self.bad.append((body, str(exc)))
                    else:
                        self._received(message)
                self._arrived.notify_all()

    def _received(self, message: Any) -> None:
        self.messages.append(message)

    def _split(self, data: bytes) -> tuple[list[bytes], bytes]:
        bodies: list[bytes] = []
        if self.framing == "ndjson":
            *lines, rest = data.split(b"\n")
            return [line for line in lines if line.strip()], rest
        while found := CONTENT_LENGTH_HEADER.match(data):
            end = found.end() + int(found.group(1))
            if len(data) < end:
                break
            bodies.append(data[found.end() : end])
            data = data[end:]
        return bodies, data

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr.append(line)

    def write(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: Any) -> None:
        self.write(encode_frame(self.framing, json.dumps(message).encode()))

    def wait_for(self, found: Callable[[Any], bool], timeout: float = 60) -> Any:
        """The first message so far, or until ``timeout``, for which ``found`` holds."""

        def search() -> Any:
            return next((m for m in self.messages if found(m)), None)

        with self._arrived:
            if not self._arrived.wait_for(lambda: search() is not None, timeout):
                raise AssertionError(
                    f"not found in {self.messages[-5:]}; stderr:\n"
                    + b"".join(self.stderr[-40:]).decode(errors="replace")
                )
            return search()

    def reply_to(self, request_id: Any, timeout: float = 60) -> dict[str, Any]:
        return self.wait_for(lambda m: is_reply(m, request_id), timeout)

    def replies_to(self, request_id: Any) -> list[dict[str, Any]]:
        with self._arrived:
            return [m for m in self.messages if is_reply(m, request_id)]

    def close(self, timeout: float = 60) -> int:
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        try:
            return self.process.wait(timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()


def is_reply(message: Any, request_id: Any) -> bool:
    return (
        isinstance(message, dict)
        and "method" not in message
        and type(message.get("id")) is type(request_id)
        and message.get("id") == request_id
    )
