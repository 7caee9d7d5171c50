"""Admin endpoints (a key with the admin scope): seeding, reconciling, snapshotting a board now,
and erasing a player. Each calls the same method as the ``leaderboard`` command."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from app.api.deps import (
    ADMIN_ONLY,
    COHORT_404,
    NO_DEADLINE,
    BoardDep,
    CohortDep,
    LeaderboardDep,
    NowDep,
    PlayerPath,
    ReadDefinitionDep,
    StateDep,
    WriteDefinitionDep,
    read_text_body,
)
from app.api.routing import StrictQueryRoute
from app.api.schemas import (
    ErasureOut,
    ReconcileReportOut,
    SeedReportOut,
    SnapshotOut,
    problem_responses,
)
from app.domain.seed_file import parse_seed_text
from app.services.operations import SeedOptions

SnapshotTopQuery = Annotated[
    int,
    Query(
        ge=1,
        le=1000,
        description="entries kept; a snapshot is one item of at most 400 KB, so a top that "
        "does not fit is a 422 naming the largest that does",
    ),
]

router = APIRouter(route_class=StrictQueryRoute, tags=["admin"], dependencies=[ADMIN_ONLY])


@router.post(
    "/v1/leaderboards/{game}/{variant}/{period}/seed",
    operation_id="seedBoard",
    dependencies=[NO_DEADLINE],
    response_model=SeedReportOut,
    responses=problem_responses(400, 401, 403, 404, 409, 413, 415, 422),
    summary="Bulk-load a board under its seeding lease (CSV or JSON lines body)",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "text/csv": {"schema": {"type": "string"}},
                "application/x-ndjson": {"schema": {"type": "string"}},
            },
        }
    },
)
async def post_seed(
    state: StateDep,
    request: Request,
    board: BoardDep,
    definition: WriteDefinitionDep,
    now: NowDep,
    grace_seconds: Annotated[
        float | None,
        Query(
            alias="graceSeconds",
            ge=0,
            le=600,
            description="seconds to wait after taking the lease, for submissions already under "
            "way (default: the request deadline plus the lease cache, 11 s); 0 when none can be",
        ),
    ] = None,
) -> SeedReportOut:
    text, media_type = await read_text_body(request, state.max_body_bytes)
    seed = parse_seed_text(
        text,
        board=board,
        now=now,
        file_format="csv" if media_type == "text/csv" else "jsonl",
        definition=definition,
    )
    options = SeedOptions(grace_s=grace_seconds)
    report = await state.leaderboard.operations.seed(board, seed, options=options)
    return SeedReportOut.of(report)


@router.post(
    "/v1/leaderboards/{game}/{variant}/{period}/reconcile",
    operation_id="reconcileBoard",
    dependencies=[NO_DEADLINE],
    response_model=ReconcileReportOut,
    responses=problem_responses(401, 403, 404, 409, 422),
    summary="Recount a board twice and compare with its counters; repair with apply=true",
)
async def post_reconcile(
    leaderboard: LeaderboardDep,
    board: BoardDep,
    definition: ReadDefinitionDep,
    apply: Annotated[bool, Query(description="repair where both passes agree")] = False,
) -> ReconcileReportOut:
    report = await leaderboard.operations.reconcile(board, definition, apply=apply)
    return ReconcileReportOut.of(report)


@router.post(
    "/v1/leaderboards/{game}/{variant}/{period}/snapshots",
    operation_id="takeSnapshot",
    status_code=201,
    response_model=SnapshotOut,
    responses=problem_responses(401, 403, 404, 409, 422),
    summary="Take a snapshot of a board now",
)
async def post_snapshot(
    leaderboard: LeaderboardDep,
    board: BoardDep,
    definition: ReadDefinitionDep,
    now: NowDep,
    top: SnapshotTopQuery = 100,
) -> SnapshotOut:
    snapshot = await leaderboard.operations.snapshot(board, definition, now=now, top=top)
    return SnapshotOut.of(snapshot)


@router.post(
    "/v1/leaderboards/{game}/{variant}/{period}/cohorts/{cohort_id}/snapshots",
    operation_id="takeCohortSnapshot",
    status_code=201,
    response_model=SnapshotOut,
    responses=problem_responses(401, 403, 404, 409, 422),
    summary="Take a snapshot of one cohort of a board now",
    description=f"As the board's snapshot, of one cohort (a board of its own, decision 0039). "
    f"{COHORT_404}",
)
async def post_cohort_snapshot(
    leaderboard: LeaderboardDep, cohort: CohortDep, now: NowDep, top: SnapshotTopQuery = 100
) -> SnapshotOut:
    snapshot = await leaderboard.operations.snapshot(
        cohort.board, cohort.definition, now=now, top=top
    )
    return SnapshotOut.of(snapshot)


@router.delete(
    "/v1/players/{player_id}",
    operation_id="erasePlayer",
    response_model=ErasureOut,
    responses=problem_responses(401, 403, 409, 422, 503),
    summary="Erase a player everywhere (GDPR); idempotent",
)
async def delete_player(
    leaderboard: LeaderboardDep, player_id: PlayerPath, now: NowDep, response: Response
) -> ErasureOut:
    report = await leaderboard.operations.erase(player_id, now=now)
    if not report.complete:
        # Snapshot memberships younger than the grace period were left: erase again shortly.
        response.status_code = 202
    return ErasureOut.of(report)
