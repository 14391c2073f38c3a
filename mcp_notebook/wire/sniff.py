"""Read a request's id from the start of a frame too large to decode.

A frame over the size limit is never parsed whole, yet its request deserves a reply with
its id. :func:`sniff_id` scans only the top-level members of the object at the start of
the bytes (skipping nested values without decoding them) until it meets ``"id"``. Clients
write ``id`` before ``params`` (every SDK does), so the first 64 KiB are enough in
practice; an id that comes later is unreadable, and the reply has none.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from ..errors import McpNotebookError
from . import jsontext

SNIFF_BYTES = 64 * 1024

Outcome = Literal["id", "no-id", "more"]

_SPACE = re.compile(rb"[ \t\r\n]*")
_STRING_REST = re.compile(rb'(?:[^"\\]|\\.)*"', re.DOTALL)  # after the opening quote
_SCALAR = re.compile(rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
# What a scalar cut short by the end of the bytes may look like: "-", "1.", "2e+", "tr".
_SCALAR_START = re.compile(
    rb"-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]*)?)?|t(?:r(?:u)?)?|f(?:a(?:l(?:s)?)?)?|n(?:u(?:l)?)?"
)
_AFTER_VALUE = frozenset(b" \t\r\n,}]")
_NESTING = re.compile(rb'[\[\]{}"]')


class _More(McpNotebookError):
    """The bytes end before the answer is known."""


class _NoId(McpNotebookError):
    """The start is not an object, or its id is missing or unreadable."""


def sniff_id(data: bytes) -> tuple[Outcome, Any]:
    """``("id", value)`` for a readable id (a string or an integer); ``("no-id", None)``
    when the bytes show there is none; ``("more", None)`` when they end too early."""
    try:
        return "id", _Scan(bytes(data)).id()
    except _More:
        return "more", None
    except _NoId:
        return "no-id", None


class _Scan:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def id(self) -> Any:
        self._expect(b"{")
        first = True
        while True:
            if self._peek() == b"}":
                raise _NoId
            if not first:
                self._expect(b",")
            first = False
            key = self._string()
            self._expect(b":")
            if key == b'"id"':
                return self._id_value()
            self._skip_value()

    # -- pieces ----------------------------------------------------------------------------
    def _peek(self) -> bytes:
        spaces = _SPACE.match(self.data, self.at)
        assert spaces is not None  # a run of zero or more spaces always matches
        self.at = spaces.end()
        if self.at >= len(self.data):
            raise _More
        return self.data[self.at : self.at + 1]

    def _expect(self, char: bytes) -> None:
        if self._peek() != char:
            raise _NoId
        self.at += 1

    def _string(self) -> bytes:
        if self._peek() != b'"':
            raise _NoId
        end = _STRING_REST.match(self.data, self.at + 1)
        if end is None:
            raise _More  # the closing quote has not arrived
        start, self.at = self.at, end.end()
        return self.data[start : self.at]

    def _scalar(self) -> bytes:
        found = _SCALAR.match(self.data, self.at)
        end = found.end() if found is not None else self.at
        if end < len(self.data) and found is not None and self.data[end] in _AFTER_VALUE:
            self.at = end
            return found.group()
        if _SCALAR_START.fullmatch(self.data, self.at):
            raise _More  # "12" may still be "123", "1." may be "1.5"
        raise _NoId

    def _id_value(self) -> Any:
        raw = self._string() if self._peek() == b'"' else self._scalar()
        try:
            value = jsontext.loads(raw)
        except jsontext.JsonTextError:
            raise _NoId from None  # an escape that is not JSON, a number over the digit limit
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise _NoId  # null, a fraction, a boolean: not an id MCP can answer

    def _skip_value(self) -> None:
        char = self._peek()
        if char == b'"':
            self._string()
        elif char in (b"{", b"["):
            self._skip_nested()
        else:
            self._scalar()

    def _skip_nested(self) -> None:
        depth = 0
        while True:
            found = _NESTING.search(self.data, self.at)
            if found is None:
                raise _More
            self.at = found.end()
            char = found.group()
            if char == b'"':
                self.at -= 1
                self._string()
            elif char in (b"{", b"["):
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return
