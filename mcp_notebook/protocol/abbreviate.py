"""Cheap size estimates of JSON-like values, and abbreviated copies of big ones.

The call history keeps what clients sent and what tools returned; this bounds it. Sizes
are estimates of what the value takes in Python's memory, like ``sys.getsizeof`` summed
over its parts (a string 49 bytes and one per character, an int or a float 32, a list 72
and 8 per item, a dict 136 and 32 per entry; keys count their characters only, as parsed
JSON shares them), not of its JSON text, which is often 6 times smaller. The walk stops as
soon as it passes the limit it was given: estimating a 20 MB result costs as little as
estimating a small one. A value nested deeper than ``MAX_DEPTH`` counts as too big.

The rule of an abbreviated copy (``abbreviate(value, budget)``):

- a string longer than its share of the budget keeps its beginning and ends with a marker
  saying how long it was: ``"xxxx… [cut: 4194304 characters]"``; base64 payloads (the
  values of ``data`` and ``blob`` keys) are replaced by the marker whole, as half an image
  is no image;
- bytes become such a marker;
- a list or object keeps its first items while the budget lasts, each abbreviated in turn;
  the rest are replaced by one last item, ``"… [cut: 1000 more items]"`` (in an object, under
  the key ``"…"``);
- deeper than ``MAX_DEPTH`` levels, a list or object is replaced by a marker;
- anything else (numbers, booleans, None) is kept as it is, other objects as a short repr.

A copy is never the original object: what the user function got stays untouched.
"""

from __future__ import annotations

import itertools
from typing import Any

CUT = "… [cut: "  # every marker starts with this
MAX_DEPTH = 32
# Costs in bytes, after sys.getsizeof on CPython 3.11-3.13 (64-bit), plus what the
# allocator adds: 16-byte blocks, and 16 bytes of garbage collector header for a list or dict.
_STR = 49  # a str, besides its characters
_BYTES = 33  # bytes, besides its content
_LIST = 72  # a list or tuple, besides its items
_SLOT = 8  # an item of a list: a pointer
_DICT = 136  # a dict, besides its entries (184 bytes with up to five, and the header)
_ENTRY = 32  # an entry of a dict: hash, key and value pointers, index
_OBJECT = 64  # anything else
_SCALAR = {int: 32, float: 32, bool: 0, type(None): 0}  # True, False and None are shared
_BASE64_KEYS = frozenset({"data", "blob"})
_REPR = 200  # characters of an unknown object's repr kept in a copy
_SMALL = 256  # bytes reserved for each later item of a list or object being cut
_MARKER = _ENTRY + _STR + len(CUT) + 24  # room for a marker


def estimate(value: Any, limit: int) -> int:
    """The estimated size of ``value`` in bytes; once past ``limit``, any number above it."""
    return _size(value, limit, 0)


