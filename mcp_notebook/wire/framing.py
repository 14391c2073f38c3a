"""Sans-IO framers for JSON-RPC over a byte stream, in the manner of h11.

Feed whatever bytes arrived with ``feed(data)``; it returns the complete messages decoded
so far (any JSON value: an object, or a list for a batch) and, in stream order, the
problems found, as :class:`FramingError` instances. A framer never raises on bad input and
always skips past it, so one broken frame does not end the connection. ``encode(message)``
gives the bytes of one outgoing message.

- :class:`ContentLengthFramer`: the LSP base protocol that seed 000 ("MCP v1.0") uses on
  stdio: ``Content-Length: N`` (bytes, not characters), an optional ``Content-Type``, a
  blank line, then exactly N bytes of UTF-8 JSON.
- :class:`NdjsonFramer`: one JSON value per line, as standard MCP uses on stdio.
- :func:`detect` tells them apart from the first bytes of a connection.

Errors::

    FramingError          the stream broke the framing rules (log it; nothing to answer)
     └── JsonError        a frame arrived whole but is not UTF-8 JSON (answer -32700)
"""

from __future__ import annotations

import re
from typing import Any, Literal, Protocol

from . import jsontext

DEFAULT_MAX_BODY = 16 * 1024 * 1024
DEFAULT_MAX_HEADER = 8 * 1024
FramingKind = Literal["content-length", "ndjson"]

_HEADER_NAMES = (b"content-length:", b"content-type:")
_LENGTH = b"content-length:"
_WHITESPACE = b" \t\r\n"
_DIGITS = re.compile(r"[0-9]+")
_CHARSET = re.compile(r";\s*charset\s*=\s*\"?([^\";\s]+)", re.IGNORECASE)
_MORE: Any = object()  # "need more bytes" (None is a JSON value: the message ``null``)


class FramingError(ValueError):
    """The byte stream broke the framing rules; the framer skipped past the bad part."""


class JsonError(FramingError):
    """A frame arrived whole but its body is not UTF-8 JSON: answer it with -32700."""


class Framer(Protocol):
    def feed(self, data: bytes) -> list[Any]: ...
    def eof(self) -> list[Any]: ...
    def encode(self, message: Any) -> bytes: ...


dumps = jsontext.dumps


def _decode(body: bytes) -> Any:
    try:
        return jsontext.loads(body)
    except jsontext.JsonTextError as exc:
        return JsonError(f"Message body is not valid JSON: {exc}")


def detect(first_bytes: bytes) -> FramingKind | None:
    """Which framing a connection uses, from its first bytes; None until that is clear.

    A header name (``Content-Length:`` or ``Content-Type:``, any case) means Content-Length
    framing; anything else means newline-delimited JSON (where junk becomes a parse error).
    Feed the same bytes, detection bytes included, to the framer you then choose.
    """
    start = first_bytes.lstrip(_WHITESPACE)
    if not start:
        return None
    head = start[: max(map(len, _HEADER_NAMES))].lower()
    undecided = False
    for name in _HEADER_NAMES:
        if head.startswith(name):
            return "content-length"
        undecided = undecided or name.startswith(head)
    return None if undecided else "ndjson"


def make_framer(kind: FramingKind, max_body: int = DEFAULT_MAX_BODY) -> Framer:
    if kind == "content-length":
        return ContentLengthFramer(max_body)
    return NdjsonFramer(max_body)


