"""Operator work over every partition of a board (seeding, reconciling, rekeying): an unsharded
board is one partition, its own id; a sharded board is ``shards`` partitions, each counted,
recounted and repaired as a board of its own (``app.domain.shards``), a few at once, with their
progress told as the one board's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from app.services.fanout import all_or_none
from app.services.progress import Progress, Stage

T = TypeVar("T")

PARTITIONS_AT_ONCE = 4
"""Partitions worked on at once: each walks its whole index partition, or reads its counters
(a coarse partition and one for each coarse bucket), with its own calls in flight."""


async def each_partition(
    partitions: Sequence[str],
    work: Callable[[int, str], Awaitable[T]],
    *,
    limit: int = PARTITIONS_AT_ONCE,
) -> list[T]:
    """``work(i, partition)`` for each partition, at most ``limit`` at once, the results in
    partition order. One failure cancels the others before it is raised (``all_or_none``)."""
    if len(partitions) == 1:
        return [await work(0, partitions[0])]
    gate = asyncio.Semaphore(limit)

    async def one(i: int, partition: str) -> T:
        async with gate:
            return await work(i, partition)

    return await all_or_none(*(one(i, p) for i, p in enumerate(partitions)))


def shared_progress(progress: Progress | None, parts: int) -> list[Progress | None]:
    """One ``Progress`` for each of ``parts`` partitions that work through a stage at once: each
    tells ``progress`` the stage's done summed over the partitions, and its size summed once
    every partition has told one (``None`` until then). One partition's is ``progress`` itself."""
    if progress is None or parts == 1:
        return [progress] * parts
    told = progress
    seen: dict[Stage, dict[int, tuple[int, int | None]]] = {}

    def part(i: int) -> Progress:
        def tell(stage: Stage, done: int, total: int | None) -> None:
            stage_seen = seen.setdefault(stage, {})
            stage_seen[i] = (done, total)
            sizes = [size for _, size in stage_seen.values()]
            known = len(stage_seen) == parts and all(size is not None for size in sizes)
            whole = sum(size or 0 for size in sizes) if known else None
            told(stage, sum(d for d, _ in stage_seen.values()), whole)

        return tell

    return [part(i) for i in range(parts)]
