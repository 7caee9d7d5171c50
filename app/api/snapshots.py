"""Reading a board's snapshots (public, rate limited per client address)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Path

from app.api.deps import (
    COHORT_404,
    BoardDep,
    CohortDep,
    LeaderboardDep,
    NamedBoard,
    NowDep,
    limit_reads,
)
from app.api.patterns import SNAPSHOT_TIME_PATTERN
from app.api.routing import StrictQueryRoute
from app.api.schemas import PeriodOut, SnapshotListOut, SnapshotOut, problem_responses
from app.services.leaderboard import Leaderboard

router = APIRouter(
    route_class=StrictQueryRoute, tags=["reads"], dependencies=[Depends(limit_reads)]
)

SnapshotTime = Annotated[
    str,
    Path(
        description="snapshotTakenAt as listed, an ISO 8601 UTC time (a time the calendar has, "
        "or 422)",
        examples=["2026-11-30T00:00:00.000Z"],
        pattern=SNAPSHOT_TIME_PATTERN,
    ),
]


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}/snapshots",
    operation_id="listSnapshots",
    response_model=SnapshotListOut,
    responses=problem_responses(404, 422, 429),
    summary="A board's snapshots, newest first",
)
async def get_snapshots(
    leaderboard: LeaderboardDep, board: BoardDep, now: NowDep
) -> SnapshotListOut:
    defined = await leaderboard.rules.definitions.of(board.game, board.variant)
    return await _listed(leaderboard, NamedBoard(board, defined.definition), now)


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}/cohorts/{cohort_id}/snapshots",
    operation_id="listCohortSnapshots",
    response_model=SnapshotListOut,
    responses=problem_responses(404, 422, 429),
    summary="A cohort's snapshots, newest first",
    description=f"As the board's, of one cohort (a board of its own, decision 0039). {COHORT_404}",
)
async def get_cohort_snapshots(
    leaderboard: LeaderboardDep, cohort: CohortDep, now: NowDep
) -> SnapshotListOut:
    return await _listed(leaderboard, cohort, now)


async def _listed(leaderboard: Leaderboard, named: NamedBoard, now: datetime) -> SnapshotListOut:
    period = PeriodOut.of(named.board.period, named.definition.calendar, now)
    return SnapshotListOut.of(period, await leaderboard.reads.snapshots(named.board))


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}/snapshots/{snapshot_taken_at}",
    operation_id="getSnapshot",
    response_model=SnapshotOut,
    responses=problem_responses(404, 422, 429),
    summary="One snapshot: the board's top and player count when it was taken",
)
async def get_one_snapshot(
    leaderboard: LeaderboardDep, board: BoardDep, snapshot_taken_at: SnapshotTime
) -> SnapshotOut:
    return SnapshotOut.of(await leaderboard.reads.snapshot(board, snapshot_taken_at))


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}/cohorts/{cohort_id}/snapshots/{snapshot_taken_at}",
    operation_id="getCohortSnapshot",
    response_model=SnapshotOut,
    responses=problem_responses(404, 422, 429),
    summary="One snapshot of a cohort: its top and player count when it was taken",
    description=COHORT_404,
)
async def get_one_cohort_snapshot(
    leaderboard: LeaderboardDep, cohort: CohortDep, snapshot_taken_at: SnapshotTime
) -> SnapshotOut:
    return SnapshotOut.of(await leaderboard.reads.snapshot(cohort.board, snapshot_taken_at))
