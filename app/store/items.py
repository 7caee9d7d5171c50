"""Attribute values as DynamoDB's wire format spells them, one way in and one way out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

Item = Mapping[str, "AttributeValueTypeDef"]

NULL: AttributeValueTypeDef = {"NULL": True}


def s(value: str) -> AttributeValueTypeDef:
    return {"S": value}


def n(value: int | float) -> AttributeValueTypeDef:
    return {"N": str(value)}


def s_or_null(value: str | None) -> AttributeValueTypeDef:
    return NULL if value is None else s(value)


def n_or_null(value: int | None) -> AttributeValueTypeDef:
    return NULL if value is None else n(value)


def get_s(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else value.get("S")


def get_n(item: Item, name: str) -> int | None:
    value = item.get(name)
    return None if value is None or "N" not in value else int(value["N"])


def key(partition: str, sort: str) -> dict[str, AttributeValueTypeDef]:
    """A Scores-table key: ``playerId`` / ``leaderboardId``."""
    return {"playerId": s(partition), "leaderboardId": s(sort)}


def partition_after(partition: str, after: str) -> tuple[str, dict[str, AttributeValueTypeDef]]:
    """The key condition and its values for a Scores-table partition's rows whose sort key is past
    ``after`` (all of them when it is empty): a key condition, not ``ExclusiveStartKey``, so that
    ``after`` need not be a row's key (a page cursor holds the last one sent)."""
    condition = "playerId = :p"
    values: dict[str, AttributeValueTypeDef] = {":p": s(partition)}
    if after:
        condition += " AND leaderboardId > :after"
        values[":after"] = s(after)
    return condition, values
