"""A task lets in at most so many submissions to one board at once (per shard); one more waits a
moment for a place, then is refused, and every place taken is given back."""

from __future__ import annotations

import asyncio

import pytest

from app.errors import BoardBusy
from app.services.submissions.admission import BoardAdmission
from app.telemetry import REGISTRY


def waits(outcome: str) -> float:
    """The task's count of submissions that found a board full, by outcome (``/metrics``)."""
    found = REGISTRY.get_sample_value(
        "leaderboard_board_admission_waits_total", {"outcome": outcome}
    )
    return found or 0.0


async def test_a_board_lets_in_its_places_and_the_next_one_waits_then_is_refused() -> None:
    admission = BoardAdmission(per_shard=2, wait_s=0.05)
    release = asyncio.Event()
    inside = 0

    async def hold() -> None:
        nonlocal inside
        async with admission.admitted(["b"], shards=1):
            inside += 1
            await release.wait()

    holders = [asyncio.create_task(hold()) for _ in range(2)]
    await asyncio.sleep(0.01)
    assert inside == 2
    waited, refused = waits("waited"), waits("refused")
    with pytest.raises(BoardBusy, match="board b has all the submissions"):
        async with admission.admitted(["b"], shards=1):
            pass
    assert (waits("waited"), waits("refused")) == (waited + 1, refused + 1)
    async with admission.admitted(["other"], shards=1):  # another board: not held back
        assert admission.in_flight("other") == 1
    release.set()
    await asyncio.gather(*holders)
    assert admission.in_flight("b") == 0  # every place given back, the board forgotten


async def test_one_that_waits_gets_a_place_freed_in_time() -> None:
    admission = BoardAdmission(per_shard=1, wait_s=1.0)
    order: list[str] = []

    async def first() -> None:
        async with admission.admitted(["b"], shards=1):
            order.append("first in")
            await asyncio.sleep(0.05)
        order.append("first out")

    task = asyncio.create_task(first())
    await asyncio.sleep(0.01)
    async with admission.admitted(["b"], shards=1):
        order.append("second in")
    await task
    assert order == ["first in", "first out", "second in"]


async def test_a_sharded_board_lets_in_its_places_times_its_shards() -> None:
    admission = BoardAdmission(per_shard=2, wait_s=0)
    async with admission.admitted(["b"], shards=4):
        entered = [admission.admitted(["b"], shards=4) for _ in range(7)]
        for gate in entered:
            await gate.__aenter__()
        with pytest.raises(BoardBusy):
            async with admission.admitted(["b"], shards=4):
                pass
        for gate in entered:
            await gate.__aexit__(None, None, None)


async def test_a_refusal_on_a_later_board_gives_back_the_places_taken() -> None:
    admission = BoardAdmission(per_shard=1, wait_s=0)
    async with admission.admitted(["week"], shards=1):
        with pytest.raises(BoardBusy):
            async with admission.admitted(["alltime", "week"], shards=1):
                pass
        assert admission.in_flight("alltime") == 0
        async with admission.admitted(["alltime"], shards=1):  # free again at once
            pass


async def test_no_limit_lets_everything_in() -> None:
    admission = BoardAdmission(per_shard=0, wait_s=0)
    async with admission.admitted(["b"], shards=1), admission.admitted(["b"], shards=1):
        assert admission.in_flight("b") == 0
