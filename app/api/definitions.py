"""Board definitions: how a variant's boards rank (``PUT`` with the admin scope; reading them is
public, as the boards are)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import ValidationError

from app.api.deps import NowDep, PathId, PrincipalDep, StateDep, limit_reads, read_json_body
from app.api.invalid import invalid_input, validation_errors
from app.api.routing import StrictQueryRoute
from app.api.schemas import (
    RESERVED_GAMES,
    BoardDefinitionIn,
    BoardDefinitionOut,
    DefaultDefinitionOut,
    VariantsOut,
    problem_responses,
)
from app.errors import InvalidInput
from app.services.definitions import (
    DefinePorts,
    define_boards,
    list_definitions,
    show_definition,
)

router = APIRouter(route_class=StrictQueryRoute)


async def _game(game: PathId) -> str:
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
    response_model=BoardDefinitionOut,
    responses=problem_responses(400, 401, 403, 409, 413, 415, 422),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": BoardDefinitionIn.model_json_schema(by_alias=True)}
            },
        }
    },
    summary="Define how a variant's boards rank (an upsert; admin scope)",
)
async def put_definition(
    state: StateDep,
    principal: PrincipalDep,
    game: GameDep,
    variant: PathId,
    body: Annotated[BoardDefinitionIn, Depends(_definition_body)],
    now: NowDep,
) -> BoardDefinitionOut:
    principal.require_admin()
    stored = await define_boards(
        definitions=state.definitions,
        ports=DefinePorts.of(state.stores),
        policy=state.policies.redefine,
        game=game,
        variant=variant,
        definition=body.definition(retention_days=state.definitions.default.retention_days),
        now=now,
    )
    return BoardDefinitionOut.of(game, variant, stored.definition, defined_at=stored.defined_at)


@router.get(
    "/v1/games/{game}/variants/{variant}",
    response_model=BoardDefinitionOut,
    responses=problem_responses(404, 422, 429),
    dependencies=[Depends(limit_reads)],
    summary="How a variant's boards rank (its definition, or the default it follows)",
)
async def get_definition(state: StateDep, game: GameDep, variant: PathId) -> BoardDefinitionOut:
    shown = await show_definition(definitions=state.definitions, game=game, variant=variant)
    return BoardDefinitionOut.of(game, variant, shown.definition, defined_at=shown.defined_at)


@router.get(
    "/v1/games/{game}/variants",
    response_model=VariantsOut,
    responses=problem_responses(422, 429),
    dependencies=[Depends(limit_reads)],
    summary="A game's defined variants, and the default an undefined one follows",
)
async def get_variants(state: StateDep, game: GameDep) -> VariantsOut:
    defined = await list_definitions(store=state.stores.definitions, game=game)
    default = state.definitions.default
    return VariantsOut(
        game=game,
        variants=[
            BoardDefinitionOut.of(game, d.variant, d.definition, defined_at=d.defined_at)
            for d in defined
        ],
        default=DefaultDefinitionOut(
            order=default.order.value,
            operator=default.operator.value,
            periods=[p.value for p in default.periods],
            retention_days=default.retention_days,
        )
        if state.definitions.allows_undefined
        else None,
    )
