"""Keeps this process's own transactions from colliding on a counter item.

DynamoDB cancels a transaction that touches an item another transaction is working on
(``TransactionConflict``). Two submissions of one process that would share a counter item wait for
each other here instead, and a coarse counter goes to a shard no transaction of this process is
using, in an order of its own that moves on after a conflict, so tasks under one burst tend to
keep to different shards. A burst from one task turns into a queue per hot item rather than a
storm of cancelled transactions; conflicts with other tasks remain, and the service retries those.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager


class ItemLocks:
    def __init__(self) -> None:
        self._held: dict[str, tuple[asyncio.Lock, int]] = {}
        # Each process prefers shards in its own rotation of the list, so two tasks under the same
        # burst mostly write different shards instead of cancelling each other's transactions.
        self._rotation = random.randrange(1 << 16)

    def in_use(self, item: str) -> bool:
        return item in self._held

    def shift(self) -> None:
        """Another task wrote where this one prefers to: prefer the next shard from now on, so two
        tasks that started with the same preference part ways."""
        self._rotation += 1

    def pick_free(self, candidates: list[str]) -> str:
        """The first candidate, in this process's own order, that no transaction of this process
        is using; when all are in use, the one with the fewest waiting."""
        start = self._rotation % len(candidates)
        ordered = candidates[start:] + candidates[:start]
        for candidate in ordered:
            if candidate not in self._held:
                return candidate
        return min(ordered, key=lambda c: self._held[c][1])

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
