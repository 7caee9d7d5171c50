"""The reconciler: recount a board from RankIndex and bring its histogram counters back in line
where anything changed rows without them (a seeder killed mid-way, a hand edit, a bug). Why two
passes, and how a repair never overwrites a submission: docs/operations.md. Seeding shares the
counting and the repair writes (``rebuild_counters``).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal, TypeVar

import structlog

from app.domain.buckets import BucketLayout
from app.domain.counts import CounterCell, CounterDifference, compare_counts
from app.domain.periods import Board, board_expiry_s
from app.domain.shards import partition_ids
from app.errors import BoardBeingSeeded, ConditionFailed, ItemBusy, Throttled
from app.services.ports import (
    BoardIndex,
    CoarseItem,
    CounterItem,
    CounterStore,
    FineItem,
    LeaseStore,
    StandingStore,
    StoredCounters,
    StoredTies,
)
from app.services.ranking.counting import BoardCount, count_board
from app.services.ranking.ties import TieReport, reconcile_ties
from app.services.work import Progress, all_or_none, each_partition, persist, shared_progress

log = structlog.get_logger(__name__)

T = TypeVar("T")

WRITE_CONCURRENCY = 16
"""Counter reads and writes in flight at once."""


# ---- comparing and repairing --------------------------------------------------------------------


@dataclass(frozen=True)
class ReconcileReport:
    board_id: str
    applied: bool
    """Whether repairs were attempted (``apply``); a dry run changes nothing."""
    player_count: int
    """Entries counted on the board (second pass)."""
    differences: list[CounterDifference] = field(default_factory=list)
    """Every counter where both passes agree and the stored value does not."""
    unsettled: list[CounterCell] = field(default_factory=list)
    """Counters whose two passes disagreed (the board changed meanwhile): not compared, not repaired."""
    repaired: list[CounterDifference] = field(default_factory=list)
    skipped: list[CounterDifference] = field(default_factory=list)
    """Repairs not written because a counter changed after it was read (a submission landed)."""
    unwritten: list[CounterDifference] = field(default_factory=list)
    """Repairs DynamoDB kept turning away (throttled, or the item held by a transaction) through
    every retry: left for the next run."""
    ties: list[TieReport] = field(default_factory=list)
    """Every crowded slot both passes agree on, and its tie counters (``app.services.ranking.ties``)."""
    shards: list[ReconcileReport] = field(default_factory=list)
    """A sharded board's partitions, each reconciled as a board of its own (its ``board_id``
    the partition id), in shard order; the lists above are theirs one after another (a cell
    may so appear once for each partition it differs on), the player count their sum. Empty
    for an unsharded board."""

    @property
    def drift(self) -> int:
        """Counter items and tie counter items found differing from the board."""
        return len(self.differences) + sum(t.differences for t in self.ties)

    @property
    def left(self) -> int:
        """Differences not repaired: skipped (changed meanwhile) or unwritten."""
        return len(self.skipped) + len(self.unwritten)


def _whole_board(board_id: str, applied: bool, parts: Sequence[ReconcileReport]) -> ReconcileReport:
    """A sharded board's report from its partitions' (``ReconcileReport.shards``)."""
    return ReconcileReport(
        board_id=board_id,
        applied=applied,
        player_count=sum(p.player_count for p in parts),
        differences=[d for p in parts for d in p.differences],
        unsettled=[c for p in parts for c in p.unsettled],
        repaired=[d for p in parts for d in p.repaired],
        skipped=[d for p in parts for d in p.skipped],
        unwritten=[d for p in parts for d in p.unwritten],
        ties=[t for p in parts for t in p.ties],
        shards=list(parts),
    )


async def reconcile_board(
    *,
    index: BoardIndex,
    counters: CounterStore,
    leases: LeaseStore,
    board: Board,
    layout: BucketLayout,
    retention: timedelta,
    apply: bool,
    shards: int = 1,
    tie_group: int | None = None,
    standings: StandingStore | None = None,
    pass_gap_s: float = 1.0,
    clock: Callable[[], float] = time.time,
    progress: Progress | None = None,
) -> ReconcileReport:
    """Recount ``board`` twice from RankIndex, read its counters between the passes, report every
    difference where both passes agree; with ``apply``, repair those conditionally.

    ``pass_gap_s`` separates the counter read from the second pass, so that a submission committed
    just before the read, not yet in the index (RankIndex lags its table), shows up in the second
    pass as a disagreement instead of as a false difference. Refuses to apply (``BoardBeingSeeded``)
    while a seeding lease holds the board: the seeder rebuilds the counters itself.

    A board of ``shards`` > 1 (its definition's) is reconciled partition by partition, each
    against its own counters, all in the same passes (one gap between them); the report is the
    board's, with each partition's in ``shards``.

    With ``tie_group`` (and ``standings``, whose rows it marks), every slot holding more than that
    gets its tie counters compared too, and with ``apply`` built or repaired, after the counters."""
    board_id = board.board_id
    if apply:
        lease = await leases.read_lease(board_id)
        if lease is not None and lease.is_live(clock()):
            raise BoardBeingSeeded(
                f"board {board_id} is being seeded by {lease.holder}; the seeder rebuilds its "
                "counters: reconcile after it finishes",
                retry_after=max(1, int(lease.expires_at - clock()) + 1),
            )
    ties = tie_group if standings is not None else None
    partitions = partition_ids(board_id, shards)
    told = shared_progress(progress, len(partitions))
    firsts = await each_partition(
        partitions,
        lambda i, pid: count_board(index, pid, layout=layout, progress=told[i], tie_group=ties),
    )
    stored = await _read_counters(counters, partitions, layout=layout, progress=progress)
    # The crowded slots' tie counters are read here too, between the passes: a submission that
    # lands after the read and before the writes either shows in the second pass (the slot is not
    # compared) or fails the write's condition on the value read (skipped), never overwritten.
    stored_ties = await each_partition(
        partitions, lambda i, pid: _read_ties(counters, pid, firsts[i].crowded)
    )
    if pass_gap_s > 0:
        await asyncio.sleep(pass_gap_s)
    seconds = await each_partition(
        partitions,
        lambda i, pid: count_board(
            index,
            pid,
            layout=layout,
            progress=told[i],
            size_hint=firsts[i].total,
            tie_group=ties,
        ),
    )
    parts: list[ReconcileReport] = []
    for pid, first, second, found in zip(partitions, firsts, seconds, stored, strict=True):
        differences, unsettled = compare_counts(
            first,
            second,
            stored_coarse={b: found.coarse_total(b) for b in found.coarse_buckets},
            stored_fine=found.fine,
        )
        parts.append(
            ReconcileReport(
                board_id=pid,
                applied=apply,
                player_count=second.total,
                differences=differences,
                unsettled=unsettled,
            )
        )
    expires_at = board_expiry_s(board, retention)
    if apply and any(part.differences for part in parts):
        # The counters are known wrong: no rank is answered from them until they are repaired.
        await each_partition(
            [part.board_id for part in parts if part.differences],
            lambda _, pid: persist(
                lambda: counters.mark_incomplete(pid, by="reconcile", expires_at=expires_at)
            ),
        )
        repairs = [
            (part, difference, found)
            for part, found in zip(parts, stored, strict=True)
            for difference in part.differences
        ]
        results = await _bounded(
            [_repair(counters, part.board_id, d, found, expires_at) for part, d, found in repairs],
            progress=progress,
        )
        for (part, difference, _), result in zip(repairs, results, strict=True):
            getattr(part, result).append(difference)  # its list: repaired, skipped, unwritten
    if apply:
        # Every counter of a partition agrees with the index: clear the mark of a repair, or of
        # a seed that stopped part-way, unless a seeder took the board meanwhile (its own mark
        # is its own).
        settled = [part.board_id for part in parts if not (part.skipped or part.unwritten)]
        lease = await leases.read_lease(board_id) if settled else None
        if settled and (lease is None or not lease.is_live(clock())):
            await each_partition(
                settled, lambda _, pid: persist(lambda: counters.clear_incomplete(pid))
            )
    if ties is not None and standings is not None:
        for part, first, second, read in zip(parts, firsts, seconds, stored_ties, strict=True):
            agreed = {
                slot: entries
                for slot, entries in second.crowded.items()
                if [e.key for e in first.crowded.get(slot, [])] == [e.key for e in entries]
            }
            part.ties.extend(
                await reconcile_ties(
                    counters=counters,
                    standings=standings,
                    board_id=part.board_id,
                    crowded=agreed,  # every slot agreed on was crowded in the first pass: read
                    group=ties,
                    apply=apply,
                    expires_at=expires_at,
                    stored=read,
                )
            )
    report = parts[0] if shards == 1 else _whole_board(board_id, apply, parts)
    log.info(
        "reconciled",
        board=board_id,
        shards=shards,
        applied=apply,
        players=report.player_count,
        differences=len(report.differences),
        unsettled=len(report.unsettled),
        repaired=len(report.repaired),
        skipped=len(report.skipped),
        unwritten=len(report.unwritten),
        drifted_shards=[p.board_id for p in report.shards if p.drift],
    )
    return report


async def _read_ties(
    counters: CounterStore, partition: str, crowded: Mapping[tuple[int, int], object]
) -> dict[tuple[int, int], StoredTies]:
    return {(b, s): await counters.read_ties(partition, b, s) for b, s in sorted(crowded)}


RepairResult = Literal["repaired", "skipped", "unwritten"]


async def _set(
    counters: CounterStore,
    board_id: str,
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
                board_id, item, n=n, expected=expected, expires_at=expires_at
            )
        )
    except ConditionFailed:
        log.info("counter_write_skipped", board=board_id, item=item, expected=expected)
        return "skipped"
    except (ItemBusy, Throttled) as exc:
        log.warning("counter_write_unwritten", board=board_id, item=item, reason=exc.detail)
        return "unwritten"
    return "repaired"


async def _repair(
    counters: CounterStore,
    board_id: str,
    difference: CounterDifference,
    stored: StoredCounters,
    expires_at: int | None,
) -> RepairResult:
    """Write one repair conditioned on what was read (``_set``).

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
    return await _set(counters, board_id, item, n=target, expected=expected, expires_at=expires_at)


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
    *,
    counters: CounterStore,
    board: Board,
    counts: Mapping[str, BoardCount],
    layout: BucketLayout,
    retention: timedelta,
    progress: Progress | None = None,
    counters_absent: bool = False,
) -> RebuildOutcome:
    """Make each partition's counters exactly its count (``counts``: by partition id, the
    board's own id for an unsharded board; ``app.domain.shards``): each coarse bucket's count on
    shard 0 and the other shards deleted, each fine slot's count, and every counter item that
    should be 0 deleted. The counters of every partition are read together, then written
    together.

    Meant for a board nothing else writes (under a seeding lease); each write is still conditioned
    on the value read, so a stray concurrent write is reported, not overwritten. With
    ``counters_absent`` (``SeedPolicy.counters_absent``) nothing is read first: every item is
    taken to be absent and written on that condition; if one was there after all (a submission
    just before the lease), that partition's counters are read whole and rebuilt again, as by
    default."""
    partitions = list(counts)
    stored = (
        [StoredCounters(coarse={}, fine={}) for _ in partitions]
        if counters_absent
        else await _read_counters(counters, partitions, layout=layout, progress=progress)
    )
    expires_at = board_expiry_s(board, retention)
    changes = [
        (partition, item, n, expected)
        for partition, found in zip(partitions, stored, strict=True)
        for item, n, expected in _rebuild(counters, partition, counts[partition], found)
    ]
    results = await _bounded(
        [
            _set(counters, partition, item, n=n, expected=expected, expires_at=expires_at)
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
    log.warning("seeding_found_counters", board=board.board_id, conflicts=outcome.conflicts)
    again = await rebuild_counters(
        counters=counters,
        board=board,
        counts={p: counts[p] for p in partitions if p in conflicted},
        layout=layout,
        retention=retention,
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


async def _read_counters(
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


async def _bounded(
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
