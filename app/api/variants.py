"""Board definitions: how a variant's boards rank (``PUT`` with the admin scope; reading them is
public, as the boards are)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import ValidationError

from app.api.deps import (
    ADMIN_ONLY,
    NO_DEADLINE,
    GamePath,
    LeaderboardDep,
    NowDep,
    VariantPath,
    limit_reads,
    read_json_body,
)
from app.api.invalid import invalid_input, validation_errors
from app.api.openapi import component_ref
from app.api.routing import StrictQueryRoute
from app.api.schemas import (
    BoardDefinitionIn,
    BoardDefinitionOut,
    DefaultDefinitionOut,
    VariantsOut,
    problem_responses,
)
from app.domain.storage_keys import RESERVED_GAMES
from app.errors import InvalidInput

router = APIRouter(route_class=StrictQueryRoute)


async def _game(game: GamePath) -> str:
    if game in RESERVED_GAMES:
        raise InvalidInput(
            f"{game!r} is a reserved name", errors=[{"field": "game", "message": "reserved"}]
        )
    return game


GameDep = Annotated[str, Depends(_game)]


async def _definition_body(body: Annotated[Any, Depends(read_json_body)]) -> BoardDefinitionIn:
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    try:
        return BoardDefinitionIn.model_validate(body)
    except ValidationError as exc:
        raise invalid_input(validation_errors(exc.errors()), whole="body") from None


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
