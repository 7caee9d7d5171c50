"""The HTTP contract's bodies (camelCase), as pydantic models; OpenAPI is generated from them."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
)
from pydantic.alias_generators import to_camel

from app.api.patterns import COUNTRY_PATTERN, DISPLAY_NAME_PATTERN
from app.domain.clock import iso_ms
from app.domain.definitions import (
    MAX_RETENTION_DAYS,
    WHAT_CHANGES,
    BoardDefinition,
    Operator,
)
from app.domain.keys import ID_PATTERN, SCORE_CEILING, Order
from app.domain.models import Entry, SubmitOutcome
from app.domain.periods import PeriodKind
from app.domain.ranks import ExactRank, Rank
from app.services.counting import CounterCell
from app.services.erasure import ErasureReport
from app.services.ports import Snapshot, SnapshotSummary
from app.services.reconcile import CounterDifference, ReconcileReport
from app.services.registry import BoardListing
from app.services.seeding import SeedReport
from app.services.ties import TieReport

Id = Annotated[str, Field(pattern=ID_PATTERN, examples=["player_123"])]
RESERVED_GAMES = frozenset({"idem", "snap", "hist", "seedlock", "registry", "apikey"})


def _not_reserved(game: str) -> str:
    if game in RESERVED_GAMES:
        raise ValueError(f"{game!r} is a reserved name")
    return game


GameId = Annotated[
    str,
    Field(pattern=ID_PATTERN, json_schema_extra={"not": {"enum": sorted(RESERVED_GAMES)}}),
    AfterValidator(_not_reserved),
]
DisplayName = Annotated[str, Field(min_length=1, max_length=64, pattern=DISPLAY_NAME_PATTERN)]
Country = Annotated[str, Field(pattern=COUNTRY_PATTERN, description="ISO 3166-1 alpha-2")]


def _integral(value: Any) -> Any:
    """JSON does not tell 10 from 10.0, and JSON Schema calls both integers: accept an integral
    number however written; 10.5, "10" and true stay refused by the strict check after this."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Score = Annotated[
    StrictInt,
    # The bounds before the validator, or the document shows them as "ge"/"lt", which JSON Schema
    # does not know, instead of minimum/exclusiveMaximum.
    Field(ge=0, lt=SCORE_CEILING, description="an integer in [0, 10**12)"),
    BeforeValidator(_integral),
]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ScoreSubmission(_Model):
    """A round's result for one player. Unknown fields are refused (422)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")

    player_id: Id
    score: Score
    game: GameId
    variant: Id
    achieved_at: AwareDatetime | None = Field(
        default=None,
        description="when the score was achieved; defaults to now. More than 5 s ahead of the "
        "server's clock, or older than the allowed lateness (1 h by default), is a 422.",
    )
    display_name: DisplayName | None = None
    country: Country | None = None
    context: dict[str, Any] | None = Field(
        default=None,
        description="free-form, kept, never indexed; as compact JSON at most the service's "
        "LEADERBOARD_MAX_CONTEXT_BYTES (16 KiB by default), or 422",
    )
    rank_delta: StrictBool = True


class BoardOutcomeOut(_Model):
    leaderboard_id: str
    period: str
    best: int = Field(description="the player's value on the board after this submission")
    previous_best: int | None = Field(
        description="their value before it; null where they were not on the board"
    )
    improved: bool = Field(description=WHAT_CHANGES)
    rank_before: int | None = None
    rank_after: int | None = None


class SubmitResponse(_Model):
    player_id: str
    boards: list[BoardOutcomeOut]

    @classmethod
    def of(cls, outcome: SubmitOutcome) -> SubmitResponse:
        boards = []
        for board in outcome.boards:
            fields: dict[str, Any] = {
                "leaderboard_id": board.board_id,
                "period": board.period,
                "best": board.best,
                "previous_best": board.previous_best,
                "improved": board.improved,
            }
            # rankBefore/rankAfter are left out, not null, where they are not exact (the route
            # serves the set fields only).
            if board.rank_before is not None:
                fields["rank_before"] = board.rank_before
            if board.rank_after is not None:
                fields["rank_after"] = board.rank_after
            boards.append(BoardOutcomeOut.model_validate(fields))
        return cls(player_id=outcome.player_id, boards=boards)


class EntryOut(_Model):
    rank: int | None
    player_id: str
    display_name: str | None
    country: str | None
    score: int
    achieved_at: str

    @classmethod
    def of(cls, entry: Entry, rank: int | None, **more: Any) -> Self:
        """The entry as shown; ``more`` fills a subclass's own fields."""
        return cls(
            rank=rank,
            player_id=entry.player_id,
            display_name=entry.display_name,
            country=entry.country,
            score=entry.score,
            achieved_at=iso_ms(entry.key.achieved_at_ms),
            **more,
        )


