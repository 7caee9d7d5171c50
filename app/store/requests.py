"""Idempotency records (the ``RequestStore`` port, and the record a submission's transaction
writes): ``<player>`` / ``idem#<client>#<key>``, with ``requestHash``, ``status`` (``completed``),
``response`` (the stored outcome) and ``expiresAt`` (TTL). A record lives in its player's
partition, where erasure finds it with its one Query by player and no pointer to it is needed, so
a key is scoped to the calling client and the player; it has no ``rankKey``, so it never reaches
RankIndex.
"""

from __future__ import annotations

from typing import Any

from app.services.ports import COMPLETED, RequestRecord
from app.store.client import Dynamo
from app.store.items import Item, get_n, get_s, key, n, s
from app.store.tables import TTL_ATTRIBUTE


def record_put(
    table: str,
    player_id: str,
    record_id: str,
    *,
    request_hash: str,
    response_json: str,
    expires_at: int,
    now_ms: int,
) -> dict[str, Any]:
    """A transaction item: the completed record, where no live record holds the key (none, or one
    past its expiry)."""
    return {
        "Put": {
            "TableName": table,
            "Item": {
                **key(player_id, record_id),
                "requestHash": s(request_hash),
                "status": s(COMPLETED),
                "response": s(response_json),
                TTL_ATTRIBUTE: n(expires_at),
            },
            "ConditionExpression": "attribute_not_exists(playerId) OR expiresAt < :now_s",
            "ExpressionAttributeValues": {":now_s": n(now_ms // 1000)},
        }
    }


def record_of(item: Item) -> RequestRecord:
    return RequestRecord(
        request_hash=get_s(item, "requestHash") or "",
        status=get_s(item, "status") or "",
        response_json=get_s(item, "response"),
        expires_at=get_n(item, TTL_ATTRIBUTE),
    )


class RequestItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def erase_record(self, player_id: str, record_id: str) -> None:
        # Unconditional: a resend after a lost answer finds nothing and is as right as the first.
        await self._dynamo.delete_item(
            "erasing the idempotency record", TableName=self._table, Key=key(player_id, record_id)
        )
