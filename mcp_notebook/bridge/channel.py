"""The client's side: JSON-RPC over stdin/stdout, in the framing the client chose.

The first bytes tell ``Content-Length:`` headers (LSP style, seed 000's "MCP v1.0") from
newline-delimited JSON (standard MCP); the whole connection then uses that framing, both
ways. Broken frames are logged on stderr and skipped; a frame that is not JSON gets a
``-32700`` reply without an id; a frame refused unread (over the size limit) gets a
``-32600`` reply with the id read from its first 64 KiB, else none (``wire.sniff``). Only
protocol bytes ever reach stdout.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, BinaryIO

from ..protocol import jsonrpc
from ..protocol.jsonrpc import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR, RpcError
from ..wire import (
    Framer,
    FrameRefused,
    FramingError,
    FramingKind,
    JsonError,
    detect,
    make_framer,
)

logger = logging.getLogger(__name__)

READ_SIZE = 64 * 1024
_WHITESPACE = b" \t\r\n"


def readable_id(message: Any) -> Any:
    """A message's id if it is one a reply can carry (a string or an integer), else None."""
    request_id = message.get("id") if isinstance(message, dict) else None
    valid = isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    )
    return request_id if valid else None


def error_reply(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error; without ``id`` when the request's could not be read (the one rule of
    :func:`~mcp_notebook.protocol.jsonrpc.error_response`: MCP forbids a null id)."""
    return jsonrpc.error_response(request_id, RpcError(code, message, data))


class Channel:
    def __init__(self, output: BinaryIO) -> None:
        self._output = output
        self._write_lock = threading.Lock()
        self.framer: Framer | None = None
        self.framing: FramingKind | None = None
        self._head = b""
        self._broken = False

    def write(self, message: Any) -> None:
        """Send one message (a batch reply is a list) in the client's framing."""
        framer = self.framer or make_framer("ndjson")
        data = framer.encode(message)
        with self._write_lock:
            if self._broken:
                return
            try:
                self._output.write(data)
                self._output.flush()
            except (OSError, ValueError) as exc:  # the client closed its end
                self._broken = True
                logger.debug("stdout is closed: %s", exc)

    def pump(self, stdin: BinaryIO, handle: Callable[[Any], None]) -> None:
        """Read stdin until EOF, handing each decoded message to ``handle``."""
        read = getattr(stdin, "read1", None) or stdin.read
        while chunk := read(READ_SIZE):
            self._feed(chunk, handle)
        if self.framer is not None:
            self._items(self.framer.eof(), handle)
        elif self._head.strip():
            logger.warning("stdin ended inside a header name: %r", self._head[:80])

    def _feed(self, chunk: bytes, handle: Callable[[Any], None]) -> None:
        if self.framer is None:
            # Leading whitespace decides nothing: keep none of it (it could go on forever).
            self._head = (self._head + chunk).lstrip(_WHITESPACE)
            kind = detect(self._head)
            if kind is None:
                return  # still a prefix of "Content-Length:" (or only whitespace)
            self.framing, self.framer = kind, make_framer(kind)
            chunk, self._head = self._head, b""  # the detection bytes are the stream's start
            logger.debug("the client frames messages as %s", kind)
        self._items(self.framer.feed(chunk), handle)

    def _items(self, items: list[Any], handle: Callable[[Any], None]) -> None:
        for item in items:
            if isinstance(item, JsonError):
                logger.warning("mcp-notebook bridge: %s", item)
                self.write(error_reply(None, PARSE_ERROR, "Parse error", str(item)))
            elif isinstance(item, FrameRefused):
                logger.warning("mcp-notebook bridge: refused a frame: %s", item)
                self.write(
                    error_reply(item.request_id, INVALID_REQUEST, "Invalid Request", str(item))
                )
            elif isinstance(item, FramingError):
                logger.warning("mcp-notebook bridge: dropped a malformed frame: %s", item)
            else:
                try:
                    handle(item)
                except Exception:  # a bug must cost one reply, not the connection
                    logger.exception("mcp-notebook bridge: failed to handle a message")
                    if (
                        isinstance(item, dict)
                        and "method" in item
                        and readable_id(item) is not None
                    ):
                        problem = "mcp-notebook bridge: internal error"
                        self.write(error_reply(readable_id(item), INTERNAL_ERROR, problem))
