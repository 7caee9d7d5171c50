"""A burst of 1,000 new players onto one board at 1,000 requests in flight, over two app instances,
with per-item transaction conflicts injected as DynamoDB raises them: every one succeeds, on an
unsharded board of each operator and on a board of 16 shards.

The driver is ``bench/burst.py``'s, which also measures the other levels (docs/bursts.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from app.bootstrap import Runtime
from bench.burst import run_level
from tests.faults import InFlightItems, install

PLAYERS = 1000
IN_FLIGHT = 1000


@pytest.mark.parametrize(
    ("rules", "shards"),
    [(("desc", "best"), 1), (("asc", "latest"), 1), (("desc", "sum"), 1), (("desc", "best"), 16)],
    ids=["best", "asc", "sum", "best-16-shards"],
)
async def test_a_thousand_new_players_at_a_thousand_in_flight_all_succeed(
    dynamo_endpoint: str, rules: tuple[str, str], shards: int
) -> None:
    result = await run_level(dynamo_endpoint, IN_FLIGHT, PLAYERS, rules=rules, shards=shards)
    assert not result.failures, result.failures
    assert result.board == {p: s for p, [(s, _)] in result.submitted.items()}
    assert result.succeeded == PLAYERS
    assert result.board_count == PLAYERS  # every player on the board, once
    assert result.counters == (PLAYERS, PLAYERS)  # counted once each, at both levels
    # Every submission went through the conflict emulation (one transaction each at least).
    assert result.attempts >= PLAYERS
    # The margin, for the log: the service allows 20 attempts a submission; measured bursts took at
    # most 8 (docs/bursts.md).
    print(f"conflicts {result.conflicts_injected}, most attempts {result.most_attempts} of 20")


async def test_a_burst_of_rounds_per_player_adds_each_to_the_total_once(
    dynamo_endpoint: str,
) -> None:
    """Fifty players, eight rounds each, all at once on a ``sum`` board: the rounds of one player
    contend for the same row; each lands once."""
    result = await run_level(dynamo_endpoint, 400, 50, rules=("desc", "sum"), rounds=8)
    assert not result.failures, result.failures
    assert result.succeeded == 400
    assert result.board == {p: sum(s for s, _ in rounds) for p, rounds in result.submitted.items()}
    assert result.counters == (50, 50)
    print(f"conflicts {result.conflicts_injected}, most attempts {result.most_attempts} of 20")


def _update(table: str, player: str) -> dict[str, Any]:
    return {
        "Update": {
            "TableName": table,
            "Key": {"playerId": {"S": player}, "leaderboardId": {"S": "b"}},
            "UpdateExpression": "ADD n :one",
            "ExpressionAttributeValues": {":one": {"N": "1"}},
        }
    }


async def test_the_emulation_cancels_a_transaction_on_an_item_another_one_holds(
    dynamo_endpoint: str, runtime: Runtime
) -> None:
    """What the burst above runs against: DynamoDB's TransactionConflict, item by item."""
    conflicts = InFlightItems()
    install(runtime.client, dynamo_endpoint, in_flight=conflicts)
    table = runtime.tables.scores
    items = [_update(table, "free"), _update(table, "held")]
    (held,) = InFlightItems.keys({"TransactItems": [items[1]]})
    conflicts.busy[held] += 1  # another transaction in flight holds this item
    with pytest.raises(ClientError) as raised:
        await runtime.client.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
    reasons = [r["Code"] for r in raised.value.response["CancellationReasons"]]
    assert reasons == ["None", "TransactionConflict"]
    scan = await runtime.client.scan(TableName=table, ConsistentRead=True)
    assert scan["Items"] == []  # cancelled: nothing written

    conflicts.busy[held] -= 1  # that transaction finished
    await runtime.client.transact_write_items(TransactItems=items)  # type: ignore[arg-type]
    scan = await runtime.client.scan(TableName=table, ConsistentRead=True)
    assert len(scan["Items"]) == 2
    assert conflicts.conflicts == 1
