"""Admin endpoints (admin-scoped key): seeding and reconciling a board (snapshots and erasure
too, as they land). Each calls the same service function as the ``leaderboard`` command."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response

from app.api.deps import PrincipalDep, StateDep, limit_reads, read_text_body
from app.api.routes import PathId, PeriodParam, _problems, parse_board
from app.services.erasure import erase_player
from app.services.reconcile import reconcile_board
from app.services.seeding import SeedPolicy, parse_seed_text, seed_board
from app.services.snapshots import get_snapshot, list_snapshots, take_snapshot
from app.store.operations import BoardOperations

admin = APIRouter()


def _operations(state: StateDep) -> BoardOperations:
    return BoardOperations(
        state.store.client,
        state.store.tables,
        counter_shards=state.settings.counter_shards,
        in_flight=state.store.in_flight,
    )


def report_document(report: Any) -> dict[str, Any]:
    """A service report as JSON: its dataclass fields, camelCased at the top level."""
    fields = dataclasses.asdict(report)
    return {_camel(name): value for name, value in fields.items()}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@admin.post(
    "/v1/leaderboards/{game}/{variant}/{period}/seed",
    responses=_problems(400, 401, 403, 409, 413, 415, 422),
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
    principal: PrincipalDep,
    request: Request,
    game: PathId,
    variant: PathId,
    period: PeriodParam,
) -> dict[str, Any]:
    principal.require_admin()
    now = datetime.now(UTC)
    board = parse_board(game, variant, period, now)
    text, media_type = await read_text_body(request, state.settings)
    seed = parse_seed_text(
        text,
        board=board,
        now=now,
        file_format="csv" if media_type == "text/csv" else "jsonl",
    )
    report = await seed_board(
        store=_operations(state),
        board=board,
        seed=seed,
        policy=SeedPolicy.from_settings(state.settings),
    )
    return report_document(report)


@admin.post(
    "/v1/leaderboards/{game}/{variant}/{period}/reconcile",
    responses=_problems(401, 403, 409, 422),
    summary="Recount a board twice and compare with its counters; repair with apply=true",
)
async def post_reconcile(
    state: StateDep,
    principal: PrincipalDep,
    game: PathId,
    variant: PathId,
    period: PeriodParam,
    apply: Annotated[bool, Query(description="repair where both passes agree")] = False,
) -> dict[str, Any]:
    principal.require_admin()
    board = parse_board(game, variant, period, datetime.now(UTC))
    report = await reconcile_board(
        store=_operations(state),
        board=board,
        layout=state.policy.layout,
        retention=state.settings.retention,
        apply=apply,
    )
    return report_document(report)


snapshots = APIRouter(dependencies=[Depends(limit_reads)])


@snapshots.get(
    "/v1/leaderboards/{game}/{variant}/{period}/snapshots",
    responses=_problems(422, 429),
    summary="A board's snapshots, newest first",
)
async def get_snapshots(
    state: StateDep, game: PathId, variant: PathId, period: PeriodParam
) -> dict[str, Any]:
    board = parse_board(game, variant, period, datetime.now(UTC))
    found = await list_snapshots(archive=state.archive, board=board)
    return {"snapshots": [summary.document() for summary in found]}


SnapshotTime = Annotated[
    str,
    Path(
        description="snapshotTakenAt as listed, an ISO 8601 UTC time (a time the calendar has, "
        "or 422)",
        examples=["2026-11-30T00:00:00.000Z"],
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$",
    ),
]


@snapshots.get(
    "/v1/leaderboards/{game}/{variant}/{period}/snapshots/{snapshot_taken_at}",
    responses=_problems(404, 422, 429),
    summary="One snapshot: the board's top and player count when it was taken",
)
async def get_one_snapshot(
    state: StateDep,
    game: PathId,
    variant: PathId,
    period: PeriodParam,
    snapshot_taken_at: SnapshotTime,
) -> dict[str, Any]:
    board = parse_board(game, variant, period, datetime.now(UTC))
    snapshot = await get_snapshot(archive=state.archive, board=board, taken_at=snapshot_taken_at)
    return snapshot.document()


@admin.post(
    "/v1/leaderboards/{game}/{variant}/{period}/snapshots",
    status_code=201,
    responses=_problems(401, 403, 404, 409, 422),
    summary="Take a snapshot of a board now",
)
async def post_snapshot(
    state: StateDep,
    principal: PrincipalDep,
    game: PathId,
    variant: PathId,
    period: PeriodParam,
    top: Annotated[int, Query(ge=1, le=1000, description="entries kept")] = 100,
) -> dict[str, Any]:
    principal.require_admin()
    now = datetime.now(UTC)
    board = parse_board(game, variant, period, now)
    snapshot = await take_snapshot(
        store=state.store,
        archive=state.archive,
        board=board,
        now=now,
        retention=state.settings.retention,
        top_n=top,
    )
    return snapshot.document()


@admin.delete(
    "/v1/players/{player_id}",
    responses=_problems(401, 403, 409, 422, 503),
    summary="Erase a player everywhere (GDPR); idempotent",
)
async def delete_player(
    state: StateDep, principal: PrincipalDep, player_id: PathId, response: Response
) -> dict[str, Any]:
    principal.require_admin()
    report = await erase_player(
        store=state.archive,
        player_id=player_id,
        layout=state.policy.layout,
        now=datetime.now(UTC),
    )
    document = report.document()
    if not report.complete:
        # Snapshot memberships younger than the grace period were left: erase again shortly.
        response.status_code = 202
    return document
