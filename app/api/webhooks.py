"""A game's webhook (admin keys; DESIGN.md section 15, decision 0037): set, read and remove it,
and read its events' deliveries. The secret goes in and never comes out. Each route calls the same
method as the ``leaderboard webhooks`` commands."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Response

from app.api.deps import ADMIN_ONLY, GameDep, LeaderboardDep, NowDep, object_body
from app.api.openapi import component_ref
from app.api.reads import CursorQuery
from app.api.routing import StrictQueryRoute
from app.api.schemas import problem_responses
from app.api.schemas.webhooks import DeliveriesOut, WebhookIn, WebhookOut
from app.services.webhooks import WebhookAsk

router = APIRouter(route_class=StrictQueryRoute, tags=["webhooks"], dependencies=[ADMIN_ONLY])

_PATH = "/v1/games/{game}/webhook"
_webhook_body = object_body(WebhookIn)


@router.put(
    _PATH,
    operation_id="setWebhook",
    response_model=WebhookOut,
    responses=problem_responses(400, 401, 403, 413, 415, 422, 503),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": component_ref(WebhookIn)}},
        }
    },
    summary="Set the game's webhook: its URL and the secret events are signed with (admin scope)",
)
async def put_webhook(
    leaderboard: LeaderboardDep,
    game: GameDep,
    body: Annotated[WebhookIn, Depends(_webhook_body)],
    now: NowDep,
) -> WebhookOut:
    ask = WebhookAsk(game, body.url, body.secret, now)
    return WebhookOut.of(await leaderboard.webhooks.set(ask))


@router.get(
    _PATH,
    operation_id="getWebhook",
    response_model=WebhookOut,
    responses=problem_responses(401, 403, 404, 422, 503),
    summary="The game's webhook, without its secret (admin scope)",
)
async def get_webhook(leaderboard: LeaderboardDep, game: GameDep) -> WebhookOut:
    return WebhookOut.of(await leaderboard.webhooks.show(game))


@router.delete(
    _PATH,
    operation_id="removeWebhook",
    status_code=204,
    response_class=Response,
    responses=problem_responses(401, 403, 404, 422, 503),
    summary="Remove the game's webhook; events wait on, recorded as not sent (admin scope)",
)
async def delete_webhook(leaderboard: LeaderboardDep, game: GameDep) -> Response:
    await leaderboard.webhooks.remove(game)
    return Response(status_code=204)


@router.get(
    f"{_PATH}/deliveries",
    operation_id="listWebhookDeliveries",
    response_model=DeliveriesOut,
    responses=problem_responses(400, 401, 403, 422, 503),
    summary="The game's events, newest first, each with its delivery attempts (admin scope)",
)
async def get_deliveries(
    leaderboard: LeaderboardDep,
    game: GameDep,
    limit: Annotated[int, Query(ge=1, le=100, description="most events on the page")] = 20,
    cursor: CursorQuery = None,
) -> DeliveriesOut:
    page = await leaderboard.webhooks.deliveries(game, cursor=cursor, limit=limit)
    return DeliveriesOut.of(page)
