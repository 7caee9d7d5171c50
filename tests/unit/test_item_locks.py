"""Item locks: one process never holds one counter item twice at once, and picks shards in an
order of its own that moves on after a conflict."""

from __future__ import annotations

import asyncio
import random
from typing import Any, cast

import pytest

from app.domain.models import CounterDelta
from app.store.counters import CounterItems
from app.store.item_locks import ItemLocks

SHARDS = ["c0", "c1", "c2", "c3"]


async def test_holders_of_one_item_take_turns_and_others_do_not_wait() -> None:
    locks = ItemLocks()
    order: list[str] = []

    async def hold(name: str, items: list[str], pause: float) -> None:
        async with locks.holding(items):
            order.append(f"{name} in")
            await asyncio.sleep(pause)
            order.append(f"{name} out")

    await asyncio.gather(hold("a", ["x", "y"], 0.05), hold("b", ["y"], 0), hold("c", ["z"], 0))
    assert order.index("a out") < order.index("b in")  # b shares y with a: it waited
    assert order.index("c in") < order.index("a out")  # c shares nothing: it did not
    async with asyncio.timeout(0.05), locks.holding(["x", "y"]):  # both free again at once
        pass


async def test_opposite_orders_cannot_deadlock() -> None:
    locks = ItemLocks()

    async def hold(items: list[str]) -> None:
        async with locks.holding(items):
            await asyncio.sleep(0.01)

    await asyncio.wait_for(asyncio.gather(hold(["p", "q"]), hold(["q", "p"])), timeout=2)


def _share(locks: ItemLocks, shards: list[str] = SHARDS) -> set[str]:
    """The shards this process picks from: each is picked when every other one is busy."""
    picked = set()
    for shard in shards:
        locks._held = {other: (asyncio.Lock(), 1) for other in shards if other != shard}
        if locks.pick_free(shards) == shard:
            picked.add(shard)
    locks._held = {}
    return picked


async def test_a_process_picks_from_its_own_half_of_the_shards_in_its_own_order() -> None:
    locks = ItemLocks()
    first = locks.pick_free(SHARDS)
    async with locks.holding([first]):
        second = locks.pick_free(SHARDS)
        assert SHARDS.index(second) == (SHARDS.index(first) + 1) % len(SHARDS)
        async with locks.holding([second]):
            # Its whole share is busy: it queues on its share rather than spread to the others.
            assert locks.pick_free(SHARDS) in {first, second}
    assert locks.pick_free(SHARDS) == first
    assert _share(locks) == {first, second}


class _Coin(random.Random):
    """A random source whose coin always says "move" (its other draws are a seeded Random's)."""

    def random(self) -> float:
        return 0.99


def test_a_conflict_moves_the_share_off_the_item_and_is_answered_once() -> None:
    locks = ItemLocks(_Coin(1))
    first = locks.pick_free(SHARDS)
    second = SHARDS[(SHARDS.index(first) + 1) % 4]
    planned = locks.epoch
    locks.avoid(SHARDS, first, planned_in=planned)
    assert first not in _share(locks)
    assert second in _share(locks)
    moved = _share(locks)
    # Other transactions planned before the answer come back cancelled on that item, or on the
    # other one the share held: the answer covered them.
    locks.avoid(SHARDS, first, planned_in=planned)
    locks.avoid(SHARDS, second, planned_in=planned)
    assert _share(locks) == moved


def test_half_of_the_answers_stay_put() -> None:
    rng = random.Random(7)
    moved = 0
    for _ in range(400):
        locks = ItemLocks(rng)
        before = _share(locks)
        locks.avoid(SHARDS, sorted(before)[0], planned_in=locks.epoch)
        moved += _share(locks) != before
        assert locks.epoch == 1  # answered, either way
    assert 150 < moved < 250


def _answers_until_apart(count: int, offset: int, both: float, rng: random.Random) -> int:
    """Two processes, ``offset`` apart, meeting again and again: each time on a shard both shares
    hold, and with chance ``both`` both are cancelled there (each on a transaction of its own),
    else one of the two (DynamoDB cancels whichever came second)."""
    shards = [f"c{i}" for i in range(count)]
    a, b = ItemLocks(rng), ItemLocks(rng)
    a._rotation, b._rotation = 5, 5 + offset
    meetings = 0
    while shared := sorted(_share(a, shards) & _share(b, shards)):
        item = rng.choice(shared)
        for cancelled in [a, b] if rng.random() < both else [rng.choice([a, b])]:
            cancelled.avoid(shards, item, planned_in=cancelled.epoch)
        meetings += 1
        if meetings > 200:
            break
    return meetings


@pytest.mark.parametrize("count", [2, 3, 4, 5, 6, 8, 12, 16])
@pytest.mark.parametrize("both", [0.0, 0.5, 1.0])
def test_two_processes_part_ways_even_when_both_are_cancelled_each_time(
    count: int, both: float
) -> None:
    """Without the coin, two tasks both cancelled on a shard would trade places for ever (on 4
    shards, each steps to where the other was); with it they part after a few meetings."""
    rng = random.Random(count * 10 + int(both * 2))
    runs = sorted(
        _answers_until_apart(count, offset, both, rng) for offset in range(count) for _ in range(30)
    )
    assert runs[-1] <= 60
    assert sum(runs) / len(runs) <= 6


async def test_when_the_whole_share_is_busy_the_least_queued_of_it_is_chosen() -> None:
    locks = ItemLocks()
    first = locks.pick_free(SHARDS)
    second = SHARDS[(SHARDS.index(first) + 1) % 4]
    release = asyncio.Event()

    async def hold(item: str) -> None:
        async with locks.holding([item]):
            await release.wait()

    tasks = [asyncio.create_task(hold(s)) for s in [first, first, second]]
    await asyncio.sleep(0)
    assert locks.pick_free(SHARDS) == second
    release.set()
    await asyncio.gather(*tasks)


@pytest.mark.parametrize(
    ("reason", "moves"),
    [
        ("TransactionConflict", True),
        ("ThrottlingError", True),
        ("ProvisionedThroughputExceeded", True),
        ("ConditionalCheckFailed", False),
        (None, False),
    ],
)
def test_a_coarse_counter_conflicted_or_throttled_moves_the_share_off_it(
    reason: str | None, moves: bool
) -> None:
    """A throttle on a coarse counter's key says what a conflict there says: another task takes
    that key too, or this one alone is too busy for one key; either way the share moves on."""
    counters = CounterItems(cast("Any", None), table="t", shards=4, locks=ItemLocks(_Coin(1)))
    planned = counters.changes("b", [CounterDelta(3, 0, 1)], expires_at=None)
    coarse = next(item for item in planned.items if item in planned.shard_choices)
    before = counters.changes("b", [CounterDelta(3, 0, 1)], expires_at=None).items
    counters.after_cancel(planned, [reason if item == coarse else None for item in planned.items])
    after = counters.changes("b", [CounterDelta(3, 0, 1)], expires_at=None).items
    assert (coarse in after) is not moves
    assert (after == before) is not moves
