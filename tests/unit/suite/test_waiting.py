"""The tests' one way to wait for a condition refuses a check that cannot be true or false."""

from __future__ import annotations

import queue

import pytest

from tests.waiting import read_until, until, until_async, wait_until


async def test_an_async_check_given_to_until_is_refused_not_taken_as_true():
    async def never() -> bool:
        return False

    with pytest.raises(TypeError, match="awaitable"):
        await until(never, "an async check")
    with pytest.raises(TypeError, match="awaitable"):
        wait_until(never, "an async check")


async def test_until_async_awaits_the_check_and_fails_at_its_deadline():
    seen = []

    async def third_time() -> int | None:
        seen.append(1)
        return len(seen) if len(seen) >= 3 else None

    assert await until_async(third_time, "the third look") == 3

    async def never() -> bool:
        return False

    with pytest.raises(AssertionError, match="not within"):
        await until_async(never, "never", timeout=0.05)


def test_read_until_skips_what_is_not_found_and_fails_at_its_deadline():
    items: queue.Queue[int] = queue.Queue()
    for n in (1, 2, 3):
        items.put(n)
    take = lambda seconds: items.get(timeout=seconds)  # noqa: E731
    assert read_until(take, lambda n: n >= 2, "a number from 2") == 2
    assert items.get_nowait() == 3  # what came after the one found is left to read
    with pytest.raises(AssertionError, match=r"not within 0\.05 s: a number"):
        read_until(take, lambda n: True, "a number", timeout=0.05)
    with pytest.raises(TypeError, match="awaitable"):
        items.put(4)

        async def found(n: int) -> bool:
            return True

        read_until(take, found, "an async check")
