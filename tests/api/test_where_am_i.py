"""Where am I: exact ranks past the cap, honest ranges in crowded buckets, the players around,
and standings; the cap is lowered to 3 so that small boards exercise every path."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.bootstrap import Runtime
from app.store.tables import TableNames
from tests.conftest import make_settings, serve
from tests.support import now_ms, submit

CAP = 3
BOARD = "/v1/leaderboards/trivia/classic/alltime"


@pytest.fixture
async def http(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> AsyncIterator[httpx.AsyncClient]:
    async with serve(make_settings(dynamo_endpoint, table_names, rank_count_cap=CAP)) as running:
        yield running.http


async def _build_board(http: httpx.AsyncClient) -> list[str]:
    """Ten spread-out scores (each alone in its bucket) and eight tied on 500 (one bucket):
    returns the player ids in board order."""
    t0 = now_ms() - 600_000
    rows = [(f"spread{i}", 1000 * (i + 1), t0) for i in range(10)]
    rows += [(f"tied{i}", 500, t0 + i) for i in range(8)]
    semaphore = asyncio.Semaphore(6)

    async def post(player: str, score: int, t: int) -> None:
        async with semaphore:
            response = await submit(
                http, player=player, score=score, achieved_ms=t, rankDelta=False
            )
            assert response.status_code == 200, response.text

    await asyncio.gather(*(post(*row) for row in rows))
    return [p for p, _, _ in sorted(rows, key=lambda r: (-r[1], r[2], r[0]))]


async def test_ranks_are_exact_past_the_cap_and_ranges_hold_the_truth(
    http: httpx.AsyncClient,
) -> None:
    order = await _build_board(http)
    kinds = {}
    for true_rank, player in enumerate(order, start=1):
        response = await http.get(f"{BOARD}/players/{player}")
        assert response.status_code == 200, response.text
        body = response.json()
        rank = body["rank"]
        kinds[player] = rank["kind"]
        assert body["entry"]["playerId"] == player
        if rank["kind"] == "exact":
            assert rank["rank"] == true_rank, player
            assert body["entry"]["rank"] == true_rank
            assert rank["topPercent"] == round(100 * true_rank / len(order), 2)
        else:
            assert rank["rank"] is None
            assert body["entry"]["rank"] is None
            lo, hi = rank["rankRange"]
            assert lo <= true_rank <= hi, player
            assert lo <= rank["rankEstimate"] <= hi
            assert rank["topPercentRange"][0] <= rank["topPercentRange"][1]
    # Every spread player is exact, though most have more than CAP ahead of them; in the tie,
    # the first CAP are exact and the rest get ranges.
    assert all(kinds[f"spread{i}"] == "exact" for i in range(10))
    assert [kinds[f"tied{i}"] for i in range(8)] == ["exact"] * CAP + ["estimated"] * (8 - CAP)


async def test_around_a_player_in_board_order_with_ranks(http: httpx.AsyncClient) -> None:
    order = await _build_board(http)

    async def around(player: str, before: int, after: int) -> dict[str, Any]:
        response = await http.get(
            f"{BOARD}/players/{player}/around", params={"before": before, "after": after}
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    middle = order[5]
    body = await around(middle, 2, 3)
    assert body["rankKind"] == "exact"
    assert [e["playerId"] for e in body["entries"]] == order[3:9]
    assert [e["rank"] for e in body["entries"]] == [4, 5, 6, 7, 8, 9]

    top = await around(order[0], 5, 2)
    assert [e["playerId"] for e in top["entries"]] == order[0:3]
    assert top["entries"][0]["rank"] == 1

    bottom = await around(order[-1], 2, 5)
    assert [e["playerId"] for e in bottom["entries"]] == order[-3:]
    assert bottom["rankKind"] == "estimated"
    for offset, entry in enumerate(bottom["entries"], start=len(order) - 2):
        assert entry["rank"] is None
        lo, hi = entry["rankRange"]
        assert lo <= offset <= hi

    alone = await around(order[4], 0, 0)
    assert [e["playerId"] for e in alone["entries"]] == [order[4]]


async def test_standings_list_every_board_with_ranks(http: httpx.AsyncClient) -> None:
    order = await _build_board(http)
    response = await http.get(f"/v1/players/{order[1]}/standings")
    assert response.status_code == 200
    body = response.json()
    assert body["playerId"] == order[1]
    periods = sorted(b["period"].split(":")[0] for b in body["boards"])
    assert periods == ["alltime", "day", "week"]
    for board in body["boards"]:
        assert board["best"] == 9000
        assert board["rank"] == {"kind": "exact", "rank": 2, "topPercent": round(200 / 18, 2)}
    unknown = await http.get("/v1/players/nobody/standings")
    assert unknown.json() == {"playerId": "nobody", "boards": [], "nextCursor": None}


async def test_a_player_not_on_the_board_is_a_404_problem(http: httpx.AsyncClient) -> None:
    for path in (f"{BOARD}/players/nobody", f"{BOARD}/players/nobody/around"):
        response = await http.get(path)
        assert response.status_code == 404
        assert response.headers["content-type"].startswith("application/problem+json")
    bad = await http.get(f"{BOARD}/players/bad%23id")
    assert bad.status_code == 422
    wide = await http.get(f"{BOARD}/players/x/around", params={"before": 51})
    assert wide.status_code == 422


async def test_rank_delta_is_exact_where_a_read_would_be(http: httpx.AsyncClient) -> None:
    order = await _build_board(http)
    climb = await submit(http, player="tied7", score=1500, achieved_ms=now_ms() - 1000)
    board = climb.json()["boards"][0]
    assert "rankBefore" not in board  # it was deep in the crowded tie: only a range was known
    assert board["rankAfter"] == order.index("spread0") + 1
    read = (await http.get(f"{BOARD}/players/tied7")).json()
    assert read["rank"] == {
        "kind": "exact",
        "rank": board["rankAfter"],
        "topPercent": round(100 * board["rankAfter"] / 18, 2),
    }
