"""The embedded backend's transactions: all or nothing, though it journals items instead of
copying tables (``app/local/moto_runner.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from app.bootstrap import Runtime
from tests.faults import faithful

PK = "playerId"
SK = "leaderboardId"


def _key(player: str, board: str = "b") -> dict[str, Any]:
    return {PK: {"S": player}, SK: {"S": board}}


async def _items(runtime: Runtime) -> dict[tuple[str, str], dict[str, Any]]:
    response = await runtime.client.scan(TableName=runtime.tables.scores, ConsistentRead=True)
    return {(item[PK]["S"], item[SK]["S"]): item for item in response["Items"]}


async def _seed(runtime: Runtime) -> None:
    for player, n in (("kept", 1), ("updated", 5), ("deleted", 7)):
        await runtime.client.put_item(
            TableName=runtime.tables.scores, Item={**_key(player), "n": {"N": str(n)}}
        )


def _actions(table: str, *, last_holds: bool) -> list[dict[str, Any]]:
    return [
        {"Put": {"TableName": table, "Item": {**_key("new"), "n": {"N": "1"}}}},
        {"Put": {"TableName": table, "Item": {**_key("kept"), "n": {"N": "2"}}}},
        {
            "Update": {
                "TableName": table,
                "Key": _key("updated"),
                "UpdateExpression": "ADD n :one SET tag = :t",
                "ExpressionAttributeValues": {":one": {"N": "1"}, ":t": {"S": "x"}},
            }
        },
        {"Delete": {"TableName": table, "Key": _key("deleted")}},
        {
            "Update": {  # an update creates the item it names when there is none
                "TableName": table,
                "Key": _key("created"),
                "UpdateExpression": "ADD n :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
        {
            "ConditionCheck": {
                "TableName": table,
                "Key": _key("absent"),
                "ConditionExpression": "attribute_not_exists(#p)"
                if last_holds
                else "attribute_exists(#p)",
                "ExpressionAttributeNames": {"#p": PK},
            }
        },
    ]


async def test_a_cancelled_transaction_leaves_every_item_as_it_was(runtime: Runtime) -> None:
    await _seed(runtime)
    before = await _items(runtime)
    with pytest.raises(ClientError) as raised:
        await runtime.client.transact_write_items(
            TransactItems=_actions(runtime.tables.scores, last_holds=False)  # type: ignore[arg-type]
        )
    assert raised.value.response["Error"]["Code"] == "TransactionCanceledException"
    assert await _items(runtime) == before


async def test_a_transaction_that_holds_writes_every_item(runtime: Runtime) -> None:
    await _seed(runtime)
    await runtime.client.transact_write_items(
        TransactItems=_actions(runtime.tables.scores, last_holds=True)  # type: ignore[arg-type]
    )
    after = await _items(runtime)
    assert set(after) == {("new", "b"), ("kept", "b"), ("updated", "b"), ("created", "b")}
    assert after[("kept", "b")]["n"] == {"N": "2"}
    assert after[("updated", "b")]["n"] == {"N": "6"}
    assert after[("updated", "b")]["tag"] == {"S": "x"}


async def test_a_transaction_refused_midway_leaves_every_item_as_it_was(runtime: Runtime) -> None:
    """moto applies items in order and refuses a second action on one item when it reaches it:
    what it applied before must be undone too."""
    await _seed(runtime)
    before = await _items(runtime)
    actions = _actions(runtime.tables.scores, last_holds=True)
    actions.append({"Delete": {"TableName": runtime.tables.scores, "Key": _key("new")}})
    # DynamoDB would refuse it before applying anything; moto's own refusal is under test here.
    with faithful.unvalidated(), pytest.raises(ClientError) as raised:
        await runtime.client.transact_write_items(TransactItems=actions)  # type: ignore[arg-type]
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert await _items(runtime) == before
