"""Item locks: one process never holds one counter item twice at once, and picks shards in an
order of its own that moves on after a conflict."""

from __future__ import annotations

import asyncio
import random

import pytest

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
    assert not locks.in_use("x")
    assert not locks.in_use("y")


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


async def test_a_conflict_moves_the_share_off_the_item_and_a_run_of_them_moves_it_once() -> None:
    locks = ItemLocks()
    first, second = (locks.pick_free(SHARDS), None)
    second = SHARDS[(SHARDS.index(first) + 1) % 4]
    locks.avoid(SHARDS, first)
    assert first not in _share(locks)
    assert second in _share(locks)
    moved = _share(locks)
    locks.avoid(SHARDS, first)  # a second transaction cancelled on the same item
    assert _share(locks) == moved


def _conflicts_until_apart(count: int, offset: int, rng: random.Random) -> int:
    """Two processes, ``offset`` apart: each conflict falls on a shard both shares hold, and
    either of the two is the one cancelled (DynamoDB cancels whichever came second)."""
    shards = [f"c{i}" for i in range(count)]
    a, b = ItemLocks(), ItemLocks()
    a._rotation, b._rotation = 5, 5 + offset
    conflicts = 0
    while shared := sorted(_share(a, shards) & _share(b, shards)):
        rng.choice([a, b]).avoid(shards, rng.choice(shared))
        conflicts += 1
        if conflicts > 100:
            break
    return conflicts


def test_with_four_shards_two_processes_are_apart_after_at_most_two_conflicts() -> None:
    rng = random.Random(4)
    for offset in range(4):
        for _ in range(50):
            assert _conflicts_until_apart(4, offset, rng) <= 2


@pytest.mark.parametrize("count", [2, 3, 5, 6, 8, 12, 16])
def test_with_other_shard_counts_two_processes_part_ways(count: int) -> None:
    rng = random.Random(count)
    runs = [
        _conflicts_until_apart(count, offset, rng) for offset in range(count) for _ in range(50)
    ]
    assert max(runs) <= 2 * count
    assert sum(runs) / len(runs) <= 3


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
