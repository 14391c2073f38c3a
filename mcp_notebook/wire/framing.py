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
     ├── JsonError        a frame arrived whole but is not UTF-8 JSON (answer -32700)
     └── FrameRefused     a frame refused unread: too large, or not UTF-8 (answer -32600,
                          with ``request_id`` read from the frame's start; see ``sniff``);
                          or read, but holding a lone surrogate (``jsontext``)

Limits: a frame over ``max_body`` bytes is refused as soon as that is known (an NDJSON
line once ``max_body`` bytes arrived without its newline; a Content-Length frame at its
header), and its bytes are dropped as they arrive, so memory stays bounded. A
Content-Length framer never trusts a length it refuses: it skips to the next line that
reads ``Content-Length: <digits>``, which cannot occur inside a JSON body (a JSON string
holds no raw line break), so a lying length cannot swallow the messages after it.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Protocol

from ..errors import McpNotebookError
from . import jsontext
from .sniff import SNIFF_BYTES, sniff_id

DEFAULT_MAX_BODY = 16 * 1024 * 1024
DEFAULT_MAX_HEADER = 8 * 1024
FramingKind = Literal["content-length", "ndjson"]

_HEADER_NAMES = (b"content-length:", b"content-type:")
_WHITESPACE = b" \t\r\n"
_DIGITS = re.compile(r"[0-9]+")
# Where a frame starts again after one the framer refused or could not read (see above).
_FRAME_START = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)
# The end of a buffer that may still grow into a _FRAME_START: kept while resyncing.
_FRAME_START_TAIL = re.compile(
    rb"(?:content-length[ \t]*(?::[ \t]*[0-9]*[ \t]*\r?)?|c(?:o(?:n(?:t(?:e(?:n(?:t(?:-(?:l(?:e"
    rb"(?:n(?:g(?:t(?:h)?)?)?)?)?)?)?)?)?)?)?)?)?)\Z",
    re.IGNORECASE,
)
_CHARSET = re.compile(r";\s*charset\s*=\s*\"?([^\";\s]+)", re.IGNORECASE)
_MORE: Any = object()  # "need more bytes" (None is a JSON value: the message ``null``)


class FramingError(McpNotebookError, ValueError):
    """The byte stream broke the framing rules; the framer skipped past the bad part."""


class JsonError(FramingError):
    """A frame arrived whole but its body is not UTF-8 JSON: answer it with -32700."""


class FrameRefused(FramingError):
    """A frame refused unread (over the size limit, or not UTF-8): answer it with -32600.

    ``request_id`` is the id read from the frame's first bytes (``sniff.sniff_id``), or
    None when none could be read (the reply then has no id, as for a parse error).
    """

    def __init__(self, reason: str, request_id: Any = None) -> None:
        super().__init__(reason)
        self.request_id = request_id


def _refused(reason: str, start: bytes | bytearray) -> FrameRefused:
    outcome, request_id = sniff_id(bytes(start[:SNIFF_BYTES]))
    return FrameRefused(reason, request_id if outcome == "id" else None)


class Framer(Protocol):
    def feed(self, data: bytes) -> list[Any]: ...
    def eof(self) -> list[Any]: ...
    def encode(self, message: Any) -> bytes: ...


dumps = jsontext.dumps