class BoardPageOut(_Model):
    leaderboard_id: str
    player_count: int
    entries: list[EntryOut]
    next_cursor: str | None


class VariantBoardsOut(_Model):
    variant: str
    periods: list[str] = Field(
        description="the variant's live boards, in the path's form: alltime, then each kind's "
        "periods newest first (day:2026-12-01, ..., week:2026-W49, ...)",
        examples=[["alltime", "day:2026-12-01", "day:2026-11-30", "week:2026-W49"]],
    )


class GameBoardsOut(_Model):
    game: str
    variants: list[VariantBoardsOut]


class BoardListOut(_Model):
    """The games and variants that have boards, from the board registry."""

    games: list[GameBoardsOut]
    current_periods: list[str] = Field(
        description="the dated periods the current ones (day, week) name now",
        examples=[["day:2026-12-01", "week:2026-W49"]],
    )

    @classmethod
    def of(cls, listing: BoardListing) -> BoardListOut:
        return cls(
            games=[
                GameBoardsOut(
                    game=game.game,
                    variants=[
                        VariantBoardsOut(variant=v.variant, periods=[p.display for p in v.periods])
                        for v in game.variants
                    ],
                )
                for game in listing.games
            ],
            current_periods=[p.display for p in listing.current],
        )


class ExactRankOut(_Model):
    kind: Literal["exact"] = "exact"
    rank: int
    top_percent: float


class EstimatedRankOut(_Model):
    """An honest range: ``rank`` is null, and the range always holds the true rank."""

    kind: Literal["estimated"] = "estimated"
    rank: None = None
    rank_range: tuple[int, int]
    top_percent_range: tuple[float, float]
    rank_estimate: int


RankOut = Annotated[ExactRankOut | EstimatedRankOut, Field(discriminator="kind")]


def rank_out(rank: Rank) -> ExactRankOut | EstimatedRankOut:
    if isinstance(rank, ExactRank):
        return ExactRankOut(rank=rank.rank, top_percent=rank.top_percent)
    return EstimatedRankOut(
        rank_range=rank.rank_range,
        top_percent_range=rank.top_percent_range,
        rank_estimate=rank.rank_estimate,
    )


class PlayerRankOut(_Model):
    leaderboard_id: str
    entry: EntryOut
    rank: RankOut


class AroundEntryOut(EntryOut):
    rank_range: tuple[int, int] | None = None


class AroundOut(_Model):
    leaderboard_id: str
    rank_kind: Literal["exact", "estimated"]
    entries: list[AroundEntryOut]


class GroupEntryOut(_Model):
    group_rank: int = Field(description="the place among the players named (1..k)")
    entry: EntryOut
    rank: RankOut | None = Field(
        default=None, description="the board rank, as the rank endpoint gives it (withRank=true)"
    )


class GroupOut(_Model):
    leaderboard_id: str
    entries: list[GroupEntryOut]


class BoardStandingOut(_Model):
    leaderboard_id: str
    period: str
    best: int
    rank: RankOut


class StandingsOut(_Model):
    player_id: str
    boards: list[BoardStandingOut]


class SnapshotEntryOut(_Model):
    rank: int
    player_id: str | None
    display_name: str | None
    country: str | None
    score: int | None
    achieved_at: str | None


class SnapshotOut(_Model):
    leaderboard_id: str
    snapshot_taken_at: str
    reason: str
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


class SnapshotSummaryOut(_Model):
    snapshot_taken_at: str
    reason: str
    player_count: int


class SnapshotListOut(_Model):
    snapshots: list[SnapshotSummaryOut]

    @classmethod
    def of(cls, summaries: list[SnapshotSummary]) -> SnapshotListOut:
        return cls(
            snapshots=[
                SnapshotSummaryOut(
                    snapshot_taken_at=s.taken_at, reason=s.reason, player_count=s.player_count
                )
                for s in summaries
            ]
        )


