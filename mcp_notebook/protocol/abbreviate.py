"""Cheap size estimates of JSON-like values, and abbreviated copies of big ones.

The call history keeps what clients sent and what tools returned; this bounds it. Sizes
are estimates of the JSON text (a string counts its length, a number 8, every item of a
list or object 8 more), not of Python's memory, and the walk stops as soon as it passes
the limit it was given: estimating a 20 MB result costs as little as estimating a small one.

The rule of an abbreviated copy (``abbreviate(value, budget)``):

- a string longer than its share of the budget keeps its beginning and ends with a marker
  saying how long it was: ``"xxxx… [cut: 4194304 characters]"``; base64 payloads (the
  values of ``data`` and ``blob`` keys) are replaced by the marker whole, as half an image
  is no image;
- bytes become such a marker;
- a list or object keeps its first items while the budget lasts, each abbreviated in turn;
  the rest are replaced by one last item, ``"… [cut: 1000 more items]"`` (in an object, under
  the key ``"…"``);
- deeper than ``MAX_DEPTH`` levels, a value is replaced by a marker;
- anything else (numbers, booleans, None) is kept as it is, other objects as a short repr.

A copy is never the original object: what the user function got stays untouched.
"""

from __future__ import annotations

import itertools
from typing import Any

CUT = "… [cut: "  # every marker starts with this
MAX_DEPTH = 32
_ITEM = 8  # the estimated overhead of one list item or object member
_BASE64_KEYS = frozenset({"data", "blob"})
_REPR = 200  # characters of an unknown object's repr kept in a copy
_SMALL = 64  # bytes reserved for each later item of a list or object being cut
_MARKER = len(CUT) + 24  # room for a marker
_SCALARS = frozenset({int, float, bool, type(None)})


def estimate(value: Any, limit: int) -> int:
    """The estimated JSON size of ``value``; once past ``limit``, any number above it."""
    return _size(value, limit, 0)


def _size(value: Any, limit: int, depth: int) -> int:
    # Hot: runs for every call's arguments and result. Scalars inside containers are
    # counted inline, without a call each.
    kind = type(value)
    if kind is str:
        return len(value) + 2
    if kind is dict or kind is list or kind is tuple or isinstance(value, (dict, list, tuple)):
        total = 2
        if depth > MAX_DEPTH:
            return total
        if isinstance(value, dict):
            for key, item in value.items():
                total += _ITEM + (len(key) if type(key) is str else 8)
                kind = type(item)
                if kind is str:
                    total += len(item) + 2
                elif kind in _SCALARS:
                    total += 8
                else:
                    total += _size(item, limit - total, depth + 1)
                if total > limit:
                    return total
            return total
        for item in value:
            kind = type(item)
            if kind is str:
                total += _ITEM + len(item) + 2
            elif kind in _SCALARS:
                total += _ITEM + 8
            else:
                total += _ITEM + _size(item, limit - total, depth + 1)
            if total > limit:
                return total
        return total
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, (bytes, bytearray, memoryview)):
        return len(value)
    return 8


def is_cut(value: Any) -> bool:
    """Whether ``value`` is (or ends with) a marker of an abbreviated copy."""
    return isinstance(value, str) and CUT in value[-80:]


def abbreviate(value: Any, budget: int) -> Any:
    """A copy of ``value`` of about ``budget`` bytes at most (see the module's rule)."""
    return _cut(value, max(budget, 0), 0, None)[0]


def _marker(what: str) -> str:
    return f"{CUT}{what}]"


def _cut(value: Any, budget: int, depth: int, key: Any) -> tuple[Any, int]:
    """(copy, its estimated size)."""
    if isinstance(value, str):
        if len(value) + 2 <= budget:
            return value, len(value) + 2
        # Cut again, a copy keeps the first marker: it tells the original length.
        marker = (
            value[value.rindex(CUT) :] if is_cut(value) else _marker(f"{len(value)} characters")
        )
        keep = 0 if key in _BASE64_KEYS else max(budget - len(marker) - 2, 0)
        keep = min(keep, len(value) - len(marker)) if is_cut(value) else keep
        text = value[:keep] + marker
        return text, len(text) + 2
    if isinstance(value, (bytes, bytearray, memoryview)):
        marker = _marker(f"{len(value)} bytes")
        return marker, len(marker) + 2
    if depth > MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        marker = _marker(f"{type(value).__name__} nested too deep")
        return marker, len(marker) + 2
    if isinstance(value, dict):
        return _cut_dict(value, budget, depth)
    if isinstance(value, (list, tuple)):
        return _cut_list(value, budget, depth)
    if value is None or isinstance(value, (bool, int, float)):
        return value, 8
    text = repr(value)
    if len(text) > _REPR:
        text = text[:_REPR] + _marker(f"{len(text)} characters")
    return text, len(text) + 2


def _cut_dict(value: dict[Any, Any], budget: int, depth: int) -> tuple[Any, int]:
    pairs = []
    for key, item in itertools.islice(value.items(), max(budget // _ITEM, 1)):
        if isinstance(key, str) and len(key) > _REPR:
            key = key[:_REPR] + _marker(f"{len(key)} characters")
        pairs.append((key, item))
    kept, used = _cut_items(pairs, len(value), budget, depth)
    return dict(kept), used


def _cut_list(value: list[Any] | tuple[Any, ...], budget: int, depth: int) -> tuple[Any, int]:
    pairs = [(None, item) for item in itertools.islice(value, max(budget // _ITEM, 1))]
    kept, used = _cut_items(pairs, len(value), budget, depth)
    return [item for _, item in kept], used


def _cut_items(
    pairs: list[tuple[Any, Any]], count: int, budget: int, depth: int
) -> tuple[list[tuple[Any, Any]], int]:
    """Items in order while the budget lasts. Each later item has a small share reserved,
    so that one big item does not crowd out the small ones after it (``isError``...)."""

    def overhead(key: Any) -> int:
        return _ITEM + (0 if key is None else len(key) if isinstance(key, str) else 8)

    reserved: list[int] = []
    later = _MARKER  # room for saying what is left out
    for key, item in pairs:  # shares only for the items that all fit in the budget
        share = overhead(key) + min(_size(item, _SMALL, depth + 1), _SMALL)
        if 2 + later + share > budget:  # 2: the brackets
            break
        reserved.append(share)
        later += share
    if len(reserved) == len(pairs) == count:
        later -= _MARKER
    pairs = pairs[: max(len(reserved), 1)]
    reserved = reserved or [0]
    kept: list[tuple[Any, Any]] = []
    used = 2
    for index, (key, item) in enumerate(pairs):
        later -= reserved[index]
        room = budget - used - later - overhead(key)
        if room < _MARKER and _size(item, room, depth + 1) > room:
            # Not even a marker would fit: say what is left out, and stop.
            return _left_out(kept, used, count - index, pairs[0][0] is not None)
        copy, size = _cut(item, room, depth + 1, key)
        kept.append((key, copy))
        used += overhead(key) + size
    if len(pairs) < count:
        return _left_out(kept, used, count - len(pairs), pairs[0][0] is not None)
    return kept, used


def _left_out(
    kept: list[tuple[Any, Any]], used: int, left: int, keyed: bool
) -> tuple[list[tuple[Any, Any]], int]:
    rest = _marker(f"{left} more items")
    kept.append(("…" if keyed else None, rest))
    return kept, used + _ITEM + len(rest) + 4