def _decode(body: bytes) -> Any:
    try:
        return jsontext.loads(body)
    except jsontext.LoneSurrogate as exc:  # JSON, but no reply could echo it
        return FrameRefused(f"Message refused: {exc}", exc.request_id)
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
        self._refused: str | None = None  # why the frame now arriving is refused
        self._resync = False  # drop bytes up to the next _FRAME_START

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
        if self._refused is not None:
            reason, self._refused = self._refused, None
            return [_refused(reason, rest)]
        if self._length is not None:
            self._length = None
            return [FramingError(f"Stream ended inside a message body ({len(rest)} bytes)")]
        if rest and not self._resync:
            return [FramingError("Stream ended inside a header section")]
        return []

    def encode(self, message: Any) -> bytes:
        body = dumps(message)
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    # -- one step: a message, an error, or _MORE ----------------------------------------
    def _next(self) -> Any:
        buffer = self._buffer
        if self._refused is not None:
            # Read the refused frame's start for its id, then drop the frame unread.
            outcome, request_id = sniff_id(bytes(buffer[:SNIFF_BYTES]))
            if outcome == "more" and len(buffer) < SNIFF_BYTES:
                return _MORE
            reason, self._refused, self._resync = self._refused, None, True
            return FrameRefused(reason, request_id if outcome == "id" else None)
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
        buffer = self._buffer
        found = _FRAME_START.search(buffer)
        if found is not None:
            del buffer[: found.start()]
            self._resync = False
            return True
        # Keep only an end that may still become a header line (split across reads).
        tail = _FRAME_START_TAIL.search(buffer)
        keep = len(buffer) - tail.start() if tail is not None else 0
        del buffer[: len(buffer) - (keep if keep <= self.max_header else 0)]
        return False

    def _header(self) -> Any:
        buffer = self._buffer
        # Tolerate blank lines between messages (some writers end each body with one).
        while buffer and buffer[0] in b"\r\n \t":
            del buffer[:1]
        lines: list[bytes] = []
        position = 0
        while True:
            end = buffer.find(b"\n", position)
            if end < 0:
                if len(buffer) > self.max_header:
                    return self._bad(len(buffer), "Header section too long", restart=True)
                return _MORE
            line = bytes(buffer[position:end]).rstrip(b"\r")
            position = end + 1
            if not line:
                break
            lines.append(line)
            if position > self.max_header:
                return self._bad(position, "Header section too long", restart=True)
        return self._headers_read(lines, position)

    def _headers_read(self, lines: list[bytes], size: int) -> Any:
        digits: str | None = None  # the length without leading zeros, never int() unchecked
        charset = "utf-8"
        for raw in lines:
            name, colon, value_bytes = raw.partition(b":")
            value = value_bytes.decode("latin-1").strip()
            if not colon:
                return self._bad(size, f"Malformed header line {raw[:80]!r}", restart=True)
            key = name.strip().lower()
            if key == b"content-length":
                if not _DIGITS.fullmatch(value):
                    why = "negative" if value.startswith("-") else "not a number"
                    return self._bad(size, f"Invalid Content-Length {value[:40]!r}: {why}")
                value = value.lstrip("0") or "0"
                if digits is not None and value != digits:
                    return self._bad(size, "Conflicting Content-Length headers")
                digits = value
            elif key == b"content-type":
                found = _CHARSET.search(value)
                charset = found.group(1).lower() if found else charset
            # Other headers are ignored, as LSP readers do.
        if digits is None:
            return self._bad(size, "Missing Content-Length header", restart=True)
        del self._buffer[:size]
        # Compare digit counts first: int() of thousands of digits raises ValueError.
        if len(digits) > len(str(self.max_body)) or int(digits) > self.max_body:
            shown = digits if len(digits) <= 20 else f"of {len(digits)} digits"
            limit = f"exceeds the limit of {self.max_body} bytes"
            return self._refuse(f"Content-Length {shown} {limit}")
        if charset not in ("utf-8", "utf8"):
            return self._refuse(f"Unsupported charset {charset!r}: only utf-8 is accepted")
        self._length = int(digits)
        return self._next()

    def _refuse(self, reason: str) -> Any:
        self._refused = reason
        return self._next()

    def _bad(self, size: int, reason: str, restart: bool = False) -> FramingError:
        """The body length is unknown: drop the header and look for the next message.

        With ``restart``, the section held no length line of its own (junk, or junk run
        into the next header because it lacked a newline): a frame start inside it is
        where the next message begins, rather than something to drop with it.
        """
        found = _FRAME_START.search(self._buffer, 1, size) if restart else None
        del self._buffer[: found.start() if found is not None else max(size, 1)]
        self._resync = True
        return FramingError(reason)


class NdjsonFramer:
    """One JSON value per line (``\\n``; a trailing ``\\r`` and blank lines are ignored)."""

    def __init__(self, max_body: int = DEFAULT_MAX_BODY) -> None:
        self.max_body = max_body
        self._buffer = bytearray()
        self._scanned = 0  # bytes of the buffer known to hold no newline
        self._discarding = False  # inside an over-long line, up to its newline

    @property
    def buffered(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[Any]:
        buffer = self._buffer
        buffer += data
        items: list[Any] = []
        while True:
            end = buffer.find(b"\n", self._scanned)
            if end < 0:
                self._scanned = len(buffer)
                if not self._discarding and len(buffer) > self.max_body:
                    self._discarding = True
                    items.append(self._too_long(buffer))
                if self._discarding:
                    buffer.clear()
                    self._scanned = 0
                return items
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            self._scanned = 0
            if self._discarding:
                self._discarding = False
                continue
            items.extend(self._line(line))

    def eof(self) -> list[Any]:
        """Call when the stream ends: a last line without a newline still counts."""
        line, self._buffer, self._scanned = bytes(self._buffer), bytearray(), 0
        return [] if self._discarding else self._line(line)

    def encode(self, message: Any) -> bytes:
        return dumps(message) + b"\n"  # JSON escapes newlines inside strings

    def _too_long(self, start: bytes | bytearray) -> FrameRefused:
        return _refused(f"Line longer than {self.max_body} bytes", start.lstrip(_WHITESPACE))

    def _line(self, line: bytes) -> list[Any]:
        if len(line) > self.max_body:
            return [self._too_long(line)]
        line = line.strip(_WHITESPACE)
        return [_decode(line)] if line else []
