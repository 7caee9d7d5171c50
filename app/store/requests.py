"""Idempotency records and the player's pointers to them (the ``RequestStore`` port).

- a record: ``idem#<client>#<key>`` / ``idem``, with ``requestHash``, ``status`` (``in_progress``,
  ``completed``, ``erased``), ``owner`` (the request working on it), ``deadline`` (epoch ms: when an
  in-progress record may be taken over), ``response`` (the stored outcome) and ``expiresAt`` (TTL);
- a pointer: ``<player>`` / ``idem#<client>#<key>``, with ``expiresAt``: lets erasure find the
  records that hold a player's data with its one Query by player.

Neither has a ``rankKey``, so neither reaches RankIndex.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from app.errors import ConditionFailed
from app.services.ports import ERASED, IN_PROGRESS, RequestRecord
from app.store.client import ConditionFailedWithItem, Dynamo
from app.store.items import Item, get_n, get_s, key, n, s
from app.store.tables import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

REQUEST_SORT_KEY = "idem"
POINTER_PREFIX = "idem#"
_NAMES = {"#status": "status", "#response": "response", "#owner": "owner"}


class RequestItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    def _key(self, record_id: str) -> dict[str, AttributeValueTypeDef]:
        return key(record_id, REQUEST_SORT_KEY)

    async def reserve_request(
        self,
        record_id: str,
        *,
        request_hash: str,
        owner: str,
        deadline_ms: int,
        now_ms: int,
        expires_at: int,
    ) -> RequestRecord | None:
        try:
            await self._dynamo.put_item(
                "reserving the idempotency key",
                TableName=self._table,
                Item={
                    **self._key(record_id),
                    "requestHash": s(request_hash),
                    "status": s(IN_PROGRESS),
                    "owner": s(owner),
                    "deadline": n(deadline_ms),
                    TTL_ATTRIBUTE: n(expires_at),
                },
                ConditionExpression=(
                    "attribute_not_exists(playerId) OR expiresAt < :now_s"
                    " OR (#status = :in_progress AND deadline < :now_ms AND requestHash = :hash)"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":now_s": n(now_ms // 1000),
                    ":now_ms": n(now_ms),
                    ":in_progress": s(IN_PROGRESS),
                    ":hash": s(request_hash),
                },
                # The record in the way comes back with the refusal: a 409 or a replay costs
                # this one call.
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailed as refused:
            found = refused.item if isinstance(refused, ConditionFailedWithItem) else None
            if found is None:  # an endpoint that does not return the item: read it
                found = await self._read(record_id)
        else:
            return None
        if found is None:  # removed between the two calls: the caller may simply try again
            return RequestRecord("", "gone", None, 0, None)
        record = _record_of(found)
        if record.owner == owner and record.status == IN_PROGRESS:
            return None  # this very reservation: its response was lost and botocore resent it
        return record

    async def _read(self, record_id: str) -> Item | None:
        return await self._dynamo.get_item(
            "reading the idempotency record", table=self._table, key=self._key(record_id)
        )

    async def read_request(self, record_id: str) -> RequestRecord | None:
        found = await self._read(record_id)
        return None if found is None else _record_of(found)

    async def complete_request(
        self, record_id: str, *, owner: str, response_json: str, expires_at: int
    ) -> None:
        await self._dynamo.update_item(
            "storing the submission's outcome",
            TableName=self._table,
            Key=self._key(record_id),
            UpdateExpression="SET #status = :done, #response = :r, expiresAt = :e REMOVE deadline",
            ConditionExpression="#owner = :owner",
            ExpressionAttributeNames=_NAMES,
            ExpressionAttributeValues={
                ":done": s("completed"),
                ":r": s(response_json),
                ":e": n(expires_at),
                ":owner": s(owner),
            },
        )

    async def release_request(self, record_id: str, *, owner: str) -> None:
        with contextlib.suppress(ConditionFailed):  # taken over meanwhile: the new owner decides
            await self._dynamo.delete_item(
                "releasing the idempotency key",
                TableName=self._table,
                Key=self._key(record_id),
                ConditionExpression="#owner = :owner",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": s(owner)},
            )

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
            Key=self._key(record_id),
            UpdateExpression="SET #status = :erased REMOVE #response, requestHash, #owner, deadline",
            ConditionExpression=condition,
            ExpressionAttributeNames=_NAMES,
            ExpressionAttributeValues=values,
        )

    async def note_request(self, player_id: str, record_id: str, *, expires_at: int) -> None:
        await self._dynamo.put_item(
            "noting the request",
            TableName=self._table,
            Item={**key(player_id, record_id), TTL_ATTRIBUTE: n(expires_at)},
        )

    async def delete_pointer(self, player_id: str, record_id: str) -> None:
        await self._dynamo.delete_item(
            "removing the request pointer", TableName=self._table, Key=key(player_id, record_id)
        )


def _record_of(item: Item) -> RequestRecord:
    return RequestRecord(
        request_hash=get_s(item, "requestHash") or "",
        status=get_s(item, "status") or "",
        owner=get_s(item, "owner"),
        deadline_ms=get_n(item, "deadline") or 0,
        response_json=get_s(item, "response"),
    )
