"""Public reads stay bounded whatever a key has created (issue 31, item 6): ``GET /v1/boards`` and
a player's standings come a page at a time, with a signed cursor, and each page's DynamoDB calls
have a bound that does not grow with the boards there are."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import structlog

from app.bootstrap import Runtime
from app.services.reads import MAX_LISTED_VARIANTS
from app.services.reads import _players as standings_module
from app.services.reads._players import MAX_STANDINGS, STANDINGS_QUERIES_PER_PAGE
from app.services.registry import REGISTRY_QUERIES_PER_PAGE
from app.store.tables import TableNames
from tests.conftest import Service, make_settings, serve
from tests.support import submit

VARIANTS = 130
"""More variants than one page of the list holds."""


async def _calls_of(http: httpx.AsyncClient, path: str, **params: Any) -> tuple[Any, int]:
    """The response body and the DynamoDB calls the request made (its ``request`` log line)."""
    with structlog.testing.capture_logs() as logs:
        response = await http.get(path, params=params)
    assert response.status_code == 200, response.text
    [calls] = [e["dynamodb_calls"] for e in logs if e["event"] == "request"]
    return response.json(), calls


async def _register_variants(service: Service, count: int) -> None:
    """What a submit key's flood of new variants leaves in the registry: each variant's all-time
    board and today's (registered as a submission would, without its rows)."""
    registry = service.runtime.stores.registry
    for i in range(count):
        for period in ("alltime", "day#2099-01-01"):
            await registry.register_board(f"flood#v{i:04d}#{period}", expires_at=None)


async def test_the_board_list_comes_a_page_of_variants_at_a_time(service: Service) -> None:
    await _register_variants(service, VARIANTS)
    seen: list[str] = []
    calls: list[int] = []
    cursor: str | None = None
    while True:
        params = {"limit": 50} | ({} if cursor is None else {"cursor": cursor})
        body, made = await _calls_of(service.http, "/v1/boards", **params)
        calls.append(made)
        variants = [v for g in body["games"] for v in g["variants"]]
        assert len(variants) <= 50
        assert all(v["periods"] == ["alltime", "day:2099-01-01"] for v in variants)
        seen += [v["variant"] for v in variants]
        cursor = body["nextCursor"]
        if cursor is None:
            break
    assert seen == [f"v{i:04d}" for i in range(VARIANTS)]  # each once, in order
    assert len(calls) == 3
    # The registry's rows (one Query: 260 rows), and each listed variant's definition (the tests
    # hold none: a read each); before pages, one request read all 130.
    assert max(calls) <= REGISTRY_QUERIES_PER_PAGE + 50
    assert calls[0] == 1 + 50


async def test_the_board_list_s_default_page_and_limits(service: Service) -> None:
    await _register_variants(service, VARIANTS)
    body = (await service.http.get("/v1/boards")).json()
    assert len(body["games"][0]["variants"]) == MAX_LISTED_VARIANTS
    assert body["nextCursor"] is not None
    rest = (await service.http.get("/v1/boards", params={"cursor": body["nextCursor"]})).json()
    assert len(rest["games"][0]["variants"]) == VARIANTS - MAX_LISTED_VARIANTS
    assert rest["nextCursor"] is None
    for params in ({"limit": 0}, {"limit": MAX_LISTED_VARIANTS + 1}):
        refused = await service.http.get("/v1/boards", params=params)
        assert refused.status_code == 422, params


async def _play_everywhere(http: httpx.AsyncClient, player: str, variants: int) -> None:
    """``player`` on ``3 * variants`` boards (all-time, day and week of each variant), with an
    idempotency record of each submission in their partition, as play leaves them."""
    for i in range(variants):
        response = await submit(http, player=player, score=10 + i, variant=f"v{i:03d}")
        assert response.status_code == 200, response.text


async def _all_standings(
    http: httpx.AsyncClient, player: str, *, limit: int
) -> tuple[list[dict[str, Any]], list[int]]:
    boards: list[dict[str, Any]] = []
    calls: list[int] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": limit} | ({} if cursor is None else {"cursor": cursor})
        body, made = await _calls_of(http, f"/v1/players/{player}/standings", **params)
        assert len(body["boards"]) <= limit
        boards += body["boards"]
        calls.append(made)
        cursor = body["nextCursor"]
        if cursor is None:
            return boards, calls