class ContentLengthFramer:
    """``Content-Length: N\\r\\n[Content-Type: ...\\r\\n]\\r\\n`` then N bytes of JSON."""

    def __init__(self, max_body: int = DEFAULT_MAX_BODY, max_header: int = DEFAULT_MAX_HEADER):
        self.max_body, self.max_header = max_body, max_header
        self._buffer = bytearray()
        self._length: int | None = None  # body length once a header section is read
        self._skip = 0  # bytes of a rejected body still to discard
        self._resync = False  # after a bad header: drop bytes up to the next Content-Length

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Any]:
        self._buffer += data
        items: list[Any] = []
        while (item := self._next()) is not _MORE:
            items.append(item)
        return items

    def eof(self) -> list[Any]:
        """Call when the stream ends: reports a message cut short."""
        rest = bytes(self._buffer).strip(_WHITESPACE)
        self._buffer.clear()
        if self._length is not None:
            return [FramingError(f"Stream ended inside a message body ({len(rest)} bytes)")]
        if rest and not self._resync and not self._skip:
            return [FramingError("Stream ended inside a header section")]
        return []

    def encode(self, message: Any) -> bytes:
        body = dumps(message)
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    # -- one step: a message, an error, or _MORE ----------------------------------------
    def _next(self) -> Any:
        buffer = self._buffer
        if self._skip:
            dropped = min(self._skip, len(buffer))
            del buffer[:dropped]
            self._skip -= dropped
            if self._skip:
                return _MORE
        if self._resync and not self._find_header():
            return _MORE
        if self._length is None:
            return self._header()
        if len(buffer) < self._length:
            return _MORE
        body = bytes(buffer[: self._length])
        del buffer[: self._length]
        self._length = None
        return _decode(body)

    def _find_header(self) -> bool:
        # A JSON body cannot hold "Content-Length:" outside a string, so the next one is
        # (almost always) the start of the next message.
        at = bytes(self._buffer).lower().find(_LENGTH)
        if at < 0:
            keep = len(_LENGTH) - 1  # the name may be split across reads
            del self._buffer[: max(0, len(self._buffer) - keep)]
            return False
        del self._buffer[:at]
        self._resync = False
        return True

    def _header(self) -> Any:
        buffer = self._buffer
        # Tolerate blank lines between messages (some writers end each body with one).
        while buffer[:1] in (b"\r", b"\n", b" ", b"\t"):
            del buffer[:1]
        lines: list[bytes] = []
        position = 0
        while True:
            end = buffer.find(b"\n", position)
            if end < 0:
                if len(buffer) > self.max_header:
                    return self._bad(len(buffer), "Header section too long")
                return _MORE
            line = bytes(buffer[position:end]).rstrip(b"\r")
            position = end + 1
            if not line:
                break
            lines.append(line)
            if position > self.max_header:
                return self._bad(position, "Header section too long")
        return self._headers_read(lines, position)

    def _headers_read(self, lines: list[bytes], size: int) -> Any:
        length: int | None = None
        charset = "utf-8"
        for raw in lines:
            name, colon, value_bytes = raw.partition(b":")
            value = value_bytes.decode("latin-1").strip()
            if not colon:
                return self._bad(size, f"Malformed header line {raw[:80]!r}")
            key = name.strip().lower()
            if key == b"content-length":
                if not _DIGITS.fullmatch(value):
                    why = "negative" if value.startswith("-") else "not a number"
                    return self._bad(size, f"Invalid Content-Length {value[:40]!r}: {why}")
                if length is not None and int(value) != length:
                    return self._bad(size, "Conflicting Content-Length headers")
                length = int(value)
            elif key == b"content-type":
                found = _CHARSET.search(value)
                charset = found.group(1).lower() if found else charset
            # Other headers are ignored, as LSP readers do.
        if length is None:
            return self._bad(size, "Missing Content-Length header")
        del self._buffer[:size]
        if length > self.max_body:
            self._skip = length  # the length is known, so skip the body exactly
            return FramingError(
                f"Content-Length {length} exceeds the limit of {self.max_body} bytes"
            )
        if charset not in ("utf-8", "utf8"):
            self._skip = length
            return FramingError(f"Unsupported charset {charset!r}: only utf-8 is accepted")
        self._length = length
        return self._next()

    def _bad(self, size: int, reason: str) -> FramingError:
        # The body length is unknown: drop the header and look for the next message.
        del self._buffer[: max(size, 1)]
        self._resync = True
        return FramingError(reason)


class NdjsonFramer:
    """One JSON value per line (``\\n``; a trailing ``\\r`` and blank lines are ignored)."""

    def __init__(self, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.max_body = max_body
        self._buffer = bytearray()
        self._discarding = False  # inside an over-long line, up to its newline

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Any]:
        self._buffer += data
        items: list[Any] = []
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if not self._discarding and len(self._buffer) > self.max_body:
                    self._discarding = True
                    items.append(FramingError(f"Line longer than {self.max_body} bytes"))
                if self._discarding:
                    self._buffer.clear()
                return items
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            if self._discarding:
                self._discarding = False
                continue
            items.extend(self._line(line))

    def eof(self) -> list[Any]:
        """Call when the stream ends: a last line without a newline still counts."""
        line, self._buffer = bytes(self._buffer), bytearray()
        return [] if self._discarding else self._line(line)

    def encode(self, message: Any) -> bytes:
        return dumps(message) + b"\n"  # JSON escapes newlines inside strings

    def _line(self, line: bytes) -> list[Any]:
        if len(line) > self.max_body:
            return [FramingError(f"Line longer than {self.max_body} bytes")]
        line = line.strip(_WHITESPACE)
        return [_decode(line)] if line else []
