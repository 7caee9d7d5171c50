"""``POST .../entrants/{playerId}``: a game server joins a player to a period board of a cohort
or tournament variant, exactly once (DESIGN.md section 16, decision 0039)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from app.api.deps import BoardDep, PlayerPath, PrincipalDep, StateDep, WriteLimitDep
from app.api.ratelimit import ratelimit_headers
from app.api.request_keys import OptionalIdempotencyKey, request_token
from app.api.routing import StrictQueryRoute
from app.api.schemas import EntrantOut, problem_responses
from app.services.cohorts import JoinAsk

router = APIRouter(route_class=StrictQueryRoute, tags=["submissions"])


@router.post(
    "/v1/leaderboards/{game}/{variant}/{period}/entrants/{player_id}",
    operation_id="joinBoard",
    status_code=201,
    response_model=EntrantOut,
    response_model_exclude_unset=True,
    responses={
        200: {"model": EntrantOut, "description": "joined before: the same body"},
        **problem_responses(401, 403, 404, 409, 422, 429, 503),
    },
    summary="Join a player to a period board: placed in a cohort, 201 the first time, 200 after",
    description="First come first placed: the player gets the next seat of the period board, "
    "in cohorts of the variant's cohortSize. 409 full past maxEntrants; 404 on a variant "
    "whose definition sets none of cohortSize, joinRequired, maxEntrants, maxAttempts.",
)
async def post_entrant(
    state: StateDep,
    principal: PrincipalDep,
    limit: WriteLimitDep,
    board: BoardDep,
    player_id: PlayerPath,
    response: Response,
    idempotency_key: OptionalIdempotencyKey = None,
) -> EntrantOut:
    principal.require_submit(board.game)
    leaderboard = state.leaderboard
    definition = await leaderboard.rules.for_reading_board(board)
    outcome = await leaderboard.cohorts.join(
        JoinAsk(board, definition, player_id, request_token(principal.name, idempotency_key))
    )
    response.headers.update(ratelimit_headers(limit))
    if not outcome.first:
        response.status_code = 200
    return EntrantOut.of(outcome.placement)
