"""Idempotency records and the player's pointers to them (the ``RequestStore`` port, and the
items a submission's transaction writes).

- a record: ``idem#<client>#<key>`` / ``idem``, with ``requestHash``, ``status`` (``completed`` or
  ``erased``; ``in_progress`` with an ``owner`` and a ``deadline`` from earlier versions, which
  reserved a key first), ``response`` (the stored outcome) and ``expiresAt`` (TTL);
- a pointer: ``<player>`` / ``idem#<client>#<key>``, with ``expiresAt``: lets erasure find the
  records that hold a player's data with its one Query by player.

Neither has a ``rankKey``, so neither reaches RankIndex.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.services.ports import COMPLETED, ERASED, IN_PROGRESS, RequestRecord
from app.store.client import Dynamo
from app.store.items import Item, get_n, get_s, key, n, s
from app.store.tables import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

REQUEST_SORT_KEY = "idem"
POINTER_PREFIX = "idem#"
_NAMES = {"#status": "status", "#response": "response", "#owner": "owner"}


def record_put(
    table: str,
    record_id: str,
    *,
    request_hash: str,
    response_json: str,
    expires_at: int,
    now_ms: int,
) -> dict[str, Any]:
    """A transaction item: the completed record, where no live record holds the key (none, one
    past its expiry, or an in-progress one of an earlier version past its deadline)."""
    return {
        "Put": {
            "TableName": table,
            "Item": {
                **key(record_id, REQUEST_SORT_KEY),
                "requestHash": s(request_hash),
                "status": s(COMPLETED),
                "response": s(response_json),
                TTL_ATTRIBUTE: n(expires_at),
            },
            "ConditionExpression": (
                "attribute_not_exists(playerId) OR expiresAt < :now_s"
                " OR (#status = :in_progress AND deadline < :now_ms)"
            ),
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {
                ":now_s": n(now_ms // 1000),
                ":now_ms": n(now_ms),
                ":in_progress": s(IN_PROGRESS),
            },
        }
    }


def pointer_put(table: str, player_id: str, record_id: str, *, expires_at: int) -> dict[str, Any]:
    """A transaction item: the pointer from the player to the record, for erasure."""
    return {
        "Put": {
            "TableName": table,
            "Item": {**key(player_id, record_id), TTL_ATTRIBUTE: n(expires_at)},
        }
    }


def record_key(record_id: str) -> dict[str, AttributeValueTypeDef]:
    return key(record_id, REQUEST_SORT_KEY)


def record_of(item: Item) -> RequestRecord:
    return RequestRecord(
        request_hash=get_s(item, "requestHash") or "",
        status=get_s(item, "status") or "",
        owner=get_s(item, "owner"),
        deadline_ms=get_n(item, "deadline") or 0,
        response_json=get_s(item, "response"),
        expires_at=get_n(item, TTL_ATTRIBUTE),
    )


class RequestItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def read_request(self, record_id: str) -> RequestRecord | None:
        found = await self._dynamo.get_item(
            "reading the idempotency record", table=self._table, key=record_key(record_id)
        )
        return None if found is None else record_of(found)

    async def erase_request(self, record_id: str, *, owner: str | None) -> None:
        values: dict[str, AttributeValueTypeDef] = {":erased": s(ERASED)}
        if owner is None:
            condition = "attribute_exists(playerId) AND attribute_not_exists(#owner)"
        else:
            condition = "#owner = :owner"
            values[":owner"] = s(owner)
        # Dropping the owner also makes an in-flight completion of this request fail its
        # condition, instead of storing the player's response after the erasure.
        await self._dynamo.update_item(
            "erasing the idempotency record",
            TableName=self._table,
            Key=record_key(record_id),
            UpdateExpression="SET #status = :erased REMOVE #response, requestHash, #owner, deadline",
            ConditionExpression=condition,
            ExpressionAttributeNames=_NAMES,
            ExpressionAttributeValues=values,
        )

    async def delete_pointer(self, player_id: str, record_id: str) -> None:
        await self._dynamo.delete_item(
            "removing the request pointer", TableName=self._table, Key=key(player_id, record_id)
        )
