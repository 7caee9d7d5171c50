"""``all_or_none``: when one call fails, no other is left running after the failure is raised."""

from __future__ import annotations

import asyncio

import pytest

from app.services.work import all_or_none


async def test_results_in_order_when_every_call_succeeds() -> None:
    async def value(v: int, pause: float) -> int:
        await asyncio.sleep(pause)
        return v

    assert await all_or_none(value(1, 0.02), value(2, 0), value(3, 0.01)) == [1, 2, 3]


async def test_a_failure_cancels_and_waits_for_the_others_before_it_is_raised() -> None:
    finished: list[str] = []

    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("throttled")

    async def slow(name: str) -> None:
        try:
            await asyncio.sleep(10)
        finally:
            finished.append(name)  # runs on cancellation too

    with pytest.raises(ValueError, match="throttled"):
        await all_or_none(slow("a"), fails(), slow("b"))
    # Both were cancelled and had finished by the time the failure reached the caller.
    assert sorted(finished) == ["a", "b"]
    assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
