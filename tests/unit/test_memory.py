"""What a process remembers for a while: bounded, expiring, and single-flight loads."""

from __future__ import annotations

import asyncio

import pytest

from app.errors import RequestInFlight
from app.services.memory import Recent, SharedLoads
from app.services.submissions.in_flight import IdempotencyKeysInFlight


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_value_is_kept_while_fresh_and_its_last_is_kept_after() -> None:
    clock = Clock()
    recent: Recent[str, int] = Recent(max_entries=10, ttl_s=5, clock=clock)
    recent.put("a", 1)
    clock.now += 4.9
    assert ("a" in recent, recent.get("a")) == (True, 1)
    clock.now += 0.1
    assert ("a" in recent, recent.get("a"), recent.last("a")) == (False, None, 1)


def test_the_least_recently_stored_is_pushed_out_first() -> None:
    recent: Recent[str, int] = Recent(max_entries=2)
    recent.put("a", 1)
    recent.put("b", 2)
    recent.put("a", 3)  # stored again: now the most recent
    recent.put("c", 4)
    assert [k for k in "abc" if k in recent] == ["a", "c"]
    assert len(recent) == 2


def test_a_ttl_of_zero_keeps_nothing() -> None:
    recent: Recent[str, int] = Recent(max_entries=2, ttl_s=0)
    recent.put("a", 1)
    assert ("a" in recent, recent.last("a")) == (False, None)


async def test_callers_share_one_load_and_a_failed_one_is_not_kept() -> None:
    clock = Clock()
    loads: SharedLoads[str, int] = SharedLoads(max_entries=10, ttl_s=5, clock=clock)
    started = 0
    gate = asyncio.Event()

    async def load() -> int:
        nonlocal started
        started += 1
        await gate.wait()
        if started == 2:
            raise RuntimeError("the store failed")
        return started

    waiting = [asyncio.ensure_future(loads.get("k", load)) for _ in range(3)]
    await asyncio.sleep(0)
    gate.set()
    assert await asyncio.gather(*waiting) == [1, 1, 1]
    assert started == 1
    clock.now += 5  # stale: loaded again, and this one fails
    with pytest.raises(RuntimeError):
        await loads.get("k", load)
    assert await loads.get("k", load) == 3  # the failure was not kept


async def test_a_caller_that_gives_up_does_not_cancel_the_shared_load() -> None:
    loads: SharedLoads[str, int] = SharedLoads(max_entries=10, ttl_s=5)
    gate = asyncio.Event()

    async def load() -> int:
        await gate.wait()
        return 7

    first = asyncio.ensure_future(loads.get("k", load))
    await asyncio.sleep(0)
    first.cancel()
    second = asyncio.ensure_future(loads.get("k", load))
    await asyncio.sleep(0)
    gate.set()
    assert await second == 7


async def test_a_value_put_as_of_an_older_load_does_not_replace_a_newer_one() -> None:
    clock = Clock()
    loads: SharedLoads[str, int] = SharedLoads(max_entries=4, ttl_s=10, clock=clock)

    async def one() -> int:
        return 1

    assert not loads.holds("k")
    assert await loads.get("k", one) == 1
    assert loads.holds("k")
    loads.put("k", 2, at=clock.now - 1)  # a load that began before the one kept
    assert await loads.get("k", one) == 1
    loads.put("k", 3, at=clock.now + 1)
    assert await loads.get("k", one) == 3
    assert loads.keys_held() == ["k"]
    clock.now += 12
    assert not loads.holds("k")  # past its ttl: the next caller loads again
    assert loads.keys_held() == ["k"]


def test_a_key_in_flight_is_told_to_wait_about_what_the_first_has_left() -> None:
    now = [0.0]
    keys = IdempotencyKeysInFlight(hold_s=10, clock=lambda: now[0])
    for i in range(40):  # this task's submissions take half a second
        with keys.claim(f"done-{i}"):
            now[0] += 0.5
    with keys.claim("k"):
        now[0] += 0.1
        with pytest.raises(RequestInFlight) as told, keys.claim("k"):
            pass
        assert told.value.retry_after == 1  # not the 10 s of the deadline
    # A first request far slower than usual is waited for, but never past the deadline.
    slow = IdempotencyKeysInFlight(hold_s=10, clock=lambda: now[0])
    for i in range(40):
        with slow.claim(f"slow-{i}"):
            now[0] += 30
    with slow.claim("k"):
        with pytest.raises(RequestInFlight) as told, slow.claim("k"):
            pass
        assert told.value.retry_after == 10