class RemovedOut(_Model):
    boards: int
    snapshots: int
    idempotency_records: int


class ErasureOut(_Model):
    player_id: str
    removed: RemovedOut

    @classmethod
    def of(cls, report: ErasureReport) -> ErasureOut:
        return cls(
            player_id=report.player_id,
            removed=RemovedOut(
                boards=report.boards,
                snapshots=report.snapshots,
                idempotency_records=report.idempotency_records,
            ),
        )


class SeedReportOut(_Model):
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

    @classmethod
    def of(cls, report: SeedReport) -> SeedReportOut:
        return cls.model_validate(dataclasses.asdict(report))


class CounterCellOut(_Model):
    bucket: int
    slot: int | None

    @classmethod
    def of(cls, cell: CounterCell) -> CounterCellOut:
        return cls(bucket=cell.bucket, slot=cell.slot)


class CounterDifferenceOut(_Model):
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


class TieSlotOut(_Model):
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


class ReconcileReportOut(_Model):
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
        )


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


class Health(BaseModel):
    status: str


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route's problem statuses."""
    return {
        status: {"model": Problem, "content": {"application/problem+json": {}}}
        for status in statuses
    }


PeriodName = Literal["alltime", "day", "week", "month"]
RetentionDays = Annotated[
    StrictInt,
    # The bounds before the validator, as for Score.
    Field(ge=1, le=MAX_RETENTION_DAYS, description=f"1 to {MAX_RETENTION_DAYS}"),
    BeforeValidator(_integral),
]


def _default_periods() -> list[PeriodName]:
    return ["alltime", "day", "week"]


class BoardDefinitionIn(_Model):
    """How a variant's boards rank. A field left out takes its default (not the stored value: a
    PUT says the whole definition). Unknown fields are refused (422)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")

    order: Literal["desc", "asc"] = Field(
        default="desc", description="desc: higher is better; asc: lower is better"
    )
    operator: Literal["best", "latest", "sum"] = Field(
        default="best",
        description="best: keep the best score; latest: the latest achievedAt replaces; "
        "sum: each accepted submission adds to the player's total",
    )
    periods: list[PeriodName] = Field(
        default_factory=_default_periods,
        min_length=1,
        max_length=4,
        description="the boards a score fans out to, each named once",
        json_schema_extra={"uniqueItems": True},
    )
    retention_days: RetentionDays | None = Field(
        default=None,
        description="days period boards live after they close (default: the service's)",
    )

    @field_validator("periods")
    @classmethod
    def _each_once(cls, periods: list[str]) -> list[str]:
        if len(set(periods)) != len(periods):
            raise ValueError("must name each period once")
        return periods

    def definition(self, *, retention_days: int) -> BoardDefinition:
        return BoardDefinition(
            order=Order(self.order),
            operator=Operator(self.operator),
            periods=tuple(PeriodKind(p) for p in self.periods),
            retention_days=self.retention_days or retention_days,
        )


class BoardDefinitionOut(_Model):
    game: str
    variant: str
    order: Literal["desc", "asc"]
    operator: Literal["best", "latest", "sum"]
    periods: list[PeriodName]
    retention_days: int
    defined: bool = Field(description="false: the variant has none and follows the default")
    defined_at: str | None = Field(default=None, description="when it was last put")

    @classmethod
    def of(
        cls, game: str, variant: str, definition: BoardDefinition, *, defined_at: str | None
    ) -> BoardDefinitionOut:
        return cls(
            game=game,
            variant=variant,
            order=definition.order.value,
            operator=definition.operator.value,
            periods=[p.value for p in definition.periods],
            retention_days=definition.retention_days,
            defined=defined_at is not None,
            defined_at=defined_at,
        )


class DefaultDefinitionOut(_Model):
    order: Literal["desc", "asc"]
    operator: Literal["best", "latest", "sum"]
    periods: list[PeriodName]
    retention_days: int


class VariantsOut(_Model):
    game: str
    variants: list[BoardDefinitionOut]
    default: DefaultDefinitionOut | None = Field(
        description="what a variant with no definition follows; null where undefined variants "
        "are refused"
    )
