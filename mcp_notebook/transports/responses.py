"""Whole HTTP/1.1 responses written as bytes, for where no framework writes them: a
refusal sent before tornado's handler (limits.py, http.py), an answer sent while the body
is still coming (streamed.py, the Jupyter Server relay), the early reply from the kernel
thread (direct.py). One module, so that every one has the same head.
"""

from __future__ import annotations

import email.utils
import http.client
import time
from collections.abc import Iterable
from typing import Any

from ..protocol import jsonrpc
from ..protocol.jsonrpc import RpcError
from .security import AUTHENTICATE

_date: tuple[int, bytes] = (0, b"")


def http_date() -> bytes:
    """The Date header's value, formatted once a second."""
    global _date
    now = int(time.time())
    if _date[0] != now:
        _date = (now, email.utils.formatdate(now, usegmt=True).encode())
    return _date[1]


def status_line(status: int) -> bytes:
    return f"HTTP/1.1 {status} {http.client.responses.get(status, 'Unknown')}\r\n".encode()


_STATUS_LINES = {200: status_line(200)}  # the common one, made once


def error_body(code: int, message: str, request_id: Any = None, data: Any = None) -> bytes:
    return jsonrpc.dumps(jsonrpc.error_response(request_id, RpcError(code, message, data)))


def json_response(reply: dict[str, Any] | None, status: int = 200) -> bytes:
    """The response for a POST's reply, written from the kernel thread (direct.py): JSON,
    or 202 when none is due. On the hot path: the common status line is made once."""
    if reply is None:
        head = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n"
        return head + b"Date: " + http_date() + b"\r\n\r\n"
    body = jsonrpc.encode_reply(reply)
    return b"".join(
        (
            _STATUS_LINES.get(status) or status_line(status),
            b"Content-Type: application/json\r\nDate: ",
            http_date(),
            b"\r\nContent-Length: ",
            str(len(body)).encode(),
            b"\r\n\r\n",
            body,
        )
    )


def close_response(status: int, body: bytes, headers: Iterable[tuple[str, str]] = ()) -> bytes:
    """A whole JSON response after which the connection closes; a 401 names the scheme."""
    head = [*(f"{name}: {value}" for name, value in headers), "Content-Type: application/json"]
    if status == 401 and not any(line.lower().startswith("www-authenticate:") for line in head):
        head.append(f"WWW-Authenticate: {AUTHENTICATE}")
    head += [f"Content-Length: {len(body)}", "Connection: close"]
    lines = "".join(f"{line}\r\n" for line in head).encode("latin-1")
    return status_line(status) + lines + b"Date: " + http_date() + b"\r\n\r\n" + body
