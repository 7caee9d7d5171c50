"""The mark on a player while they are erased (the ``ErasureMarks`` port): ``<player>`` /
``erasing``, which a submission reads with its state, and is refused while it is there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.domain.storage_keys import ERASING_SORT_KEY
from app.store.client import Dynamo
from app.store.items import key, n
from app.store.tables import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


def erasing_key(player_id: str) -> dict[str, AttributeValueTypeDef]:
    return key(player_id, ERASING_SORT_KEY)


class ErasureMarkItems:
    """The ``ErasureMarks`` port: the mark carries ``expiresAt``, so an eraser that dies leaves it
    to lapse on its own."""

    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def mark_erasing(self, player_id: str, *, until: int) -> None:
        await self._dynamo.put_item(
            "marking the player as being erased",
            TableName=self._table,
            Item={**erasing_key(player_id), TTL_ATTRIBUTE: n(until)},
        )

    async def clear_erasing(self, player_id: str) -> None:
        await self._dynamo.delete_item(
            "clearing the erasure mark", TableName=self._table, Key=erasing_key(player_id)
        )
