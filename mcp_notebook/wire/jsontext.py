"""The one JSON policy of the package: how every message is read and written.

- Strict in: UTF-8 only, no ``NaN`` / ``Infinity`` / ``-Infinity`` tokens (they are not
  JSON, RFC 8259 §6), and a value nested deeper than :data:`MAX_DEPTH` is a parse error,
  not a ``RecursionError`` that escapes a transport or breaks validation, ``repr`` or
  encoding later on (RFC 8259 §9 lets a parser limit nesting).
- Strict out: compact, not ASCII-escaped, and a non-finite float is refused
  (``ValueError``) rather than written as a token strict clients cannot read.

Every transport, framer and stream encodes through :func:`dumps` / :func:`dumps_text` and
decodes through :func:`loads`, so one policy holds everywhere.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import McpNotebookError

# No MCP message needs more; deeper values would exhaust the recursion limit of whatever
# walks them next (validators, repr, the encoder), far from where they came in.
MAX_DEPTH = 128
_TOO_DEEP = f"nested too deeply (the limit is {MAX_DEPTH} levels)"


class JsonTextError(McpNotebookError, ValueError):
    """The bytes are not strict UTF-8 JSON; the message says why (for a -32700 reply)."""


def _refuse_constant(name: str) -> Any:
    raise JsonTextError(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e999 would sneak an Infinity in
        raise JsonTextError(f"number {text[:40]} is out of range")
    return value


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
    except ValueError as exc:  # JSONDecodeError, and an integer over the digit limit
        raise JsonTextError(str(exc)) from None
    # Depth is at most the number of opening brackets: most messages need no walk.
    if text.count("[") + text.count("{") > MAX_DEPTH and _too_deep(value):
        raise JsonTextError(_TOO_DEEP)
    return value


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


def dumps(value: Any) -> bytes:
    return dumps_text(value).encode()
