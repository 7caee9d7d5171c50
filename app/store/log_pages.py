"""A newest-first page of an append-only log kept in one Scores-table partition (a game's
moderation log, its webhook events), continued from the sort key the last page ended on."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.store.client import Dynamo
from app.store.items import Item, get_s, s

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


async def page_before(
    dynamo: Dynamo, what: str, *, table: str, partition: str, before: str, limit: int
) -> tuple[list[Item], str | None]:
    """At most ``limit`` of the partition's rows, newest (greatest sort key) first, whose sort
    key is before ``before`` (all of them where it is empty); and the sort key to pass as
    ``before`` for the next page, or ``None`` on the last. A key condition, not
    ``ExclusiveStartKey``, so that ``before`` need not be a row's key (a cursor holds it)."""
    condition = "playerId = :p"
    values: dict[str, AttributeValueTypeDef] = {":p": s(partition)}
    if before:
        condition += " AND leaderboardId < :before"
        values[":before"] = s(before)
    page = await dynamo.query(
        what,
        TableName=table,
        KeyConditionExpression=condition,
        ExpressionAttributeValues=values,
        ScanIndexForward=False,
        Limit=limit,
    )
    items: list[Item] = page.get("Items", [])
    more = page.get("LastEvaluatedKey") is not None and items
    return items, get_s(items[-1], "leaderboardId") if more else None
