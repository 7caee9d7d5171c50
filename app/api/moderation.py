"""Moderation endpoints (admin keys; DESIGN.md section 14, decision 0036): hide or ban a player
in a game, restore them, void one entry, and read the game's moderated players and audit log.
Each calls the same method as the ``leaderboard moderate`` and ``leaderboard void`` commands."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from app.api.deps import (
    ADMIN_ONLY,
    NO_DEADLINE,
    BoardDep,
    GameDep,
    LeaderboardDep,
    NowDep,
    PlayerPath,
    PrincipalDep,
    ReadDefinitionDep,
    object_body,
)
from app.api.openapi import component_ref
from app.api.reads import CursorQuery
from app.api.routing import StrictQueryRoute
from app.api.schemas import problem_responses
from app.api.schemas.moderation import (
    ModeratedPlayersOut,
    ModerationIn,
    ModerationLogOut,
    ModerationOut,
    RestoredOut,
    VoidedOut,
)
from app.services.operations import ModerateAsk
from app.services.operations._moderation import MAX_REASON

router = APIRouter(
    route_class=StrictQueryRoute, tags=["moderation"], dependencies=[ADMIN_ONLY, NO_DEADLINE]
)

ReasonQuery = Annotated[str, Query(max_length=MAX_REASON, description="why, for the audit log")]
LimitQuery = Annotated[int, Query(ge=1, le=100, description="most items on the page")]
_PLAYER_PATH = "/v1/games/{game}/moderation/players/{player_id}"


_moderation_body = object_body(ModerationIn)


@router.put(
    _PLAYER_PATH,
    operation_id="moderatePlayer",
    response_model=ModerationOut,
    responses=problem_responses(400, 401, 403, 409, 413, 415, 422, 503),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": component_ref(ModerationIn)}},
        }
    },
    summary="Hide or ban a player on every board of a game (admin scope)",
)
async def put_moderation(
    leaderboard: LeaderboardDep,
    principal: PrincipalDep,
    game: GameDep,
    player_id: PlayerPath,
    body: Annotated[ModerationIn, Depends(_moderation_body)],
    now: NowDep,
) -> ModerationOut:
    ask = ModerateAsk(player_id, game, body.chosen, body.reason, principal.name, now)
    return ModerationOut.of(await leaderboard.operations.moderate(ask))


@router.delete(
    _PLAYER_PATH,
    operation_id="restorePlayer",
    response_model=RestoredOut,
    responses=problem_responses(401, 403, 404, 409, 422, 503),
    summary="Restore a moderated player: their entries come back as they are (admin scope)",
)
async def delete_moderation(
    leaderboard: LeaderboardDep,
    principal: PrincipalDep,
    game: GameDep,
    player_id: PlayerPath,
    now: NowDep,
    reason: ReasonQuery = "",
) -> RestoredOut:
    ask = ModerateAsk(player_id, game, None, reason, principal.name, now)
    return RestoredOut.of(await leaderboard.operations.restore(ask))


@router.get(
    "/v1/games/{game}/moderation/players",
    operation_id="listModeratedPlayers",
    response_model=ModeratedPlayersOut,
    responses=problem_responses(400, 401, 403, 422),
    summary="The game's moderated players, by player id (admin scope)",
)
async def get_moderated(
    leaderboard: LeaderboardDep,
    game: GameDep,
    limit: LimitQuery = 100,
    cursor: CursorQuery = None,
) -> ModeratedPlayersOut:
    page = await leaderboard.operations.moderated_players(game, cursor=cursor, limit=limit)
    return ModeratedPlayersOut.of(page)


@router.get(
    "/v1/games/{game}/moderation/log",
    operation_id="getModerationLog",
    response_model=ModerationLogOut,
    responses=problem_responses(400, 401, 403, 422),
    summary="The game's append-only moderation log, newest first (admin scope)",
)
async def get_log(
    leaderboard: LeaderboardDep,
    game: GameDep,
    limit: LimitQuery = 100,
    cursor: CursorQuery = None,
) -> ModerationLogOut:
    page = await leaderboard.operations.moderation_log(game, cursor=cursor, limit=limit)
    return ModerationLogOut.of(page)


@router.delete(
    "/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}",
    operation_id="voidEntry",
    response_model=VoidedOut,
    responses=problem_responses(401, 403, 404, 409, 422, 503),
    summary="Void a player's entry on one board (an impossible score); they may submit again",
)
async def delete_entry(
    leaderboard: LeaderboardDep,
    principal: PrincipalDep,
    board: BoardDep,
    definition: ReadDefinitionDep,
    player_id: PlayerPath,
    now: NowDep,
    reason: ReasonQuery = "",
) -> VoidedOut:
    ask = ModerateAsk(player_id, board.game, None, reason, principal.name, now)
    entry = await leaderboard.operations.void(board, definition, ask)
    return VoidedOut.of(entry)
