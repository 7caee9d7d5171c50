"""Board definitions: how a variant's boards rank (``PUT`` with the admin scope; reading them is
public, as the boards are)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from app.api.deps import (
    ADMIN_ONLY,
    NO_DEADLINE,
    GameDep,
    LeaderboardDep,
    NowDep,
    VariantPath,
    limit_reads,
    object_body,
)
from app.api.openapi import component_ref
from app.api.routing import StrictQueryRoute
from app.api.schemas import (
    BoardDefinitionIn,
    BoardDefinitionOut,
    DefaultDefinitionOut,
    VariantsOut,
    problem_responses,
)

router = APIRouter(route_class=StrictQueryRoute)


_definition_body = object_body(BoardDefinitionIn)


@router.put(
    "/v1/games/{game}/variants/{variant}",
    operation_id="defineVariant",
    tags=["admin"],
    response_model=BoardDefinitionOut,
    responses=problem_responses(400, 401, 403, 409, 413, 415, 422),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": component_ref(BoardDefinitionIn)}},
        }
    },
    summary="Define how a variant's boards rank (an upsert; admin scope)",
    dependencies=[ADMIN_ONLY, NO_DEADLINE],
)
async def put_definition(
    leaderboard: LeaderboardDep,
    game: GameDep,
    variant: VariantPath,
    body: Annotated[BoardDefinitionIn, Depends(_definition_body)],
    now: NowDep,
) -> BoardDefinitionOut:
    rules = leaderboard.rules
    definition = body.definition(retention_days=rules.default.retention_days)
    stored = await rules.define(game, variant, definition, now=now)
    return BoardDefinitionOut.of(game, variant, stored.definition, defined_at=stored.defined_at)


@router.get(
    "/v1/games/{game}/variants/{variant}",
    operation_id="getDefinition",
    tags=["reads"],
    response_model=BoardDefinitionOut,
    responses=problem_responses(404, 422, 429),
    dependencies=[Depends(limit_reads)],
    summary="How a variant's boards rank (its definition, or the default it follows)",
)
async def get_definition(
    leaderboard: LeaderboardDep, game: GameDep, variant: VariantPath
) -> BoardDefinitionOut:
    shown = await leaderboard.rules.show(game, variant)
    return BoardDefinitionOut.of(game, variant, shown.definition, defined_at=shown.defined_at)


@router.get(
    "/v1/games/{game}/variants",
    operation_id="listVariants",
    tags=["reads"],
    response_model=VariantsOut,
    responses=problem_responses(422, 429),
    dependencies=[Depends(limit_reads)],
    summary="A game's defined variants, and the default an undefined one follows",
)
async def get_variants(leaderboard: LeaderboardDep, game: GameDep) -> VariantsOut:
    rules = leaderboard.rules
    defined = await rules.variants(game)
    return VariantsOut(
        game=game,
        variants=[
            BoardDefinitionOut.of(game, d.variant, d.definition, defined_at=d.defined_at)
            for d in defined
        ],
        default=DefaultDefinitionOut.of(rules.default) if rules.allows_undefined else None,
    )
