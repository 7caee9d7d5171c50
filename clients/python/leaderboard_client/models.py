"""The API's schemas as TypedDicts: what ``docs/openapi.json`` says each body holds.

Generated: do not edit. Regenerate with ``python3 clients/python/generate.py``, which runs
``datamodel-codegen --input docs/openapi.json --input-file-type openapi --output-model-type typing.TypedDict --target-python-version 3.11 --use-standard-collections --use-union-operator --enum-field-as-literal all --use-schema-description --no-use-closed-typed-dict --disable-timestamp --use-double-quotes --no-formatters``
(datamodel-code-generator==0.89.0), then ``ruff format``.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class AroundEntryOut(TypedDict):
    achievedAt: str
    country: str | None
    displayName: str | None
    metadata: dict[str, Any] | None
    playerId: str
    rank: int | None
    rankRange: NotRequired[tuple[int, int] | None]
    score: int


class AttemptOut(TypedDict):
    at: str
    durationMs: int
    error: NotRequired[str | None]
    outcome: Literal["delivered", "failed", "error", "refused", "no-webhook"]
    status: NotRequired[int | None]


class BatchSubmission(TypedDict):
    """
    One submission of a batch: the body `POST /v1/scores` takes, with its Idempotency-Key
    as a field. An item whose other fields are wrong is answered in its own result (422); one
    without a key of this form is a 422 for the whole batch.
    """

    achievedAt: NotRequired[str | None]
    context: NotRequired[dict[str, Any] | None]
    country: NotRequired[str | None]
    displayName: NotRequired[str | None]
    game: str
    idempotencyKey: str
    metadata: NotRequired[dict[str, Any] | None]
    playerId: str
    rankDelta: NotRequired[bool]
    score: int
    variant: str


class BoardOutcomeOut(TypedDict):
    best: int
    improved: bool
    leaderboardId: str
    period: str
    previousBest: int | None
    rankAfter: NotRequired[int | None]
    rankBefore: NotRequired[int | None]


class ClaimOut(TypedDict):
    claimedAt: str
    leaderboardId: str
    playerCount: int
    playerId: str
    rank: int


class CohortRankOut(TypedDict):
    cohortId: str
    rank: int
    tier: NotRequired[str | None]


class CounterCellOut(TypedDict):
    bucket: int
    slot: int | None


class CounterDifferenceOut(TypedDict):
    cell: CounterCellOut
    counted: int
    stored: int


class DefaultDefinitionOut(TypedDict):
    operator: Literal["best", "latest", "sum"]
    order: Literal["desc", "asc"]
    periods: list[Literal["alltime", "day", "week", "month", "season"]]
    retentionDays: int
    scoreFormat: Literal["integer", "duration_ms"]
    scoreMax: int | None
    scoreMin: int | None
    shards: Literal[1, 2, 4, 8, 16, 32, 64]
    timeZone: str


class DeliveryOut(TypedDict):
    attempts: list[AttemptOut]
    createdAt: str
    id: str
    nextAttemptAt: NotRequired[str | None]
    status: Literal["pending", "delivered", "failed"]
    type: str


class EntrantOut(TypedDict):
    cohortId: str | None
    playerId: str
    tier: NotRequired[str | None]


class EntryOut(TypedDict):
    achievedAt: str
    country: str | None
    displayName: str | None
    metadata: dict[str, Any] | None
    playerId: str
    rank: int | None
    score: int


class EstimatedRankOut(TypedDict):
    """
    An honest range: ``rank`` is null, and the range always holds the true rank.
    """

    kind: Literal["estimated"]
    rank: None
    rankEstimate: int
    rankRange: tuple[int, int]
    topPercentRange: tuple[float, float]


class ExactRankOut(TypedDict):
    kind: Literal["exact"]
    rank: int
    topPercent: float


class GroupEntryOut(TypedDict):
    entry: EntryOut
    groupRank: int
    rank: NotRequired[ExactRankOut | EstimatedRankOut | None]


class Health(TypedDict):
    status: str


class ModeratedPlayerOut(TypedDict):
    action: Literal["hide", "ban"]
    playerId: str
    reason: str
    since: str


class ModeratedPlayersOut(TypedDict):
    nextCursor: str | None
    players: list[ModeratedPlayerOut]


class ModerationEventOut(TypedDict):
    action: Literal["hide", "ban", "restore", "void"]
    at: str
    by: str
    leaderboardId: NotRequired[str | None]
    playerId: str
    reason: str


class ModerationIn(TypedDict):
    action: Literal["hide", "ban"]
    reason: str


class ModerationLogOut(TypedDict):
    events: list[ModerationEventOut]
    nextCursor: str | None


class ModerationOut(TypedDict):
    action: Literal["hide", "ban"]
    game: str
    playerId: str
    reason: str
    since: str


class PeriodOut(TypedDict):
    """
    The board's period: when it started and ends, and when the next board of its kind begins
    (each in UTC; a day, week or month begins at local midnight in the variant's time zone).
    """

    endsAt: str | None
    id: str
    nextResetAt: str | None
    startsAt: str | None


class PlayerEntryOut(TypedDict):
    achievedAt: str
    context: dict[str, Any] | None
    country: str | None
    displayName: str | None
    metadata: dict[str, Any] | None
    playerId: str
    rank: int | None
    score: int


class PlayerRankOut(TypedDict):
    cohort: NotRequired[CohortRankOut | None]
    entry: PlayerEntryOut
    leaderboardId: str
    period: PeriodOut
    rank: ExactRankOut | EstimatedRankOut
    scoreFormat: Literal["integer", "duration_ms"]


class PreviousPeriodOut(TypedDict):
    cohortId: str
    move: Literal["up", "down", "stay", "pending"]
    period: str
    tier: str


class Problem(TypedDict):
    """
    RFC 9457 problem details.
    """

    detail: str
    errors: NotRequired[list[dict[str, Any]] | None]
    instance: NotRequired[str | None]
    status: int
    title: str
    type: str


class ReconcileShardOut(TypedDict):
    """
    One shard of a sharded board, as the reconciler found it.
    """

    differences: int
    left: int
    partitionId: str
    playerCount: int
    repaired: int


class RemovedOut(TypedDict):
    boards: int
    idempotencyRecords: int
    snapshots: int


class RestoredOut(TypedDict):
    game: str
    playerId: str
    rowsRestored: int


class ScoreBatch(TypedDict):
    """
    Up to 100 submissions, each answered as `POST /v1/scores` would answer it alone. Fewer
    than 1 or more than 100, an item without an `idempotencyKey`, or two items with one key:
    a 422 for the whole batch, and nothing stored.
    """

    submissions: list[BatchSubmission]


class ScoreSubmission(TypedDict):
    """
    A round's result for one player. Unknown fields are refused (422).
    """

    achievedAt: NotRequired[str | None]
    context: NotRequired[dict[str, Any] | None]
    country: NotRequired[str | None]
    displayName: NotRequired[str | None]
    game: str
    metadata: NotRequired[dict[str, Any] | None]
    playerId: str
    rankDelta: NotRequired[bool]
    score: int
    variant: str


class SeasonIn(TypedDict):
    """
    One season: from ``startsAt`` (inclusive) to ``endsAt`` (exclusive).
    """

    endsAt: str
    id: str
    startsAt: str


class SeasonOut(TypedDict):
    endsAt: str
    id: str
    startsAt: str


class SeedReportOut(TypedDict):
    boardId: str
    counterConflicts: int
    countersRebuilt: int
    countersUnwritten: int
    duplicates: int
    leaseReleased: bool
    playerCount: int
    rowsCreated: int
    rowsModerated: NotRequired[int]
    rowsRead: int
    rowsReplaced: int
    rowsSkipped: int
    rowsUnwritten: int
    rowsWritten: int


class SnapshotEntryOut(TypedDict):
    achievedAt: str | None
    country: str | None
    displayName: str | None
    playerId: str | None
    rank: int
    score: int | None


class SnapshotOut(TypedDict):
    entries: list[SnapshotEntryOut]
    leaderboardId: str
    playerCount: int
    reason: Literal["closed", "manual"]
    snapshotTakenAt: str
    topN: int


class SnapshotSummaryOut(TypedDict):
    playerCount: int
    reason: Literal["closed", "manual"]
    snapshotTakenAt: str


class SubmitResponse(TypedDict):
    boards: list[BoardOutcomeOut]
    playerId: str


class TieSlotOut(TypedDict):
    """
    A crowded slot's tie counters as the reconciler found (and, applied, left) them.
    """

    bucket: int
    built: bool
    cuts: int
    differences: int
    entries: int
    grain: int
    marked: int
    repaired: int
    sealed: bool
    skipped: int
    slot: int
    takenBack: int
    unmarked: int
    unwritten: int
    wasSealed: bool


class TierIn(TypedDict):
    """
    One tier of a league.
    """

    demote: NotRequired[int]
    id: str
    promote: NotRequired[int]


class TierOut(TypedDict):
    demote: int
    id: str
    promote: int


class VariantBoardsOut(TypedDict):
    periods: list[str]
    variant: str


class VoidedOut(TypedDict):
    voided: EntryOut


class WebhookIn(TypedDict):
    secret: str
    url: str


class WebhookOut(TypedDict):
    secretSet: Literal[True]
    updatedAt: str
    url: str


class AroundOut(TypedDict):
    entries: list[AroundEntryOut]
    leaderboardId: str
    period: PeriodOut
    rankKind: Literal["exact", "estimated"]
    scoreFormat: Literal["integer", "duration_ms"]


class BatchResultOut(TypedDict):
    """
    One item's answer: what `POST /v1/scores` would have answered for it alone.
    """

    body: SubmitResponse | Problem
    idempotencyKey: str
    replayed: bool
    retryAfter: NotRequired[int | None]
    status: int


class BoardDefinitionIn(TypedDict):
    """
    How a variant's boards rank. A field left out takes its default (not the stored value: a
    PUT says the whole definition). Unknown fields are refused (422).
    """

    cohortSize: NotRequired[int | None]
    joinRequired: NotRequired[bool]
    maxAttempts: NotRequired[int | None]
    maxEntrants: NotRequired[int | None]
    operator: NotRequired[Literal["best", "latest", "sum"]]
    order: NotRequired[Literal["desc", "asc"]]
    periods: NotRequired[list[Literal["alltime", "day", "week", "month", "season"]]]
    retentionDays: NotRequired[int | None]
    scoreFormat: NotRequired[Literal["integer", "duration_ms"]]
    scoreMax: NotRequired[int | None]
    scoreMin: NotRequired[int | None]
    seasons: NotRequired[list[SeasonIn]]
    shards: NotRequired[Literal[1, 2, 4, 8, 16, 32, 64]]
    tiers: NotRequired[list[TierIn]]
    timeZone: NotRequired[str]


class BoardDefinitionOut(TypedDict):
    cohortSize: int | None
    defined: bool
    definedAt: NotRequired[str | None]
    game: str
    joinRequired: bool
    maxAttempts: int | None
    maxEntrants: int | None
    operator: Literal["best", "latest", "sum"]
    order: Literal["desc", "asc"]
    periods: list[Literal["alltime", "day", "week", "month", "season"]]
    retentionDays: int
    scoreFormat: Literal["integer", "duration_ms"]
    scoreMax: int | None
    scoreMin: int | None
    seasons: list[SeasonOut]
    shards: Literal[1, 2, 4, 8, 16, 32, 64]
    tiers: list[TierOut]
    timeZone: str
    variant: str


class BoardPageOut(TypedDict):
    entries: list[EntryOut]
    leaderboardId: str
    nextCursor: str | None
    period: PeriodOut
    playerCount: int
    scoreFormat: Literal["integer", "duration_ms"]


class BoardStandingOut(TypedDict):
    best: int
    leaderboardId: str
    period: str
    rank: ExactRankOut | EstimatedRankOut


class DeliveriesOut(TypedDict):
    deliveries: list[DeliveryOut]
    nextCursor: str | None


class ErasureOut(TypedDict):
    playerId: str
    removed: RemovedOut


class GameBoardsOut(TypedDict):
    game: str
    variants: list[VariantBoardsOut]


class GroupOut(TypedDict):
    entries: list[GroupEntryOut]
    leaderboardId: str
    period: PeriodOut
    scoreFormat: Literal["integer", "duration_ms"]


class LeagueOut(TypedDict):
    cohortId: str | None
    period: str | None
    previous: NotRequired[PreviousPeriodOut | None]
    tier: str


class ReconcileReportOut(TypedDict):
    applied: bool
    boardId: str
    differences: list[CounterDifferenceOut]
    moderatedRows: NotRequired[int]
    playerCount: int
    repaired: list[CounterDifferenceOut]
    shards: NotRequired[list[ReconcileShardOut]]
    skipped: list[CounterDifferenceOut]
    tieSlots: NotRequired[list[TieSlotOut]]
    unsettled: list[CounterCellOut]
    unwritten: list[CounterDifferenceOut]


class SnapshotListOut(TypedDict):
    period: PeriodOut
    snapshots: list[SnapshotSummaryOut]


class StandingsOut(TypedDict):
    boards: list[BoardStandingOut]
    nextCursor: str | None
    playerId: str


class VariantsOut(TypedDict):
    default: DefaultDefinitionOut | None
    game: str
    variants: list[BoardDefinitionOut]


class BatchResponse(TypedDict):
    results: list[BatchResultOut]


class BoardListOut(TypedDict):
    """
    The games and variants that have boards, from the board registry.
    """

    currentPeriods: list[str]
    games: list[GameBoardsOut]
    nextCursor: str | None
