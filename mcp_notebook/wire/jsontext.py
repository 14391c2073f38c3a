"""The one JSON policy of the package: how every message is read and written.

- Strict in: UTF-8 only, no ``NaN`` / ``Infinity`` / ``-Infinity`` tokens (they are not
  JSON, RFC 8259 §6), and a value nested deeper than :data:`MAX_DEPTH` is a parse error,
  not a ``RecursionError`` that escapes a transport or breaks validation, ``repr`` or
  encoding later on (RFC 8259 §9 lets a parser limit nesting). A string holding a lone
  surrogate (``"\\udfff"``: valid JSON grammar, but no Unicode text, RFC 8259 §8.2 and
  I-JSON, RFC 7493 §2.1) is refused too (:class:`LoneSurrogate`): UTF-8 cannot carry it,
  so every reply echoing it would fail to encode, far from where it came in.
- Strict out: compact, not ASCII-escaped, and a non-finite float is refused
  (``ValueError``) rather than written as a token strict clients cannot read. A lone
  surrogate some code put in a value (a tool's result, a file name decoded with
  ``surrogateescape``) is written as U+FFFD, the replacement character: the message still
  goes out, as valid UTF-8, and only that character is lost.

Every transport, framer and stream encodes through :func:`dumps` / :func:`dumps_text` and
decodes through :func:`loads`, so one policy holds everywhere.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

from ..errors import McpNotebookError

# No MCP message needs more; deeper values would exhaust the recursion limit of whatever
# walks them next (validators, repr, the encoder), far from where they came in.
MAX_DEPTH = 128
_TOO_DEEP = f"nested too deeply (the limit is {MAX_DEPTH} levels)"


class JsonTextError(McpNotebookError, ValueError):
    """The bytes are not strict UTF-8 JSON; the message says why (for a -32700 reply)."""


class LoneSurrogate(JsonTextError):
    """The text is JSON but a string in it holds a lone surrogate (answer -32600).

    ``request_id`` is the message's id when that id is one a reply can carry (a string
    without a lone surrogate, or an integer), else None: the reply then has no id.
    """

    def __init__(self, reason: str, request_id: Any = None) -> None:
        super().__init__(reason)
        self.request_id = request_id


def _refuse_constant(name: str) -> Any:
    raise JsonTextError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e999 would sneak an Infinity in
        raise JsonTextError(f"number {text[:40]} is out of range")
    return value


# Decoded text holds a surrogate only from a \uD800-\uDFFF escape (strict UTF-8 has none), so
# only a text with such an escape is walked; a pair of them decodes to one character.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")

# Built once: json.loads with a hook would build a decoder per call.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite_float)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads(data: bytes | bytearray | str) -> Any:
    """Decode one JSON text; raise :class:`JsonTextError` for anything that is not one."""
    try:
        text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        value = _DECODER.decode(text)
    except UnicodeDecodeError as exc:
        raise JsonTextError(f"not valid UTF-8: {exc}") from None
    except RecursionError:
        raise JsonTextError(_TOO_DEEP) from None
    except JsonTextError:
        raise
    except json.JSONDecodeError as exc:
        raise JsonTextError(str(exc)) from None
    except ValueError as exc:  # an integer over Python's digit limit: say so in JSON's words
        raise JsonTextError(_too_many_digits(exc)) from None
    # Depth is at most the number of opening brackets: most messages need no walk.
    if text.count("[") + text.count("{") > MAX_DEPTH and _too_deep(value):
        raise JsonTextError(_TOO_DEEP)
    # The first backslash is a memchr away; the regex reads on from there (about 0.5 ns a
    # character), so a text without one costs nothing more.
    first = text.find("\\")
    if first >= 0 and _SURROGATE_ESCAPE.search(text, first):
        _refuse_lone_surrogates(value)
    return value


def _too_many_digits(exc: ValueError) -> str:
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    if "digits" in str(exc):
        return f"a number has more than {limit} digits, more than this server handles"
    return str(exc)


def _refuse_lone_surrogates(value: Any) -> None:
    """Raise :class:`LoneSurrogate` naming where one is (in a string or a key)."""
    pending: list[tuple[Any, str]] = [(value, "$")]
    while pending:
        item, where = pending.pop()
        what = "a string"
        if type(item) is str:
            found = _SURROGATE.search(item)
        elif type(item) is dict:
            found, what = next(filter(None, map(_SURROGATE.search, item)), None), "a key"
            pending.extend((child, f"{where}.{key}") for key, child in item.items())
        elif type(item) is list:
            pending.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
            continue
        else:
            continue
        if found is not None:
            reason = (
                f"{what} at {_printable(where)} holds a lone surrogate "
                f"(U+{ord(found.group()):04X}), which is not Unicode text and cannot be sent back"
            )
            raise LoneSurrogate(reason, _reply_id(value))


def _printable(text: str) -> str:
    """``text`` with its surrogates escaped, so the reason itself can be encoded."""
    shown = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _reply_id(message: Any) -> Any:
    """The id a reply to ``message`` may echo (as ``protocol.jsonrpc.readable_id``, and
    never one holding a surrogate)."""
    request_id = message.get("id") if type(message) is dict else None
    if type(request_id) is str:
        return None if _SURROGATE.search(request_id) else request_id
    return request_id if type(request_id) is int else None


def _too_deep(value: Any) -> bool:
    """Whether ``value`` nests deeper than MAX_DEPTH: a walk, level by level, over its
    containers only (exact types: the decoder makes nothing else)."""
    level = [value] if type(value) in (dict, list) else []
    for _ in range(MAX_DEPTH):
        deeper = []
        for item in level:
            for child in item.values() if type(item) is dict else item:
                if type(child) is dict or type(child) is list:
                    deeper.append(child)
        if not deeper:
            return False
        level = deeper
    return True


def dumps_text(value: Any) -> str:
    """Encode compactly; ``ValueError`` for NaN/Infinity, a cycle, or too deep a value."""
    try:
        return _ENCODER.encode(value)
    except RecursionError:
        raise ValueError("value nested too deeply to encode as JSON") from None
    except ValueError as exc:  # NaN or inf, a cycle, or an integer past the digit limit
        raise ValueError(_too_many_digits(exc)) from None


def dumps(value: Any) -> bytes:
    """UTF-8 JSON; a lone surrogate in a string is written as U+FFFD (see above)."""
    text = dumps_text(value)
    try:
        return text.encode()
    except UnicodeEncodeError:  # rare: the fast path above costs nothing extra
        return _replaced(text).encode()


def sendable(text: str) -> str:
    """``text`` as UTF-8 can carry it (to a widget, say): each lone surrogate U+FFFD."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return _replaced(text)
    return text


def _replaced(text: str) -> str:
    """Join surrogate pairs into their character, and make each lone one U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
