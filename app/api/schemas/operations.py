"""The operator endpoints' bodies: snapshots, erasure, seeding and reconcile reports."""

from __future__ import annotations

import dataclasses

from pydantic import (
    Field,
)

from app.api.schemas.common import (
    CamelModel,
)
from app.api.schemas.reads import PERIOD, PeriodOut
from app.domain.counts import CounterCell, CounterDifference
from app.services.operations import ErasureReport, ReconcileReport, SeedReport
from app.services.ports import Snapshot, SnapshotReason, SnapshotSummary
from app.services.ranking.ties import TieReport


class SnapshotEntryOut(CamelModel):
    rank: int
    player_id: str | None
    display_name: str | None
    country: str | None
    score: int | None
    achieved_at: str | None


class SnapshotOut(CamelModel):
    leaderboard_id: str
    snapshot_taken_at: str
    reason: SnapshotReason = Field(
        description="`closed`: the board's final snapshot, taken once when its period closed; "
        "`manual`: taken on demand"
    )
    player_count: int
    top_n: int
    entries: list[SnapshotEntryOut]

    @classmethod
    def of(cls, snapshot: Snapshot) -> SnapshotOut:
        return cls(
            leaderboard_id=snapshot.board_id,
            snapshot_taken_at=snapshot.taken_at,
            reason=snapshot.reason,
            player_count=snapshot.player_count,
            top_n=snapshot.top_n,
            entries=[
                SnapshotEntryOut(
                    rank=e.rank,
                    player_id=e.player_id,
                    display_name=e.display_name,
                    country=e.country,
                    score=e.score,
                    achieved_at=e.achieved_at,
                )
                for e in snapshot.entries
            ],
        )


class SnapshotSummaryOut(CamelModel):
    snapshot_taken_at: str
    reason: SnapshotReason
    player_count: int


class SnapshotListOut(CamelModel):
    period: PeriodOut = PERIOD
    snapshots: list[SnapshotSummaryOut]

    @classmethod
    def of(cls, period: PeriodOut, summaries: list[SnapshotSummary]) -> SnapshotListOut:
        return cls(
            period=period,
            snapshots=[
                SnapshotSummaryOut(
                    snapshot_taken_at=s.taken_at, reason=s.reason, player_count=s.player_count
                )
                for s in summaries
            ],
        )


class RemovedOut(CamelModel):
    boards: int
    snapshots: int
    idempotency_records: int = Field(
        description="the stored answers of the player's requests: their submissions' "
        "idempotency records and their reward claims (each the record of a claim answered)"
    )


class ErasureOut(CamelModel):
    player_id: str
    removed: RemovedOut

    @classmethod
    def of(cls, report: ErasureReport) -> ErasureOut:
        return cls(
            player_id=report.player_id,
            removed=RemovedOut(
                boards=report.boards,
                snapshots=report.snapshots,
                # A claim is the record of a request answered once (docs/operations.md): the
                # contract's fields stay as they are.
                idempotency_records=report.idempotency_records + report.claims,
            ),
        )


class SeedReportOut(CamelModel):
    board_id: str
    rows_read: int
    duplicates: int
    rows_written: int
    rows_created: int
    rows_replaced: int
    rows_skipped: int
    rows_unwritten: int = Field(
        description="rows DynamoDB kept throttling through every retry: seed them again"
    )
    counters_rebuilt: int
    counter_conflicts: int
    counters_unwritten: int = Field(
        description="counter items DynamoDB kept turning away: run the reconciler"
    )
    player_count: int
    lease_released: bool
    rows_moderated: int = Field(
        default=0,
        description="rows left out because their player is moderated in the game (hidden or "
        "banned): seed them after a restore",
    )

    @classmethod
    def of(cls, report: SeedReport) -> SeedReportOut:
        return cls.model_validate(dataclasses.asdict(report))


class CounterCellOut(CamelModel):
    bucket: int
    slot: int | None

    @classmethod
    def of(cls, cell: CounterCell) -> CounterCellOut:
        return cls(bucket=cell.bucket, slot=cell.slot)


