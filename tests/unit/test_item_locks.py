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


async def test_a_free_shard_is_picked_in_this_process_order() -> None:
    locks = ItemLocks()
    first = locks.pick_free(SHARDS)
    async with locks.holding([first]):
        second = locks.pick_free(SHARDS)
        assert second != first
        assert SHARDS.index(second) == (SHARDS.index(first) + 1) % len(SHARDS)
    assert locks.pick_free(SHARDS) == first
    locks.shift()
    assert locks.pick_free(SHARDS) == second


async def test_when_every_shard_is_busy_the_least_queued_is_chosen() -> None:
    locks = ItemLocks()
    release = asyncio.Event()

    async def hold(item: str) -> None:
        async with locks.holding([item]):
            await release.wait()

    tasks = [asyncio.create_task(hold(s)) for s in [*SHARDS, "c0", "c1", "c3"]]
    await asyncio.sleep(0)
    assert locks.pick_free(SHARDS) == "c2"
    release.set()
    await asyncio.gather(*tasks)
