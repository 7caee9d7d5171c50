"""Item locks: one process never holds one counter item twice at once, and picks shards in an
order of its own that moves on after a conflict."""

from __future__ import annotations

import asyncio

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


def _share(locks: ItemLocks) -> list[str]:
    """The shards this process picks from when it holds none."""
    picked: list[str] = []
    for shard in SHARDS:
        locks._held[shard] = (asyncio.Lock(), 1)  # as if held by one of this process's writes
    for shard in SHARDS:
        del locks._held[shard]
        if locks.pick_free(SHARDS) == shard:
            picked.append(shard)
        locks._held[shard] = (asyncio.Lock(), 1)
    locks._held.clear()
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
    assert sorted(_share(locks)) == sorted([first, second])


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


def _rotated(rotation: int) -> ItemLocks:
    locks = ItemLocks()
    locks._rotation = rotation
    return locks


def _parted(mover: ItemLocks, other: ItemLocks) -> int:
    """Conflicts until the two shares are disjoint, ``mover`` being the one cancelled each time."""
    conflicts = 0
    while shared := sorted(set(_share(mover)) & set(_share(other))):
        mover.avoid(SHARDS, shared[0])
        conflicts += 1
        assert conflicts <= 2
    return conflicts


async def test_two_processes_whose_shares_overlap_part_ways() -> None:
    for offset in range(4):
        for a_moves in (True, False):
            a, b = _rotated(7), _rotated(7 + offset)
            conflicts = _parted(a, b) if a_moves else _parted(b, a)
            overlap = {0: 2, 1: 1, 2: 0, 3: 1}[offset]
            assert conflicts == overlap  # one conflict per shard they shared


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
