"""A board that holds rows of two orders (issue 27, item 5: what a change of order racing
submissions left before decision 0017) is repaired by one command, `leaderboard reconcile BOARD
--apply`: every row of the other order is given the board's order, the slots it left are
unsealed, and the recount rebuilds their tie counters. Before: the page lists the strays out of
place and two players are told `exact rank 1`; after, every rank is exact and true."""

from __future__ import annotations

from app.domain.keys import Order, RankKey
from app.store.tables import TableNames
from tests.conftest import Service
from tests.integration.test_cli import _run
from tests.integration.test_ties import BOARD, CAP, _check, _ranks, _rounds, _truth, crowded
from tests.support import submit

__all__ = ["crowded"]  # the fixture, used here by name

BOARD_ID = "trivia#classic#alltime"


async def test_a_board_of_two_orders_is_given_one_by_reconcile_apply(
    crowded: Service, dynamo_endpoint: str, table_names: TableNames
) -> None:
    http, runtime = crowded.http, crowded.runtime
    rows = _rounds(30, seed=7)
    for player, score, at in rows:
        response = await submit(http, player=player, score=score, achieved_ms=at, rankDelta=False)
        assert response.status_code == 200, response.text
    env = {"LEADERBOARD_RANK_COUNT_CAP": str(CAP)}
    built = _run(dynamo_endpoint, table_names, "reconcile", BOARD_ID, "--apply", env=env)
    assert built.returncode == 0, built.stderr

    # Three rows written in the other order ("lower is better"), as the race left them.
    strays = sorted(p for p, _, _ in rows)[:3]
    for player, score, at in rows:
        if player in strays:
            asc = RankKey(score, at, player, Order.ASC).encode()
            await runtime.client.update_item(
                TableName=runtime.tables.scores,
                Key={"playerId": {"S": player}, "leaderboardId": {"S": BOARD_ID}},
                UpdateExpression="SET rankKey = :k",
                ExpressionAttributeValues={":k": {"S": asc}},
            )
    truth = _truth(rows)
    page = await http.get(BOARD, params={"limit": 100})
    assert [e["playerId"] for e in page.json()["entries"]] != truth  # out of place

    dry = _run(dynamo_endpoint, table_names, "reconcile", BOARD_ID, env=env)
    assert dry.returncode == 0, dry.stderr
    assert "3 rows not in the board's order (desc) (use --apply" in dry.stdout, dry.stdout
    fixed = _run(dynamo_endpoint, table_names, "reconcile", BOARD_ID, "--apply", env=env)
    assert fixed.returncode == 0, fixed.stderr
    assert "3 given it, 0 moved meanwhile" in fixed.stdout, fixed.stdout

    page = await http.get(BOARD, params={"limit": 100})
    assert [e["playerId"] for e in page.json()["entries"]] == truth
    assert _check(await _ranks(crowded, truth), truth) == len(truth)
    again = _run(dynamo_endpoint, table_names, "reconcile", BOARD_ID, env=env)
    assert "not in the board's order" not in again.stdout
    assert "0 differences" in again.stdout, again.stdout
