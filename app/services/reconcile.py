"""The reconciler: recount a board from RankIndex and bring its histogram counters back in line
where anything changed rows without them (a seeder killed mid-way, a hand edit, a bug). Why two
passes, and how a repair never overwrites a submission: docs/operations.md. Seeding shares the
counting and the repair writes (``rebuild_counters``).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal, TypeVar

import structlog

from app.domain.buckets import BucketLayout
from app.domain.counts import CounterCell, CounterDifference, compare_counts
from app.domain.periods import Board, board_expiry_s
from app.errors import BoardBeingSeeded, ConditionFailed, ItemBusy, Throttled
from app.services.counting import BoardCount, count_board
from app.services.fanout import all_or_none
from app.services.ports import (
    BoardIndex,
    CoarseItem,
    CounterItem,
    CounterStore,
    FineItem,
    LeaseStore,
    StandingStore,
    StoredCounters,
)
from app.services.progress import Progress
from app.services.retries import persist
from app.services.ties import TieReport, reconcile_ties

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
    """Every crowded slot both passes agree on, and its tie counters (``app.services.ties``)."""

    @property
    def drift(self) -> int:
        """Counter items and tie counter items found differing from the board."""
        return len(self.differences) + sum(t.differences for t in self.ties)

    @property
    def left(self) -> int:
        """Differences not repaired: skipped (changed meanwhile) or unwritten."""
        return len(self.skipped) + len(self.unwritten)


async def reconcile_board(
    *,
    index: BoardIndex,
    counters: CounterStore,
    leases: LeaseStore,
    board: Board,
    layout: BucketLayout,
    retention: timedelta,
    apply: bool,
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
    first = await count_board(index, board_id, layout=layout, progress=progress, tie_group=ties)
    stored = await _read_counters(counters, board_id, layout=layout, progress=progress)
    # The crowded slots' tie counters are read here too, between the passes: a submission that
    # lands after the read and before the writes either shows in the second pass (the slot is not
    # compared) or fails the write's condition on the value read (skipped), never overwritten.
    stored_ties = {
        (b, s): await counters.read_ties(board_id, b, s) for b, s in sorted(first.crowded)
    }
    if pass_gap_s > 0:
        await asyncio.sleep(pass_gap_s)
    second = await count_board(
        index, board_id, layout=layout, progress=progress, size_hint=first.total, tie_group=ties
    )
    differences, unsettled = compare_counts(
        first,
        second,
        stored_coarse={b: stored.coarse_total(b) for b in stored.coarse_buckets},
        stored_fine=stored.fine,
    )
    report = ReconcileReport(
        board_id=board_id,
        applied=apply,
        player_count=second.total,
        differences=differences,
        unsettled=unsettled,
    )
    if apply and differences:
        expires_at = board_expiry_s(board, retention)
        # The counters are known wrong: no rank is answered from them until they are repaired.
        await persist(
            lambda: counters.mark_incomplete(board_id, by="reconcile", expires_at=expires_at)
        )
        writes = [
            _repair(counters, board_id, difference, stored, expires_at)
            for difference in differences
        ]
        results = await _bounded(writes, progress=progress)
        for difference, result in zip(differences, results, strict=True):
            getattr(report, result).append(difference)  # its list: repaired, skipped, unwritten
    if apply and not (report.skipped or report.unwritten):
        # Every counter agrees with the index: clear the mark of a repair, or of a seed that
        # stopped part-way, unless a seeder took the board meanwhile (its own mark is its own).
        lease = await leases.read_lease(board_id)
        if lease is None or not lease.is_live(clock()):
            await persist(lambda: counters.clear_incomplete(board_id))
    if ties is not None and standings is not None:
        agreed = {
            slot: entries
            for slot, entries in second.crowded.items()
            if [e.key for e in first.crowded.get(slot, [])] == [e.key for e in entries]
        }
        report.ties.extend(
            await reconcile_ties(
                counters=counters,
                standings=standings,
                board_id=board_id,
                crowded=agreed,  # every slot agreed on was crowded in the first pass: read
                group=ties,
                apply=apply,
                expires_at=board_expiry_s(board, retention),
                stored=stored_ties,
            )
        )
    log.info(
        "reconciled",
        board=board_id,
        applied=apply,
        players=second.total,
        differences=len(differences),
        unsettled=len(unsettled),
        repaired=len(report.repaired),
        skipped=len(report.skipped),
        unwritten=len(report.unwritten),
    )
    return report


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


async def rebuild_counters(
    *,
    counters: CounterStore,
    board: Board,
    count: BoardCount,
    layout: BucketLayout,
    retention: timedelta,
    progress: Progress | None = None,
    counters_absent: bool = False,
) -> RebuildOutcome:
    """Make a board's counters exactly ``count``: each coarse bucket's count on shard 0 and the
    other shards deleted, each fine slot's count, and every counter item that should be 0 deleted.

    Meant for a board nothing else writes (under a seeding lease); each write is still conditioned
    on the value read, so a stray concurrent write is reported, not overwritten. With
    ``counters_absent`` (``SeedPolicy.counters_absent``) nothing is read first: every item is
    taken to be absent and written on that condition; if one was there after all (a submission
    just before the lease), the counters are read whole and rebuilt again, as by default."""
    board_id = board.board_id
    stored = (
        StoredCounters(coarse={}, fine={})
        if counters_absent
        else await _read_counters(counters, board_id, layout=layout, progress=progress)
    )
    wanted: dict[CounterItem, int] = {}
    for bucket in set(count.coarse) | stored.coarse_buckets:
        for shard in range(counters.coarse_shards(board_id)):
            wanted[CoarseItem(shard, bucket)] = count.coarse.get(bucket, 0) if shard == 0 else 0
    for bucket, slot in set(count.fine) | set(stored.fine):
        wanted[FineItem(bucket, slot)] = count.fine.get((bucket, slot), 0)

    def read(item: CounterItem) -> int | None:
        if isinstance(item, CoarseItem):
            return stored.coarse.get((item.shard, item.bucket))
        return stored.fine.get((item.bucket, item.slot))

    expires_at = board_expiry_s(board, retention)
    changes = [(item, n, read(item)) for item, n in wanted.items() if _needs_write(read(item), n)]

    results = await _bounded(
        [
            _set(counters, board_id, item, n=n, expected=expected, expires_at=expires_at)
            for item, n, expected in changes
        ],
        progress=progress,
    )
    written = results.count("repaired")
    outcome = RebuildOutcome(
        written=written, conflicts=results.count("skipped"), unwritten=results.count("unwritten")
    )
    if not (counters_absent and outcome.conflicts):
        return outcome
    log.warning("seeding_found_counters", board=board_id, conflicts=outcome.conflicts)
    again = await rebuild_counters(
        counters=counters,
        board=board,
        count=count,
        layout=layout,
        retention=retention,
        progress=progress,
    )
    return RebuildOutcome(
        written=written + again.written,
        conflicts=again.conflicts,
        unwritten=outcome.unwritten + again.unwritten,
    )


def _needs_write(expected: int | None, n: int) -> bool:
    """Whether an item read as ``expected`` (``None``: absent) must be written to hold ``n``: when
    it holds another value, or holds 0 (deleted then: absent counts as 0)."""
    if expected is None:
        return n != 0
    return expected != n or n == 0


async def _read_counters(
    counters: CounterStore, board_id: str, *, layout: BucketLayout, progress: Progress | None
) -> StoredCounters:
    """Every counter item of the board (its coarse shards and all fine buckets), strongly."""
    if progress is not None:
        progress("reading counters", 0, None)
    stored = await counters.read_counters(board_id, buckets=range(layout.coarse))
    if progress is not None:
        progress("reading counters", len(stored.coarse) + len(stored.fine), None)
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
