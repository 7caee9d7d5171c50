"""Keeps this process's own transactions from colliding on a counter item.

DynamoDB cancels a transaction that touches an item another transaction is working on
(``TransactionConflict``). Two submissions of one process that would share a counter item wait for
each other here instead, and a coarse counter goes to a shard no transaction of this process is
using, so a burst from one task turns into a queue per hot item rather than a storm of cancelled
transactions. Transactions from other tasks can still conflict; the service retries those.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager


class ItemLocks:
    def __init__(self) -> None:
        self._held: dict[str, tuple[asyncio.Lock, int]] = {}

    def in_use(self, item: str) -> bool:
        return item in self._held

    def pick_free(self, candidates: list[str]) -> str:
        """A candidate no transaction of this process is using, else any (chosen at random)."""
        free = [c for c in candidates if c not in self._held]
        return random.choice(free or candidates)

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
