"""The reconciler: recount a board from RankIndex and bring its histogram counters back in line
where anything changed rows without them (a seeder killed mid-way, a hand edit, a bug); first,
give rows of another order than the board's its order (``reconcile_board``). Why two passes, and
how a repair never overwrites a submission: docs/operations.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import structlog

from app.domain.calendar import board_expiry_s
from app.domain.counts import CounterCell, CounterDifference, compare_counts
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.domain.shards import partition_ids
from app.errors import BoardBeingSeeded
from app.services.operations._counters import bounded, read_counters, repair_counter
from app.services.operations._moderation_reconcile import hide_moderated
from app.services.operations._rekey import RekeyReport, rekey_board
from app.services.policies import CountPolicy
from app.services.ports import CounterStore, StoredTies, Stores
from app.services.ranking.counting import count_board
from app.services.ranking.ties import TieReport, TieWalk, reconcile_ties
from app.services.work import Progress, each_partition, persist, shared_progress

log = structlog.get_logger(__name__)


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
    other_order: RekeyReport | None = None
    """The rows of another order than the board's found before the recount (and, applied, given
    its order); ``None`` where they were not looked for (the run over live boards)."""
    moderated_rows: int = 0
    """Visible rows of moderated players found before the recount (and, applied, hidden; with
    those a due later pass of a moderation hid on the game's other boards): decision 0036."""

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
    stores: Stores,
    policy: CountPolicy,
    board: Board,
    definition: BoardDefinition,
    *,
    apply: bool,
    progress: Progress | None = None,
) -> ReconcileReport:
    """Give the board's rows of another order its order (``rekey_board``), so that the tie
    counters are built on the keys the board reads, then recount it (``recount_board``): what
    the command and the endpoint both run. The report carries the rekey's (``other_order``)."""
    other_order = await rekey_board(stores, policy.layout, board, definition, apply=apply)
    report = await recount_board(stores, policy, board, definition, apply=apply, progress=progress)
    return replace(report, other_order=other_order)


async def recount_board(
    stores: Stores,
    policy: CountPolicy,
    board: Board,
    definition: BoardDefinition,
    *,
    apply: bool,
    progress: Progress | None = None,
) -> ReconcileReport:
    """Recount the board twice from RankIndex, its counters read between the passes (the
    policy's ``pass_gap_s`` before the second: a submission not yet in the index shows as a
    disagreement, not a false difference); report every difference both passes agree on, and
    with ``apply`` repair those conditionally. Refuses to apply (``BoardBeingSeeded``) while a
    seeding lease holds the board. A sharded board is reconciled partition by partition, all in
    the same passes. With the policy's ``tie_group``, every slot holding more than that has its
    tie counters compared too, and with ``apply`` built or repaired, after the counters."""
    board_id, layout, counters = board.board_id, policy.layout, stores.counters
    if apply:
        await _refuse_while_seeded(stores, board_id)
    moderated = await hide_moderated(
        stores, layout, board, definition, apply=apply, now_ms=int(time.time() * 1000)
    )
    partitions = partition_ids(board_id, definition.shards)
    told = shared_progress(progress, len(partitions))
    firsts = await each_partition(
        partitions, lambda i, pid: count_board(stores.index, pid, policy, progress=told[i])
    )
    stored = await read_counters(counters, partitions, layout=layout, progress=progress)
    # The crowded slots' tie counters are read here too, between the passes: a submission that
    # lands after the read and before the writes either shows in the second pass (the slot is not
    # compared) or fails the write's condition on the value read (skipped), never overwritten.
    stored_ties = await each_partition(
        partitions, lambda i, pid: _read_ties(counters, pid, firsts[i].crowded)
    )
    if policy.pass_gap_s > 0:
        await asyncio.sleep(policy.pass_gap_s)
    seconds = await each_partition(
        partitions,
        lambda i, pid: count_board(
            stores.index, pid, policy, progress=told[i], size_hint=firsts[i].total
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
    expires_at = board_expiry_s(board, definition)
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
        results = await bounded(
            [
                repair_counter(counters, part.board_id, d, found, expires_at)
                for part, d, found in repairs
            ],
            progress=progress,
        )
        for (part, difference, _), result in zip(repairs, results, strict=True):
            getattr(part, result).append(difference)  # its list: repaired, skipped, unwritten
    if apply:
        # Every counter of a partition agrees with the index: clear the mark of a repair, or of
        # a seed that stopped part-way, unless a seeder took the board meanwhile (its own mark
        # is its own).
        settled = [part.board_id for part in parts if not (part.skipped or part.unwritten)]
        lease = await stores.leases.read_lease(board_id) if settled else None
        if settled and (lease is None or not lease.is_live(time.time())):
            await each_partition(
                settled, lambda _, pid: persist(lambda: counters.clear_incomplete(pid))
            )
    if policy.tie_group is not None:
        for part, first, second, read in zip(parts, firsts, seconds, stored_ties, strict=True):
            agreed = {
                slot: entries
                for slot, entries in second.crowded.items()
                if [e.key for e in first.crowded.get(slot, [])] == [e.key for e in entries]
            }
            # Every slot agreed on was crowded in the first pass: its tie counters were read.
            part.ties.extend(
                await reconcile_ties(
                    counters,
                    stores.standings,
                    TieWalk(part.board_id, agreed, stored=read),
                    group=policy.tie_group,
                    apply=apply,
                    expires_at=expires_at,
                )
            )
    report = parts[0] if definition.shards == 1 else _whole_board(board_id, apply, parts)
    report = replace(report, moderated_rows=moderated)
    log.info(
        "reconciled",
        board=board_id,
        shards=definition.shards,
        applied=apply,
        players=report.player_count,
        differences=len(report.differences),
        unsettled=len(report.unsettled),
        repaired=len(report.repaired),
        skipped=len(report.skipped),
        unwritten=len(report.unwritten),
        drifted_shards=[p.board_id for p in report.shards if p.drift],
        moderated_rows=moderated,
    )
    return report


async def _refuse_while_seeded(stores: Stores, board_id: str) -> None:
    """``BoardBeingSeeded`` while a seeding lease holds the board: the seeder rebuilds the
    counters itself."""
    lease = await stores.leases.read_lease(board_id)
    now = time.time()
    if lease is not None and lease.is_live(now):
        raise BoardBeingSeeded(
            f"board {board_id} is being seeded by {lease.holder}; the seeder rebuilds its "
            "counters: reconcile after it finishes",
            retry_after=max(1, int(lease.expires_at - now) + 1),
        )


async def _read_ties(
    counters: CounterStore, partition: str, crowded: Mapping[tuple[int, int], object]
) -> dict[tuple[int, int], StoredTies]:
    return {(b, s): await counters.read_ties(partition, b, s) for b, s in sorted(crowded)}
