"""A board's histogram counters written from a count of its index: one repair at a time (the
reconciler's) or every counter of the board at once (``rebuild_counters``, the seeder's). Every
write is conditioned on the value read, so a concurrent write is reported, never overwritten."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

import structlog

from app.domain.buckets import BucketLayout
from app.domain.counts import CounterDifference
from app.errors import ConditionFailed, ItemBusy, Throttled
from app.services.ports import CoarseItem, CounterItem, CounterStore, FineItem, StoredCounters
from app.services.ranking.counting import BoardCount
from app.services.work import Progress, all_or_none, each_partition, persist

log = structlog.get_logger(__name__)

T = TypeVar("T")

WRITE_CONCURRENCY = 16
"""Counter reads and writes in flight at once."""

RepairResult = Literal["repaired", "skipped", "unwritten"]


@dataclass(frozen=True)
class BoardCounts:
    """A board counted from its index, as its counters should hold it."""

    board_id: str
    counts: Mapping[str, BoardCount]
    """Each partition's count, by partition id (the board's own id, unsharded)."""
    expires_at: int | None
    """When the board's counter items expire (its retention; ``None``: never)."""


async def set_counter(
    counters: CounterStore,
    partition: str,
    item: CounterItem,
    *,
    n: int,
    expected: int | None,
    expires_at: int | None,
) -> RepairResult:
    """One counter set to ``n`` where it still holds ``expected``: ``skipped`` where it changed
    since it was read, ``unwritten`` where DynamoDB turned the write away through every retry."""
    try:
        await persist(
            lambda: counters.set_counter(
                partition, item, n=n, expected=expected, expires_at=expires_at
            )
        )
    except ConditionFailed:
        log.info("counter_write_skipped", board=partition, item=item, expected=expected)
        return "skipped"
    except (ItemBusy, Throttled) as exc:
        log.warning("counter_write_unwritten", board=partition, item=item, reason=exc.detail)
        return "unwritten"
    return "repaired"


async def repair_counter(
    counters: CounterStore,
    partition: str,
    difference: CounterDifference,
    stored: StoredCounters,
    expires_at: int | None,
) -> RepairResult:
    """Write one repair conditioned on what was read (``set_counter``).

    A coarse count is a sum over shards that submissions ``ADD`` to: setting shard 0 to (counted -
    the other shards as read), conditioned on shard 0 alone, leaves the sum right even when a
    submission adds to another shard in between (its delta is on top of the value read)."""
    cell = difference.cell
    item: CounterItem
    if cell.slot is None:
        others = sum(
            n for (shard, bucket), n in stored.coarse.items() if bucket == cell.bucket and shard
        )
        item = CoarseItem(0, cell.bucket)
        expected = stored.coarse.get((0, cell.bucket))
        target = difference.counted - others
    else:
        item = FineItem(cell.bucket, cell.slot)
        expected = stored.fine.get((cell.bucket, cell.slot))
        target = difference.counted
    return await set_counter(
        counters, partition, item, n=target, expected=expected, expires_at=expires_at
    )


@dataclass(frozen=True)
class RebuildOutcome:
    written: int
    """Counter items set or deleted."""
    conflicts: int
    """Counter items that changed between the read and the write (nothing else should write them
    while the lease holds): left as they were, for the reconciler."""
    unwritten: int = 0
    """Counter items DynamoDB kept turning away through every retry: left for the reconciler."""
    left: frozenset[str] = frozenset()
    """The partitions (a board's own id, unsharded) with a conflict or an unwritten item: their
    counters are not the count, and their mark of counters part-written must stay."""


