"""Reading a board's snapshots (public, rate limited per client address)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from app.api.deps import BoardDep, LeaderboardDep, NowDep, limit_reads
from app.api.patterns import SNAPSHOT_TIME_PATTERN
from app.api.routing import StrictQueryRoute
from app.api.schemas import PeriodOut, SnapshotListOut, SnapshotOut, problem_responses

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
    period = PeriodOut.of(board.period, defined.definition.calendar, now)
    return SnapshotListOut.of(period, await leaderboard.reads.snapshots(board))


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
    snapshot = await leaderboard.reads.snapshot(board, snapshot_taken_at)
    return SnapshotOut.of(snapshot)