async def test_standings_come_a_page_at_a_time_each_board_once(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    # As in production, the definitions are held: a page's calls are its Queries and its ranks.
    settings = make_settings(dynamo_endpoint, table_names, definition_cache_seconds=10)
    async with serve(settings) as running:
        await _play_everywhere(running.http, "ann", 25)
        boards, calls = await _all_standings(running.http, "ann", limit=MAX_STANDINGS)
        small_pages, _ = await _all_standings(running.http, "ann", limit=7)
        too_many = await running.http.get(
            "/v1/players/ann/standings", params={"limit": MAX_STANDINGS + 1}
        )
    ids = [b["leaderboardId"] for b in boards]
    assert len(ids) == 75
    assert ids == sorted(set(ids))  # each board once, in id order
    assert small_pages == boards
    assert all(b["rank"] == {"kind": "exact", "rank": 1, "topPercent": 100.0} for b in boards)
    assert len(calls) == 4
    # A page: its Queries of the player's rows (the first page's reads past their 25 idempotency
    # records, which sort first: "idem#" < "trivia#"), then a rank read of each of its boards
    # (its coarse counters' partitions, a fine counter and its ties), however many boards the
    # player is on; before pages, one request read 75 boards' ranks.
    rank_read = settings.counter_shards + 2
    assert max(calls) <= STANDINGS_QUERIES_PER_PAGE + MAX_STANDINGS * rank_read
    assert too_many.status_code == 422


async def test_a_page_past_a_crowd_of_other_rows_may_be_empty_and_lead_on(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _play_everywhere(service.http, "ann", 8)  # 24 boards behind 8 idempotency records
    whole, _ = await _all_standings(service.http, "ann", limit=MAX_STANDINGS)
    # Two rows a Query, three Queries a page: the first page reads six records and no board.
    monkeypatch.setattr(standings_module, "STANDINGS_ROWS_PER_QUERY", 2)
    first = (await service.http.get("/v1/players/ann/standings")).json()
    assert first["boards"] == []
    assert first["nextCursor"] is not None
    paged, calls = await _all_standings(service.http, "ann", limit=MAX_STANDINGS)
    assert paged == whole
    assert len(whole) == 24
    assert len(calls) > 2


async def test_an_unknown_player_s_standings_are_one_empty_page(service: Service) -> None:
    body, calls = await _calls_of(service.http, "/v1/players/nobody/standings")
    assert body == {"playerId": "nobody", "boards": [], "nextCursor": None}
    assert calls == 1


@pytest.mark.parametrize(
    "path", ["/v1/boards", "/v1/players/ann/standings", "/v1/players/bob/standings"]
)
async def test_a_cursor_not_issued_for_that_read_is_a_400(service: Service, path: str) -> None:
    await _play_everywhere(service.http, "ann", 1)
    await _register_variants(service, 2)
    # ann's own cursor, good for ann's standings only.
    ann = (await service.http.get("/v1/players/ann/standings", params={"limit": 1})).json()
    board = (await service.http.get("/v1/boards", params={"limit": 1})).json()
    top = (await service.http.get("/v1/leaderboards/trivia/v000/alltime")).json()
    assert ann["nextCursor"] is not None
    assert board["nextCursor"] is not None
    cursors = ["nonsense", "e30.AAAA", top["nextCursor"] or "x.y"]
    cursors += [c for c in (ann["nextCursor"], board["nextCursor"]) if not _issued_for(path, c)]
    cursors += [_tampered(ann["nextCursor"]), _tampered(board["nextCursor"])]
    for cursor in cursors:
        response = await service.http.get(path, params={"cursor": cursor})
        assert response.status_code == 400, (cursor, response.text)
        assert response.headers["content-type"].startswith("application/problem+json")
        assert "cursor" in response.json()["detail"]


def _issued_for(path: str, cursor: str) -> bool:
    return (path == "/v1/players/ann/standings" and cursor.startswith("WyJzdGFuZGluZ3MjYW5u")) or (
        path == "/v1/boards" and cursor.startswith("WyJyZWdpc3RyeSNib2FyZHMi")
    )


def _tampered(cursor: str) -> str:
    payload, signature = cursor.split(".")
    return f"{payload}.{'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
