"""A game's webhook (the ``WebhookStore`` port): ``webhook#<game>`` / ``webhook``, holding ``url``,
``secret`` (as given: the service signs with it) and ``updatedAt`` (epoch ms)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.domain.storage_keys import WEBHOOK_SORT_KEY, webhook_pk
from app.domain.webhooks import Webhook
from app.store.client import ConditionFailedWithItem, Dynamo
from app.store.items import get_n, get_s, key, n, s

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


def _key(game: str) -> dict[str, AttributeValueTypeDef]:
    return key(webhook_pk(game), WEBHOOK_SORT_KEY)


class WebhookItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def webhook_of(self, game: str) -> Webhook | None:
        item = await self._dynamo.get_item(
            "reading the game's webhook", table=self._table, key=_key(game)
        )
        if item is None:
            return None
        return Webhook(
            game=game,
            url=get_s(item, "url") or "",
            secret=get_s(item, "secret") or "",
            updated_at_ms=get_n(item, "updatedAt") or 0,
        )

    async def put_webhook(self, webhook: Webhook) -> None:
        await self._dynamo.put_item(
            "setting the game's webhook",
            TableName=self._table,
            Item={
                **_key(webhook.game),
                "url": s(webhook.url),
                "secret": s(webhook.secret),
                "updatedAt": n(webhook.updated_at_ms),
            },
        )

    async def remove_webhook(self, game: str) -> bool:
        try:
            await self._dynamo.delete_item(
                "removing the game's webhook",
                TableName=self._table,
                Key=_key(game),
                ConditionExpression="attribute_exists(playerId)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailedWithItem:
            # None there: none was set, or this delete, resent after its answer was lost, took it.
            # Either way none is set now; the caller's 404 may be a resend's, which is harmless.
            return False
        return True
