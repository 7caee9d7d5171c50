"""The board registry (the ``BoardRegistry`` port): ``registry#boards`` / ``<board>``, with
``registeredAt``, ``expiresAt`` (day and week boards, with their rows) and, once taken,
``closedSnapshotAt``. Its partition key holds ``#``, which no player id can, so no player's rows
share it. One small partition, written once per board (a conditional put), read by the
closed-period snapshot job.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from app.domain.clock import iso_ms, to_ms
from app.domain.storage_keys import REGISTRY_PK
from app.services.ports import RegisteredBoard, RegistryPage
from app.store.client import Dynamo
from app.store.items import Item, get_n, get_s, key, n, partition_after, s
from app.store.tables import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


def registry_key(board_id: str) -> dict[str, AttributeValueTypeDef]:
    return key(REGISTRY_PK, board_id)


class RegistryItems:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
        item: dict[str, AttributeValueTypeDef] = {
            **registry_key(board_id),
            "registeredAt": s(iso_ms(to_ms(datetime.now(UTC)))),
        }
        if expires_at is not None:
            item[TTL_ATTRIBUTE] = n(expires_at)
        return await self._dynamo.applied(
            self._dynamo.put_item(
                "registering the board",
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(playerId)",
            )
        )

    async def registered_boards(self, *, prefix: str = "") -> list[RegisteredBoard]:
        condition = "playerId = :p"
        values: dict[str, AttributeValueTypeDef] = {":p": s(REGISTRY_PK)}
        if prefix:  # board ids start with their game and variant: one key condition
            condition += " AND begins_with(leaderboardId, :prefix)"
            values[":prefix"] = s(prefix)
        items = await self._dynamo.query_all(
            "reading the board registry",
            TableName=self._table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ConsistentRead=True,
        )
        return [_registered(item) for item in items]

    async def registered_page(self, *, after: str, limit: int) -> RegistryPage:
        condition, values = partition_after(REGISTRY_PK, after)
        page = await self._dynamo.query(
            "reading a page of the board registry",
            TableName=self._table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            Limit=limit,
        )
        last = page.get("LastEvaluatedKey")
        return RegistryPage(
            [_registered(item) for item in page.get("Items", [])],
            None if last is None else get_s(last, "leaderboardId"),
        )


def _registered(item: Item) -> RegisteredBoard:
    return RegisteredBoard(
        board_id=get_s(item, "leaderboardId") or "",
        expires_at=get_n(item, TTL_ATTRIBUTE),
        closed_snapshot_at=get_s(item, "closedSnapshotAt"),
    )