async def rebuild_counters(
    counters: CounterStore,
    counted: BoardCounts,
    layout: BucketLayout,
    *,
    counters_absent: bool = False,
    progress: Progress | None = None,
) -> RebuildOutcome:
    """Make each partition's counters exactly its count: each coarse bucket's count on shard 0
    and the other shards deleted, each fine slot's count, and every item that should be 0
    deleted; every partition's counters are read together, then written together. Meant for a
    board nothing else writes (under a seeding lease). With ``counters_absent``
    (``SeedPolicy.counters_absent``) nothing is read first: every item is written on the
    condition that it is absent; where one was there after all, that partition's counters are
    read whole and rebuilt again."""
    partitions = list(counted.counts)
    stored = (
        [StoredCounters(coarse={}, fine={}) for _ in partitions]
        if counters_absent
        else await read_counters(counters, partitions, layout=layout, progress=progress)
    )
    changes = [
        (partition, item, n, expected)
        for partition, found in zip(partitions, stored, strict=True)
        for item, n, expected in _rebuild(counters, partition, counted.counts[partition], found)
    ]
    results = await bounded(
        [
            set_counter(
                counters, partition, item, n=n, expected=expected, expires_at=counted.expires_at
            )
            for partition, item, n, expected in changes
        ],
        progress=progress,
    )
    conflicted = {
        p for (p, *_), result in zip(changes, results, strict=True) if result == "skipped"
    }
    unwritten = {
        p for (p, *_), result in zip(changes, results, strict=True) if result == "unwritten"
    }
    written = results.count("repaired")
    outcome = RebuildOutcome(
        written=written,
        conflicts=results.count("skipped"),
        unwritten=results.count("unwritten"),
        left=frozenset(conflicted | unwritten),
    )
    if not (counters_absent and outcome.conflicts):
        return outcome
    log.warning("seeding_found_counters", board=counted.board_id, conflicts=outcome.conflicts)
    again = await rebuild_counters(
        counters,
        BoardCounts(
            counted.board_id,
            {p: counted.counts[p] for p in partitions if p in conflicted},
            counted.expires_at,
        ),
        layout,
        progress=progress,
    )
    return RebuildOutcome(
        written=written + again.written,
        conflicts=again.conflicts,
        unwritten=outcome.unwritten + again.unwritten,
        left=again.left | unwritten,
    )


def _rebuild(
    counters: CounterStore, partition: str, count: BoardCount, stored: StoredCounters
) -> list[tuple[CounterItem, int, int | None]]:
    """The writes that make one partition's counters ``count``: each item, its value, and the
    value read (``None``: absent), where the two differ (``_needs_write``)."""
    wanted: dict[CounterItem, int] = {}
    for bucket in set(count.coarse) | stored.coarse_buckets:
        for shard in range(counters.coarse_shards(partition)):
            wanted[CoarseItem(shard, bucket)] = count.coarse.get(bucket, 0) if shard == 0 else 0
    for bucket, slot in set(count.fine) | set(stored.fine):
        wanted[FineItem(bucket, slot)] = count.fine.get((bucket, slot), 0)

    def read(item: CounterItem) -> int | None:
        if isinstance(item, CoarseItem):
            return stored.coarse.get((item.shard, item.bucket))
        return stored.fine.get((item.bucket, item.slot))

    return [(item, n, read(item)) for item, n in wanted.items() if _needs_write(read(item), n)]


def _needs_write(expected: int | None, n: int) -> bool:
    """Whether an item read as ``expected`` (``None``: absent) must be written to hold ``n``: when
    it holds another value, or holds 0 (deleted then: absent counts as 0)."""
    if expected is None:
        return n != 0
    return expected != n or n == 0


async def read_counters(
    counters: CounterStore,
    partitions: Sequence[str],
    *,
    layout: BucketLayout,
    progress: Progress | None,
) -> list[StoredCounters]:
    """Every counter item of each partition (its coarse shards and all fine buckets), strongly."""
    if progress is not None:
        progress("reading counters", 0, None)
    stored = await each_partition(
        partitions, lambda _, pid: counters.read_counters(pid, buckets=range(layout.coarse))
    )
    if progress is not None:
        progress("reading counters", sum(len(s.coarse) + len(s.fine) for s in stored), None)
    return stored


async def bounded(
    calls: Sequence[Awaitable[T]],
    limit: int = WRITE_CONCURRENCY,
    *,
    progress: Progress | None = None,
) -> list[T]:
    """Await ``calls`` with at most ``limit`` in flight, results in order; ``progress`` hears of
    each one done, as counter writes. If one fails, the others are cancelled and waited for
    before the failure is raised: none is left running."""
    gate = asyncio.Semaphore(limit)
    total = len(calls)
    done = 0

    async def one(call: Awaitable[T]) -> T:
        nonlocal done
        async with gate:
            result = await call
        done += 1
        if progress is not None:
            progress("writing counters", done, total)
        return result

    try:
        if progress is not None:
            progress("writing counters", 0, total)
        return await all_or_none(*(one(call) for call in calls))
    finally:
        for call in calls:  # those never started, stopped by a failure: not left unawaited
            if inspect.iscoroutine(call):
                call.close()
