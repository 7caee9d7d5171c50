"""Seeding leases (the ``LeaseStore`` port): ``seedlock#<board>`` / ``<board>``, holding ``holder``,
``acquiredAt`` and ``expiresAt`` (epoch seconds, also the table's TTL attribute, so a dead seeder's
lease is eventually deleted too). A lease holds its board while ``expiresAt > now``.

Each holder's name is its own (host, process and a random part), so a conditional write that
botocore resends after a lost answer, and that then fails its condition, tells its own lease by
the holder DynamoDB returns with the failure."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.domain.clock import iso_ms, to_ms
from app.domain.shards import board_of_partition
from app.domain.storage_keys import lease_pk
from app.services.ports import Lease
from app.store.client import ConditionFailedWithItem, Dynamo
from app.store.items import Item, get_n, get_s, key, n, s
from app.store.tables import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

_FREE = "attribute_not_exists(playerId) OR expiresAt <= :now"


def lease_key(board_id: str) -> dict[str, AttributeValueTypeDef]:
    """The lease of a board; of a shard of a board (``app.domain.shards``), its board's."""
    board_id = board_of_partition(board_id)
    return key(lease_pk(board_id), board_id)


def no_live_lease(table: str, board_id: str, *, now_s: int) -> dict[str, Any]:
    """A transaction item that cancels the transaction while a live lease holds the board."""
    return {
        "ConditionCheck": {
            "TableName": table,
            "Key": lease_key(board_id),
            "ConditionExpression": _FREE,
            "ExpressionAttributeValues": {":now": n(now_s)},
        }
    }


class LeaseItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def read_lease(self, board_id: str) -> Lease | None:
        item = await self._dynamo.get_item(
            "reading the seeding lease", table=self._table, key=lease_key(board_id)
        )
        return lease_of(item)

    async def acquire_lease(
        self, board_id: str, *, holder: str, expires_at: int, now_s: int
    ) -> Lease | None:
        for _ in range(3):  # a lease in the way may be released between the put and the read
            try:
                await self._dynamo.put_item(
                    "taking the seeding lease",
                    TableName=self._table,
                    Item={
                        **lease_key(board_id),
                        "holder": s(holder),
                        "acquiredAt": s(iso_ms(to_ms(datetime.now(UTC)))),
                        TTL_ATTRIBUTE: n(expires_at),
                    },
                    ConditionExpression=_FREE,
                    ExpressionAttributeValues={":now": n(now_s)},
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ConditionFailedWithItem as failed:
                held = lease_of(failed.item)
                if held is not None and held.holder == holder:
                    return None  # this put, resent after its answer was lost: taken
                if held is not None:
                    return held
                continue
            return None
        return Lease(holder="(unknown: the lease keeps changing hands)", expires_at=now_s + 1)

    async def renew_lease(self, board_id: str, *, holder: str, expires_at: int, now_s: int) -> bool:
        # A resend after a lost answer meets the condition again: renewing is idempotent.
        return await self._dynamo.applied(
            self._dynamo.update_item(
                "renewing the seeding lease",
                TableName=self._table,
                Key=lease_key(board_id),
                UpdateExpression="SET expiresAt = :e",
                ConditionExpression="holder = :h AND expiresAt > :now",
                ExpressionAttributeValues={":e": n(expires_at), ":h": s(holder), ":now": n(now_s)},
            )
        )

    async def release_lease(self, board_id: str, *, holder: str) -> bool:
        try:
            await self._dynamo.delete_item(
                "releasing the seeding lease",
                TableName=self._table,
                Key=lease_key(board_id),
                ConditionExpression="holder = :h",
                ExpressionAttributeValues={":h": s(holder)},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailedWithItem as failed:
            # None left: released (by this delete, resent after its answer was lost); another
            # holder's: this one's had lapsed and was taken over.
            return failed.item is None
        return True


def lease_of(item: Item | None) -> Lease | None:
    if item is None:
        return None
    return Lease(holder=get_s(item, "holder") or "", expires_at=get_n(item, TTL_ATTRIBUTE) or 0)