class CounterDifferenceOut(CamelModel):
    cell: CounterCellOut
    stored: int
    counted: int

    @classmethod
    def of(cls, difference: CounterDifference) -> CounterDifferenceOut:
        return cls(
            cell=CounterCellOut.of(difference.cell),
            stored=difference.stored,
            counted=difference.counted,
        )


class TieSlotOut(CamelModel):
    """A crowded slot's tie counters as the reconciler found (and, applied, left) them."""

    bucket: int
    slot: int
    grain: int = Field(description="its chunks are 2**grain ms of one score")
    entries: int
    built: bool = Field(description="the slot had no tie counters before this run")
    differences: int
    unmarked: int = Field(description="rows not yet marked as counted in them (or where)")
    was_sealed: bool = Field(description="its last build had sealed its counts")
    cuts: int = Field(description="chunks this run cut by player id (crowded moments)")
    repaired: int
    marked: int
    taken_back: int = Field(description="rows counted whose mark did not land, taken back out")
    skipped: int
    unwritten: int = Field(
        description="writes DynamoDB kept turning away through every retry (the slot stays "
        "unsealed this run)"
    )
    sealed: bool = Field(
        description="this run sealed its counts (rank reads trust them only sealed)"
    )

    @classmethod
    def of(cls, report: TieReport) -> TieSlotOut:
        return cls(**dataclasses.asdict(report))


class ReconcileShardOut(CamelModel):
    """One shard of a sharded board, as the reconciler found it."""

    partition_id: str = Field(description="the shard's key: the board id and `#s` and its number")
    player_count: int
    differences: int = Field(description="counter items that differed from the shard's entries")
    repaired: int
    left: int = Field(description="differences not repaired (changed meanwhile, or turned away)")

    @classmethod
    def of(cls, report: ReconcileReport) -> ReconcileShardOut:
        return cls(
            partition_id=report.board_id,
            player_count=report.player_count,
            differences=report.drift,
            repaired=len(report.repaired),
            left=report.left,
        )


class ReconcileReportOut(CamelModel):
    board_id: str
    applied: bool
    player_count: int
    differences: list[CounterDifferenceOut]
    unsettled: list[CounterCellOut]
    repaired: list[CounterDifferenceOut]
    skipped: list[CounterDifferenceOut] = Field(
        description="repairs not written: the counter changed after it was read"
    )
    unwritten: list[CounterDifferenceOut] = Field(
        description="repairs DynamoDB kept turning away (throttled, or the item held by a "
        "transaction) through every retry: run again"
    )
    tie_slots: list[TieSlotOut] = Field(
        default_factory=list,
        description="crowded slots (more entries than half the rank count cap) and their tie "
        "counters",
    )
    shards: list[ReconcileShardOut] = Field(
        default_factory=list,
        description="a sharded board's shards, each reconciled on its own (the lists above are "
        "theirs together): which one drifted; empty for an unsharded board",
    )
    moderated_rows: int = Field(
        default=0,
        description="visible rows of moderated players found on the board before the recount "
        "(hidden, where applied)",
    )

    @classmethod
    def of(cls, report: ReconcileReport) -> ReconcileReportOut:
        return cls(
            board_id=report.board_id,
            applied=report.applied,
            player_count=report.player_count,
            differences=[CounterDifferenceOut.of(d) for d in report.differences],
            unsettled=[CounterCellOut.of(c) for c in report.unsettled],
            repaired=[CounterDifferenceOut.of(d) for d in report.repaired],
            skipped=[CounterDifferenceOut.of(d) for d in report.skipped],
            unwritten=[CounterDifferenceOut.of(d) for d in report.unwritten],
            tie_slots=[TieSlotOut.of(t) for t in report.ties],
            shards=[ReconcileShardOut.of(part) for part in report.shards],
            moderated_rows=report.moderated_rows,
        )
