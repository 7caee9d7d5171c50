"""Group (friends) boards: ``GET .../{period}/players?ids=`` answers those named on the board, in
board order, with groupRank, and each one's board rank with withRank=true; bad lists are 422s."""

from __future__ import annotations

import pytest

from app.bootstrap import Runtime
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, Service, make_settings, serve
from tests.support import now_ms, submit

BOARD = "/v1/leaderboards/trivia/classic/alltime"


async def _board(service: Service, scores: dict[str, int]) -> None:
    t = now_ms() - 60_000
    for i, (player, score) in enumerate(scores.items()):
        response = await submit(service.http, player=player, score=score, achieved_ms=t + i)
        assert response.status_code == 200, response.text


@pytest.mark.parametrize("order", ["desc", "asc"])
async def test_a_group_is_ranked_among_itself_in_board_order(service: Service, order: str) -> None:
    defined = await service.http.put(
        "/v1/games/trivia/variants/classic",
        json={"order": order, "periods": ["alltime"]},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert defined.status_code == 200
    await _board(service, {"ann": 50, "bob": 40, "cat": 30, "dan": 20, "eve": 10})
    response = await service.http.get(f"{BOARD}/players", params={"ids": "eve,nobody,bob,cat,bob"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["leaderboardId"] == "trivia#classic#alltime"
    expected = ["bob", "cat", "eve"] if order == "desc" else ["eve", "cat", "bob"]
    assert [e["entry"]["playerId"] for e in body["entries"]] == expected
    assert [e["groupRank"] for e in body["entries"]] == [1, 2, 3]
    assert all(e["rank"] is None and e["entry"]["rank"] is None for e in body["entries"])

    ranked = await service.http.get(
        f"{BOARD}/players", params={"ids": "eve,bob,cat", "withRank": "true"}
    )
    board_ranks = {"ann": 1, "bob": 2, "cat": 3, "dan": 4, "eve": 5}
    if order == "asc":
        board_ranks = {p: 6 - r for p, r in board_ranks.items()}
    for member in ranked.json()["entries"]:
        player = member["entry"]["playerId"]
        assert member["rank"]["kind"] == "exact"
        assert member["rank"]["rank"] == member["entry"]["rank"] == board_ranks[player]


async def test_nobody_of_the_group_on_the_board_is_an_empty_group(service: Service) -> None:
    response = await service.http.get(f"{BOARD}/players", params={"ids": "x,y"})
    assert response.status_code == 200
    assert response.json()["entries"] == []


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({}, "ids"),
        ({"ids": ""}, "must be player ids, comma-separated"),
        ({"ids": ",".join(f"p{i}" for i in range(101))}, "1 to 100 distinct players"),
        ({"ids": ",".join(f"p{i}" for i in range(21)), "withRank": "true"}, "1 to 20"),
        ({"ids": "ann,b#b"}, "must be player ids, comma-separated"),
        ({"ids": "ann,,bob"}, "must be player ids, comma-separated"),
        ({"ids": "ann, bob"}, "must be player ids, comma-separated"),
        ({"ids": "ann", "withRank": "maybe"}, "withRank"),
    ],
)
async def test_a_bad_group_is_a_422_problem(
    service: Service, params: dict[str, str], says: str
) -> None:
    response = await service.http.get(f"{BOARD}/players", params=params)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert says in response.text


async def test_a_hundred_distinct_ids_are_one_read(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    # A task holding definitions, as in production: the read reads none.
    settings = make_settings(dynamo_endpoint, table_names, definition_cache_seconds=10)
    async with serve(settings) as service:
        await _one_read(service)


async def _one_read(service: Service) -> None:
    await _board(service, {"p7": 7, "p42": 42})
    calls: list[str] = []

    def count(request: object, **_: object) -> None:
        target = getattr(request, "headers", {}).get("X-Amz-Target", b"")
        calls.append(target.decode() if isinstance(target, bytes) else str(target))

    client = service.runtime.client
    client.meta.events.register("before-send.dynamodb", count)
    try:
        ids = ",".join(f"p{i}" for i in range(100))
        response = await service.http.get(f"{BOARD}/players", params={"ids": ids})
    finally:
        client.meta.events.unregister("before-send.dynamodb", count)
    assert [e["entry"]["playerId"] for e in response.json()["entries"]] == ["p42", "p7"]
    assert [c.rsplit(".", 1)[-1] for c in calls] == ["BatchGetItem"]
