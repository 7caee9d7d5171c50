"""A burst of 1,000 new players onto one board at 1,000 requests in flight, over two app instances,
with per-item transaction conflicts injected as DynamoDB raises them: every one succeeds. The
headline burst runs on an unsharded ``best`` board. The other rules (``asc``/``latest``,
``sum``), which take the same write path for a new player, run a burst of 250 at 250 in flight:
the same two tasks contending for the same counter items through the same queue at the embedded
backend, in a quarter of the time. So does a board of 16 shards, whose counters are spread too
thinly to meet often at any size (docs/bursts.md): it proves the sharded write path under a queue.

The driver is ``bench/burst.py``'s, which also measures the other levels (docs/bursts.md).
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from app.bootstrap import Runtime
from bench.burst import run_level
from tests.faults import InFlightItems, install

HEADLINE = 1000
"""New players in the headline burst, all in flight at once."""
SMALLER = 250
"""New players in each other variant's burst, all in flight at once."""


@pytest.mark.parametrize(
    ("rules", "shards", "players"),
    [
        (("desc", "best"), 1, HEADLINE),
        (("asc", "latest"), 1, SMALLER),
        (("desc", "sum"), 1, SMALLER),
        (("desc", "best"), 16, SMALLER),
    ],
    ids=["best-1000", "asc-250", "sum-250", "best-16-shards-250"],
)
async def test_a_burst_of_new_players_all_in_flight_at_once_all_succeed(
    dynamo_endpoint: str, rules: tuple[str, str], shards: int, players: int
) -> None:
    result = await run_level(dynamo_endpoint, players, players, rules=rules, shards=shards)
    assert not result.failures, result.failures
    assert result.board == {p: s for p, [(s, _)] in result.submitted.items()}
    assert result.succeeded == players
    assert result.board_count == players  # every player on the board, once
    assert result.counters == (players, players)  # counted once each, at both levels
    # Every submission went through the conflict emulation (one transaction each at least).
    assert result.attempts >= players
    # The margin, for the log: the service allows 20 attempts a submission; measured bursts took at
    # most 8 (docs/bursts.md).
    print(f"conflicts {result.conflicts_injected}, most attempts {result.most_attempts} of 20")


async def test_a_burst_of_rounds_per_player_adds_each_to_the_total_once(
    dynamo_endpoint: str,
) -> None:
    """Twenty-five players, eight rounds each, all at once on a ``sum`` board: the rounds of one
    player, sent in turn to both tasks, contend for the same row; each lands once."""
    result = await run_level(dynamo_endpoint, 200, 25, rules=("desc", "sum"), rounds=8)
    assert not result.failures, result.failures
    assert result.succeeded == 200
    assert result.board == {p: sum(s for s, _ in rounds) for p, rounds in result.submitted.items()}
    assert result.counters == (25, 25)
    # The rounds met: a player's rows were written by both tasks at once (in one run of 25 players,
    # 174 cancelled transactions), so the retries after a conflict are what made the sums exact.
    assert result.conflicts_injected > 0
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
