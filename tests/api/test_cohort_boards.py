"""A cohort is a board of its own (DESIGN.md section 16, decision 0039): a submission to a cohort
variant writes the player's row on their cohort too, in its one transaction, and
``GET .../{period}/cohorts/{cohortId}`` reads it as the board's top page reads; the whole board
reads as before."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from typing import Any

import httpx

from app.domain.periods import COHORT_MARK
from tests.api.test_definitions import define, top
from tests.api.test_moderation import moderate, restore
from tests.api.test_tournaments import AT, score
from tests.conftest import Service
from tests.faults import install
from tests.support import submit

BOARD = "/v1/leaderboards/trivia/classic/alltime"
PLAIN = "/v1/leaderboards/trivia/plain/alltime"


@contextlib.contextmanager
def recorded_calls(client: Any) -> Iterator[list[tuple[str, str]]]:
    """Every DynamoDB call the client sends meanwhile: its operation and its body."""
    calls: list[tuple[str, str]] = []

    def record(request: Any, **_: object) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else str(target)).rsplit(".")[-1]
        body = request.body
        calls.append((operation, body.decode() if isinstance(body, bytes) else str(body)))

    client.meta.events.register("before-send.dynamodb", record)
    try:
        yield calls
    finally:
        client.meta.events.unregister("before-send.dynamodb", record)


async def test_each_cohort_ranks_its_own_players_and_the_board_ranks_them_all(
    service: Service,
) -> None:
    http = service.http
    assert (await define(http, cohortSize=2, periods=["alltime"])).status_code == 200
    for player, value in (("ann", 10), ("bob", 30), ("cy", 20), ("dee", 5), ("eve", 1)):
        assert (await score(http, player, value)).status_code == 200
    assert (await score(http, "ann", 40)).status_code == 200  # a better score moves both rows
    assert await top(http) == [
        ("ann", 40, 1),
        ("bob", 30, 2),
        ("cy", 20, 3),
        ("dee", 5, 4),
        ("eve", 1, 5),
    ]
    assert await top(http, f"{BOARD}/cohorts/1") == [("ann", 40, 1), ("bob", 30, 2)]
    assert await top(http, f"{BOARD}/cohorts/2") == [("cy", 20, 1), ("dee", 5, 2)]
    page = (await http.get(f"{BOARD}/cohorts/3")).json()
    assert page["leaderboardId"] == "trivia#classic#alltime#~3"
    assert page["playerCount"] == 1
    assert page["period"]["id"] == "alltime"
    assert await top(http, f"{BOARD}/cohorts/4") == []


async def test_racing_first_submissions_fill_cohorts_all_but_the_last(service: Service) -> None:
    http = service.http
    assert (await define(http, cohortSize=3, periods=["alltime"])).status_code == 200
    sent = await asyncio.gather(*(score(http, f"p{i:02d}", i) for i in range(10)))
    assert {r.status_code for r in sent} <= {200, 503}, [r.text for r in sent]
    retried = [
        await score(http, f"p{i:02d}", i) for i, r in enumerate(sent) if r.status_code == 503
    ]
    assert {r.status_code for r in retried} <= {200}
    sizes = [len(await top(http, f"{BOARD}/cohorts/{c}")) for c in (1, 2, 3, 4, 5)]
    assert sizes == [3, 3, 3, 1, 0]
    assert len(await top(http)) == 10


async def test_a_variant_without_cohorts_has_no_cohort_boards(service: Service) -> None:
    answer = await service.http.get(f"{BOARD}/cohorts/1")
    assert answer.status_code == 404, answer.text
    assert (await service.http.get(f"{BOARD}/cohorts/0")).status_code == 422


async def test_cohort_boards_are_not_listed_as_boards(service: Service) -> None:
    http = service.http
    assert (await define(http, cohortSize=2, periods=["alltime"])).status_code == 200
    assert (await score(http, "ann", 10)).status_code == 200
    listed = (await http.get("/v1/boards")).json()
    text = str(listed)
    assert "#~" not in text
    assert "alltime" in text


async def _both_variants(http: httpx.AsyncClient) -> None:
    """The same four scores on ``classic`` (cohorts of 2) and on ``plain`` (no cohorts)."""
    plain = "/v1/games/trivia/variants/plain"
    assert (await define(http, plain, periods=["alltime"])).status_code == 200
    assert (await define(http, cohortSize=2, periods=["alltime"])).status_code == 200
    for player, value in (("ann", 10), ("bob", 30), ("cy", 20), ("dee", 50)):
        assert (await score(http, player, value)).status_code == 200
        sent = await submit(http, player=player, score=value, variant="plain", achieved_ms=AT)
        assert sent.status_code == 200


async def test_a_rank_read_adds_the_player_s_cohort_and_rank_in_it(service: Service) -> None:
    http = service.http
    await _both_variants(http)
    read = (await http.get(f"{BOARD}/players/cy")).json()
    assert read["rank"]["rank"] == 3
    assert read["cohort"] == {"cohortId": "2", "tier": None, "rank": 2}
    assert (await http.get(f"{BOARD}/players/dee")).json()["cohort"] == {
        "cohortId": "2",
        "tier": None,
        "rank": 1,
    }
    assert (await http.get(f"{BOARD}/players/ann")).json()["cohort"] == {
        "cohortId": "1",
        "tier": None,
        "rank": 2,
    }
    plain_read = (await http.get(f"{PLAIN}/players/cy")).json()
    assert "cohort" not in plain_read or plain_read["cohort"] is None


async def test_a_rank_in_a_cohort_costs_two_calls_and_no_round_trip_more(
    service: Service, dynamo_endpoint: str
) -> None:
    http = service.http
    await _both_variants(http)
    client = service.runtime.client
    with recorded_calls(client) as ordinary:
        assert (await http.get(f"{PLAIN}/players/cy")).status_code == 200
    with recorded_calls(client) as calls:
        read = await http.get(f"{BOARD}/players/cy")
    assert read.json()["cohort"] == {"cohortId": "2", "tier": None, "rank": 2}
    in_cohort = [operation for operation, body in calls if COHORT_MARK in body]
    # The cohort's part: the player's cohort row (one Query of their partition), then one COUNT.
    assert in_cohort == ["Query", "Query"], calls
    assert len(calls) - len(in_cohort) == len(ordinary), (ordinary, calls)
    # Read beside the board's rank: the read takes as many round trips as the plain variant's.
    faults = install(client, dynamo_endpoint)
    faults.delay_s = 0.3
    try:
        started = time.perf_counter()
        assert (await http.get(f"{PLAIN}/players/cy")).status_code == 200
        alone = time.perf_counter() - started
        started = time.perf_counter()
        assert (await http.get(f"{BOARD}/players/cy")).status_code == 200
        with_cohort = time.perf_counter() - started
    finally:
        faults.delay_s = 0.0
    assert with_cohort < alone + 0.2, (alone, with_cohort)


async def test_a_hidden_player_leaves_their_cohort_and_a_restore_brings_them_back(
    service: Service,
) -> None:
    http = service.http
    assert (await define(http, cohortSize=3, periods=["alltime"])).status_code == 200
    for player, value in (("ann", 10), ("bob", 30), ("cy", 20)):
        assert (await score(http, player, value)).status_code == 200
    assert (await moderate(http, "bob", "hide")).status_code == 200
    assert await top(http, f"{BOARD}/cohorts/1") == [("cy", 20, 1), ("ann", 10, 2)]
    assert (await http.get(f"{BOARD}/players/cy")).json()["cohort"] == {
        "cohortId": "1",
        "tier": None,
        "rank": 1,
    }
    assert (await restore(http, "bob")).status_code == 200
    assert [p for p, _, _ in await top(http, f"{BOARD}/cohorts/1")] == ["bob", "cy", "ann"]