def _size(value: Any, limit: int, depth: int) -> int:
    # Hot: runs for every call's arguments and result. Scalars inside containers are
    # counted inline, without a call each.
    kind = type(value)
    if kind is str:
        return _STR + len(value)
    cost = _SCALAR.get(kind)
    if cost is not None:
        return cost
    if kind is dict or kind is list or kind is tuple or isinstance(value, (dict, list, tuple)):
        if depth > MAX_DEPTH:
            return limit + 1  # too deep to keep: the copy has a marker instead
        if isinstance(value, dict):
            total = _DICT
            for key, item in value.items():
                total += _ENTRY + (len(key) if type(key) is str else _OBJECT)
                kind = type(item)
                if kind is str:
                    total += _STR + len(item)
                else:
                    cost = _SCALAR.get(kind)
                    total += _size(item, limit - total, depth + 1) if cost is None else cost
                if total > limit:
                    return total
            return total
        total = _LIST
        for item in value:
            kind = type(item)
            if kind is str:
                total += _SLOT + _STR + len(item)
            else:
                cost = _SCALAR.get(kind)
                total += _SLOT + (_size(item, limit - total, depth + 1) if cost is None else cost)
            if total > limit:
                return total
        return total
    if isinstance(value, str):
        return _STR + len(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return _BYTES + len(value)
    return _OBJECT


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
        if _STR + len(value) <= budget:
            return value, _STR + len(value)
        # Cut again, a copy keeps the first marker: it tells the original length.
        marker = (
            value[value.rindex(CUT) :] if is_cut(value) else _marker(f"{len(value)} characters")
        )
        keep = 0 if key in _BASE64_KEYS else max(budget - len(marker) - _STR, 0)
        keep = min(keep, len(value) - len(marker)) if is_cut(value) else keep
        text = value[:keep] + marker
        return text, _STR + len(text)
    if isinstance(value, (bytes, bytearray, memoryview)):
        marker = _marker(f"{len(value)} bytes")
        return marker, _STR + len(marker)
    if depth > MAX_DEPTH and isinstance(value, (dict, list, tuple)):
        marker = _marker(f"{type(value).__name__} nested too deep")
        return marker, _STR + len(marker)
    if isinstance(value, dict):
        return _cut_dict(value, budget, depth)
    if isinstance(value, (list, tuple)):
        return _cut_list(value, budget, depth)
    if value is None or isinstance(value, (bool, int, float)):
        return value, _size(value, budget, depth)
    text = repr(value)
    if len(text) > _REPR:
        text = text[:_REPR] + _marker(f"{len(text)} characters")
    return text, _STR + len(text)


def _cut_dict(value: dict[Any, Any], budget: int, depth: int) -> tuple[Any, int]:
    pairs = []
    for key, item in itertools.islice(value.items(), max(budget // _ENTRY, 1)):
        if isinstance(key, str) and len(key) > _REPR:
            key = key[:_REPR] + _marker(f"{len(key)} characters")
        pairs.append((key, item))
    kept, used = _cut_items(pairs, len(value), budget, depth, _DICT)
    return dict(kept), used


def _cut_list(value: list[Any] | tuple[Any, ...], budget: int, depth: int) -> tuple[Any, int]:
    pairs = [(None, item) for item in itertools.islice(value, max(budget // _SLOT, 1))]
    kept, used = _cut_items(pairs, len(value), budget, depth, _LIST)
    return [item for _, item in kept], used


def _overhead(key: Any) -> int:
    if key is None:
        return _SLOT
    return _ENTRY + (len(key) if isinstance(key, str) else _OBJECT)


def _cut_items(
    pairs: list[tuple[Any, Any]], count: int, budget: int, depth: int, base: int
) -> tuple[list[tuple[Any, Any]], int]:
    """Items in order while the budget lasts. Each later item has a small share reserved,
    so that one big item does not crowd out the small ones after it (``isError``...)."""
    reserved: list[int] = []
    later = _MARKER  # room for saying what is left out
    for key, item in pairs:  # shares only for the items that all fit in the budget
        share = _overhead(key) + min(_size(item, _SMALL, depth + 1), _SMALL)
        if base + later + share > budget:
            break
        reserved.append(share)
        later += share
    if len(reserved) == len(pairs) == count:
        later -= _MARKER
    pairs = pairs[: max(len(reserved), 1)]
    reserved = reserved or [0]
    kept: list[tuple[Any, Any]] = []
    used = base
    for index, (key, item) in enumerate(pairs):
        later -= reserved[index]
        room = budget - used - later - _overhead(key)
        if room < _MARKER and _size(item, room, depth + 1) > room:
            # Not even a marker would fit: say what is left out, and stop.
            return _left_out(kept, used, count - index, pairs[0][0] is not None)
        copy, size = _cut(item, room, depth + 1, key)
        kept.append((key, copy))
        used += _overhead(key) + size
    if len(pairs) < count:
        return _left_out(kept, used, count - len(pairs), pairs[0][0] is not None)
    return kept, used


def _left_out(
    kept: list[tuple[Any, Any]], used: int, left: int, keyed: bool
) -> tuple[list[tuple[Any, Any]], int]:
    rest = _marker(f"{left} more items")
    key = "…" if keyed else None
    kept.append((key, rest))
    return kept, used + _overhead(key) + _STR + len(rest)
