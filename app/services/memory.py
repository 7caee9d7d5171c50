"""What a process remembers for a while: bounded, expiring, and (for loads) single-flight
(``Recent``, ``SharedLoads``).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Recent(Generic[K, V]):
    """At most ``max_entries`` values, each kept for ``ttl_s`` (``None``: until pushed out), the
    least recently stored pushed out first; a ``ttl_s`` of 0 keeps nothing."""

    def __init__(
        self,
        *,
        max_entries: int,
        ttl_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max = max_entries
        self._ttl_s = ttl_s
        self._clock = clock
        self._held: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, key: K) -> bool:
        return key in self._held and self._fresh(key)

    def get(self, key: K) -> V | None:
        """The value stored for ``key``, while fresh."""
        if key not in self._held or not self._fresh(key):
            return None
        return self._held[key][1]

    def last(self, key: K) -> V | None:
        """The value last stored for ``key``, fresh or not, until it is pushed out."""
        held = self._held.get(key)
        return None if held is None else held[1]

    def stored_at(self, key: K) -> float | None:
        """When the value held for ``key`` was stored, fresh or not."""
        held = self._held.get(key)
        return None if held is None else held[0]

    def keys_held(self) -> list[K]:
        """Every key held, fresh or not, least recently stored first."""
        return list(self._held)

    def _fresh(self, key: K) -> bool:
        return self._ttl_s is None or self._clock() - self._held[key][0] < self._ttl_s

    def put(self, key: K, value: V, *, at: float | None = None) -> None:
        """Store ``value`` for ``key`` (as of ``at``, by default now), pushing out the least
        recently stored past ``max_entries``."""
        if self._ttl_s is not None and self._ttl_s <= 0:
            return
        self._held[key] = (self._clock() if at is None else at, value)
        self._held.move_to_end(key)
        while len(self._held) > self._max:
            self._held.popitem(last=False)

    def forget(self, key: K | None = None) -> None:
        """Forget ``key``, or everything."""
        if key is None:
            self._held.clear()
        else:
            self._held.pop(key, None)


class SharedLoads(Generic[K, V]):
    """The result of one load per key, kept as ``Recent`` keeps values and shared by every caller
    that asks while it runs or is fresh; a load that failed is not kept, so the next caller loads
    again."""

    def __init__(
        self,
        *,
        max_entries: int,
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl_s = ttl_s
        self._loads: Recent[K, asyncio.Future[V]] = Recent(
            max_entries=max_entries, ttl_s=ttl_s, clock=clock
        )

    async def get(self, key: K, load: Callable[[], Awaitable[V]]) -> V:
        """``load()``'s result for ``key``: the one under way or kept, else a new one."""
        if self._ttl_s <= 0:
            return await load()
        held = self._loads.get(key)
        if held is None or failed(held):
            held = asyncio.ensure_future(load())
            self._loads.put(key, held)
        # Shielded: a caller that gives up does not cancel the load the others wait for.
        return await asyncio.shield(held)

    def held(self, key: K) -> V | None:
        """The value kept for ``key``, if a load of it finished and is fresh: no waiting."""
        loaded = self._loaded(key)
        return None if loaded is None else loaded.result()

    def holds(self, key: K) -> bool:
        """Whether a loaded value is kept for ``key``: asking for it then waits for nothing."""
        return self._loaded(key) is not None

    def _loaded(self, key: K) -> asyncio.Future[V] | None:
        held = self._loads.get(key)
        return held if held is not None and held.done() and not failed(held) else None

    def put(self, key: K, value: V, *, at: float) -> None:
        """Keep ``value`` for ``key`` as of ``at`` (when the load that found it began), unless
        what is kept is newer."""
        stored = self._loads.stored_at(key)
        if stored is not None and stored > at:
            return
        loaded: asyncio.Future[V] = asyncio.get_running_loop().create_future()
        loaded.set_result(value)
        self._loads.put(key, loaded, at=at)

    def keys_held(self) -> list[K]:
        """Every key kept, fresh or not."""
        return self._loads.keys_held()


def failed(future: asyncio.Future[V]) -> bool:
    """Whether ``future`` ended without a result (cancelled, or raised)."""
    return future.done() and (future.cancelled() or future.exception() is not None)
