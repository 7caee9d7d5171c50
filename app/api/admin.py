"""Admin endpoints (admin-scoped key): seeding and reconciling a board (snapshots and erasure
too, as they land). Each calls the same service function as the ``leaderboard`` command."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from app.api.deps import PrincipalDep, StateDep, read_text_body
from app.api.routes import PathId, PeriodParam, _problems, parse_board
from app.services.reconcile import reconcile_board
from app.services.seeding import SeedPolicy, parse_seed_text, seed_board
from app.store.operations import BoardOperations

admin = APIRouter()


def _operations(state: StateDep) -> BoardOperations:
    return BoardOperations(
        state.store.client, state.store.tables, counter_shards=state.settings.counter_shards
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
