"""Wait for a condition, not for a time: poll it until it holds or a deadline passes."""

from __future__ import annotations

import asyncio
import inspect
import queue
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

Item = TypeVar("Item")

# Deadlines are generous (a shared 2-core CI machine); a condition met returns at once.
DEADLINE = 30.0


def _checked(value: Any, what: str) -> Any:
    """A condition's value; a coroutine is refused: it is always true, and never ran."""
    if inspect.isawaitable(value):
        if inspect.iscoroutine(value):
            value.close()  # no "never awaited" warning on top of the error
        raise TypeError(
            f"the condition for {what!r} returned an awaitable, which is always true: "
            "use until_async for an async check"
        )
    return value


def wait_until(condition: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
    """Return ``condition()``'s first truthy value; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while not (value := _checked(condition(), what)):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.02)
    return value


async def until(condition: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
    """:func:`wait_until` for a coroutine: the loop keeps running while it waits."""
    deadline = time.monotonic() + timeout
    while not (value := _checked(condition(), what)):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        await asyncio.sleep(0.02)
    return value


async def until_async(
    condition: Callable[[], Awaitable[Any]], what: str, timeout: float = DEADLINE
) -> Any:
    """:func:`until` for an async check: ``await condition()`` until it is truthy."""
    deadline = time.monotonic() + timeout
    while not (value := await condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        await asyncio.sleep(0.02)
    return value


def read_until(
    read: Callable[[float], Item],
    found: Callable[[Item], Any],
    what: str,
    timeout: float = DEADLINE,
) -> Item:
    """Read items until one is ``found``; that item. ``read(seconds)`` blocks at most that
    long and raises :class:`queue.Empty` when nothing came (jupyter_client's channels, a
    ``queue.Queue``'s ``get``); items that are not found are dropped. Fail naming ``what``
    at the deadline."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            item = read(min(left, 1.0))
        except queue.Empty:
            continue
        if _checked(found(item), what):
            return item
    raise AssertionError(f"not within {timeout:g} s: {what}")


# A kernel expression: the number of handshake-era sessions whose GET stream is open
# (where change notifications go). Evaluated with ``kernel.eval``.
OPEN_GET_STREAMS = "sum('g' in streams for streams in mcp._transport.streams.values())"
