"""``POST .../claims/{playerId}``: a game server claims a player's reward on a closed board,
exactly once (docs/operations.md, "Claims")."""

from __future__ import annotations

from fastapi import APIRouter, Response

from app.api.deps import BoardDep, NowDep, PlayerPath, PrincipalDep, StateDep, WriteLimitDep
from app.api.ratelimit import ratelimit_headers
from app.api.request_keys import OptionalIdempotencyKey, request_token
from app.api.routing import StrictQueryRoute
from app.api.schemas import ClaimOut, problem_responses
from app.services.seasons import ClaimAsk

router = APIRouter(route_class=StrictQueryRoute, tags=["submissions"])


@router.post(
    "/v1/leaderboards/{game}/{variant}/{period}/claims/{player_id}",
    operation_id="claimReward",
    status_code=201,
    response_model=ClaimOut,
    responses={
        200: {"model": ClaimOut, "description": "claimed before: the same body; grant nothing"},
        **problem_responses(401, 403, 404, 409, 422, 429, 503),
    },
    summary="Claim a player's reward on a closed board: 201 the first time, 200 after",
)
async def post_claim(
    state: StateDep,
    principal: PrincipalDep,
    limit: WriteLimitDep,
    board: BoardDep,
    player_id: PlayerPath,
    now: NowDep,
    response: Response,
    idempotency_key: OptionalIdempotencyKey = None,
) -> ClaimOut:
    principal.require_submit(board.game)
    leaderboard = state.leaderboard
    definition = await leaderboard.rules.for_reading_board(board)
    outcome = await leaderboard.claims.claim(
        ClaimAsk(board, definition, player_id, now, request_token(principal.name, idempotency_key))
    )
    response.headers.update(ratelimit_headers(limit))
    if not outcome.first:
        response.status_code = 200
    return ClaimOut.of(outcome.claim)
