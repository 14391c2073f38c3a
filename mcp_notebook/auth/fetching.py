"""Bounded HTTP requests to the authorization server: JWKS, metadata, introspection.

The stdlib's http.client (an export has no tornado) on a worker thread of its own, so the
server's loop never waits on a socket. Every fetch is bounded twice: in time (one
deadline for connecting, sending and the whole body, checked between reads, not only per
read: a server that drips one byte a second is cut off) and in size (a body past the
limit is refused, not read on). Redirects are not followed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import json
import threading
import time
from typing import Any
from urllib.parse import urlsplit

from ..errors import McpNotebookError

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


class FetchError(McpNotebookError, RuntimeError):
    """The authorization server could not be reached or gave no usable answer."""


def fetch(
    url: str,
    *,
    timeout: float,
    limit: int,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    """GET ``url`` (POST when ``body`` is given); the body of a 200 answer."""
    deadline = time.monotonic() + timeout
    parts = urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "", parts.port, timeout=timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    sent = {"Accept": "application/json", "User-Agent": "mcp-notebook", **(headers or {})}
    try:
        connection.request("POST" if body is not None else "GET", target, body, sent)
        response = connection.getresponse()
        if response.status != 200:
            raise FetchError(f"{url} answered HTTP {response.status}")
        length = response.getheader("Content-Length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise FetchError(f"{url} sent {length} bytes, over the {limit}-byte limit")
        chunks: list[bytes] = []
        size = 0
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FetchError(f"{url} did not answer within {timeout:g} s")
            if connection.sock is not None:
                connection.sock.settimeout(left)
            chunk = response.read1(min(65536, limit + 1 - size))
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                raise FetchError(f"{url} sent more than the {limit}-byte limit")
            chunks.append(chunk)
    except (OSError, http.client.HTTPException) as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        raise FetchError(f"{url}: {reason}") from None
    finally:
        connection.close()


def fetch_json(url: str, **options: Any) -> dict[str, Any]:
    """:func:`fetch`, the body a JSON object."""
    data = fetch(url, **options)
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nesting past json's depth
        raise FetchError(f"{url} did not send JSON") from None
    if not isinstance(value, dict):
        raise FetchError(f"{url} sent JSON that is not an object")
    return value


def submit(function: Any, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
    """Run ``function`` on the fetch threads (two: a hanging server holds one at most
    per fetch in flight, and fetches are single-flight, keys.py)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="mcp-auth-fetch")
    return _pool.submit(function, *args, **kwargs)


async def awaited(future: concurrent.futures.Future[Any], timeout: float) -> Any:
    """Wait for a fetch on the caller's loop, at most ``timeout`` (plus a moment): the
    fetch's own deadline normally ends it first."""
    try:
        return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout + 1)
    except asyncio.TimeoutError:
        raise FetchError(f"no answer within {timeout:g} s") from None
