"""Keeps this process's own transactions from colliding on a counter item, so that a burst from one
task turns into a queue per hot item rather than a storm of cancelled transactions (``ItemLocks``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager


class ItemLocks:
    """DynamoDB cancels a transaction that touches an item another transaction is working on
    (``TransactionConflict``). Two submissions of one process that would share a counter item wait
    for each other here instead, and a coarse counter goes to a shard of this process's share
    (half the shards, moved off an item another task wrote at the same time), so tasks under one
    burst settle on different shards. Conflicts with other tasks remain, and the service retries
    those."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._held: dict[str, tuple[asyncio.Lock, int]] = {}
        self._rng = rng or random.Random()
        # Each process prefers shards in its own rotation of the list, so two tasks under the same
        # burst mostly write different shards instead of cancelling each other's transactions.
        self._rotation = self._rng.randrange(1 << 16)
        self.epoch = 0
        """How many times this process has answered a conflict; a transaction notes it when it
        picks its shards, so a conflict on a transaction planned before the last answer (the
        answer already covers it) is not answered twice."""

    def _share(self, candidates: list[str]) -> list[str]:
        start = self._rotation % len(candidates)
        return (candidates[start:] + candidates[:start])[: max(1, len(candidates) // 2)]

    def avoid(self, candidates: list[str], conflicted: str, *, planned_in: int) -> None:
        """Another task wrote ``conflicted`` while this one did: answer once per meeting, by
        moving this process's share just off it (by its nearer end) or, at even odds, staying put.

        The coin is what lets two tasks part: when both are cancelled on the same shard and both
        always moved, each would step into the other's old place and meet again; with the coin,
        one of them moves alone soon enough (``tests/unit/test_item_locks.py`` bounds how soon)."""
        if planned_in != self.epoch or conflicted not in self._share(candidates):
            return  # already answered, or the share has left that shard
        self.epoch += 1
        if self._rng.random() < 0.5:
            return
        share = self._share(candidates)
        position = share.index(conflicted)
        if position < len(share) / 2:
            self._rotation += position + 1
        else:
            self._rotation -= len(share) - position

    def pick_free(self, candidates: list[str]) -> str:
        """The first of this process's share of the candidates that no transaction of this
        process is using; when all of its share are in use, the one with the fewest waiting.

        A process's share is half the candidates, from its own place in the order. Two tasks
        spread over every shard would meet on each of them; with half each, a conflict moves one
        task's share off the item they met on (``avoid``) and two tasks settle on disjoint halves."""
        share = self._share(candidates)
        for candidate in share:
            if candidate not in self._held:
                return candidate
        return min(share, key=lambda c: self._held[c][1])

    @asynccontextmanager
    async def holding(self, items: Iterable[str]) -> AsyncIterator[None]:
        """Hold every item's lock; taken in sorted order, so two holders cannot deadlock."""
        keys = sorted(set(items))
        for key in keys:
            lock, users = self._held.get(key, (asyncio.Lock(), 0))
            self._held[key] = (lock, users + 1)
        acquired: list[asyncio.Lock] = []
        try:
            for key in keys:
                lock = self._held[key][0]
                await lock.acquire()
                acquired.append(lock)
            yield
        finally:
            for lock in acquired:
                lock.release()
            for key in keys:
                lock, users = self._held[key]
                if users == 1:
                    del self._held[key]
                else:
                    self._held[key] = (lock, users - 1)
