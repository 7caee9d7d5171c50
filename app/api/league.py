"""``GET /v1/games/{game}/variants/{variant}/players/{playerId}/league``: a player's tier and
cohort in a league (DESIGN.md section 16, decision 0040)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from app.api.deps import GameDep, LeaderboardDep, NowDep, PlayerPath, VariantPath, limit_reads
from app.api.routing import StrictQueryRoute
from app.api.schemas import LeagueOut, problem_responses
from app.domain.periods import Board
from app.errors import NotFound
from app.services.cohorts import LeagueAt

router = APIRouter(route_class=StrictQueryRoute, tags=["reads"])


@router.get(
    "/v1/games/{game}/variants/{variant}/players/{player_id}/league",
    operation_id="getLeague",
    response_model=LeagueOut,
    responses=problem_responses(404, 422, 429),
    dependencies=[Depends(limit_reads)],
    summary="A player's tier and cohort in a league (a variant with tiers)",
    description="A new player is in the lowest tier, with no cohort yet. previous says what "
    "their last period's close did (move: up, down, stay, or pending while that close is not "
    "done). 404 on a variant without tiers.",
)
async def get_league(
    leaderboard: LeaderboardDep,
    game: GameDep,
    variant: VariantPath,
    player_id: PlayerPath,
    now: NowDep,
) -> LeagueOut:
    definition = await leaderboard.rules.for_reading(game, variant)
    if definition.league is None:
        raise NotFound(f"{game}/{variant} is not a league (its definition has no tiers)")
    period = definition.calendar.containing(definition.periods[0], now)
    board = None if period is None else Board(game, variant, period)
    view = await leaderboard.cohorts.league(
        definition, LeagueAt(game, variant, board, now), player_id
    )
    return LeagueOut.of(view)
