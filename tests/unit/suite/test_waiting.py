"""The tests' one way to wait for a condition refuses a check that cannot be true or false."""

from __future__ import annotations

import pytest

from tests.waiting import until, until_async, wait_until


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
