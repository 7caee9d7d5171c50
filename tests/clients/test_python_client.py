"""The Python client in clients/python, imported from its folder (not installed): its retry policy
against ``httpx.MockTransport``, then submissions, board walks, ranks and errors against the real
service in a subprocess, the example game server run as the README says, and the wheel
``uv build`` makes."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

# Imported by its path in the repository, not installed: what is tested is the folder's code.
from clients.python.leaderboard_client import (
    AsyncLeaderboardClient,
    Claim,
    Entrant,
    EstimatedRank,
    ExactRank,
    LeaderboardClient,
    LeaderboardError,
    Refused,
    Submission,
)
from tests.served import ROOT, ServiceExited, clean_environment, serve

CLIENT_DIR = ROOT / "clients" / "python"
README = CLIENT_DIR / "README.md"

KEY = "python-client-test-key"
READY_TIMEOUT_S = 60.0  # the service and its moto child start in about 4 s on an idle machine
BASE = "http://leaderboard.test"
SUBMITTED: dict[str, Any] = {"playerId": "p1", "boards": []}


def _problem(status: int, slug: str, retry_after: str | None = None) -> httpx.Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    body = {"type": f"/problems/{slug}", "title": slug, "status": status, "detail": "d"}
    return httpx.Response(
        status,
        json=body,
        headers={**headers, "Content-Type": "application/problem+json"},
    )


def _mocked(
    answers: list[httpx.Response | Exception], *, max_attempts: int = 5
) -> tuple[LeaderboardClient, list[httpx.Request], list[float]]:
    """A client whose transport gives ``answers`` in turn, the requests it saw, the waits it made."""
    seen: list[httpx.Request] = []
    waits: list[float] = []
    pending = iter(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = next(pending)
        if isinstance(answer, Exception):
            raise answer
        return answer

    http = httpx.Client(transport=httpx.MockTransport(handler))
    client = LeaderboardClient(BASE, "k", http=http, max_attempts=max_attempts, sleep=waits.append)
    return client, seen, waits


def _submit(client: LeaderboardClient) -> Any:
    return client.submit_score("p1", 10, "trivia", "classic")


# The retry policy, no service needed.


def test_503_and_429_are_retried_after_retry_after_with_one_key() -> None:
    client, seen, waits = _mocked(
        [
            _problem(503, "throttled", "2"),
            _problem(429, "rate-limited", "7"),
            _problem(409, "request-in-flight", "1"),
            httpx.Response(200, json=SUBMITTED),
        ]
    )
    done = _submit(client)
    assert waits == [2.0, 7.0, 1.0]
    assert done.attempts == 4
    keys = {request.headers["Idempotency-Key"] for request in seen}
    assert keys == {done.idempotency_key}
    assert len(done.idempotency_key) == 36  # a uuid4
    assert seen[0].headers["Authorization"] == "Bearer k"


def test_retry_after_waits_for_real_by_default() -> None:
    answers = iter([_problem(503, "busy", "1"), httpx.Response(200, json=SUBMITTED)])
    http = httpx.Client(transport=httpx.MockTransport(lambda _: next(answers)))
    client = LeaderboardClient(BASE, "k", http=http)
    started = time.monotonic()
    _submit(client)
    assert time.monotonic() - started >= 1.0


def test_a_long_retry_after_is_capped_and_attempts_are_bounded() -> None:
    client, seen, waits = _mocked([_problem(503, "unavailable", "3600")] * 3, max_attempts=3)
    with pytest.raises(LeaderboardError) as raised:
        _submit(client)
    assert waits == [30.0, 30.0]
    assert len(seen) == 3
    assert raised.value.status == 503
    assert raised.value.type == "/problems/unavailable"
    assert raised.value.attempts == 3
    assert raised.value.retry_after == 3600.0


@pytest.mark.parametrize(
    ("status", "slug"),
    [
        (400, "malformed-json"),
        (409, "conflict"),
        (422, "idempotency-key-reused"),
        (403, "forbidden"),
    ],
)
def test_other_client_errors_are_not_retried(status: int, slug: str) -> None:
    client, seen, waits = _mocked([_problem(status, slug, "1"), httpx.Response(200, json={})])
    with pytest.raises(LeaderboardError) as raised:
        _submit(client)
    assert (raised.value.status, raised.value.type) == (status, f"/problems/{slug}")
    assert len(seen) == 1
    assert waits == []


def test_transport_errors_are_retried_with_the_same_key_then_raised() -> None:
    client, seen, waits = _mocked(
        [
            httpx.ConnectError("refused"),
            httpx.ReadTimeout("slow"),
            httpx.Response(200, json=SUBMITTED),
        ]
    )
    done = _submit(client)
    assert len(seen) == 3
    assert {r.headers["Idempotency-Key"] for r in seen} == {done.idempotency_key}
    assert waits == [0.2, 0.4]  # no Retry-After to go by: a doubling backoff

    client, seen, _ = _mocked([httpx.ConnectError("refused")] * 2, max_attempts=2)
    with pytest.raises(httpx.ConnectError):
        _submit(client)
    assert len(seen) == 2


def test_an_estimated_rank_is_read_as_a_range() -> None:
    body = {
        "leaderboardId": "trivia#classic#alltime",
        "scoreFormat": "integer",
        "entry": {"rank": None, "playerId": "p1", "displayName": None, "country": None},
        "rank": {
            "kind": "estimated",
            "rank": None,
            "rankRange": [120, 180],
            "topPercentRange": [1.2, 1.8],
            "rankEstimate": 150,
        },
    }
    client, seen, _ = _mocked([httpx.Response(200, json=body)])
    got = client.player_rank("trivia", "classic", "day:2026-12-01", "p1")
    assert got.rank == EstimatedRank(
        rank_range=(120, 180), top_percent_range=(1.2, 1.8), rank_estimate=150
    )
    assert seen[0].url.path == "/v1/leaderboards/trivia/classic/day:2026-12-01/players/p1"


async def test_the_async_client_retries_and_walks() -> None:
    pages = {
        None: {"entries": [{"playerId": "a"}], "nextCursor": "c1"},
        "c1": {"entries": [{"playerId": "b"}], "nextCursor": None},
    }
    answers = iter([_problem(503, "busy", "3")])
    waits: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            return next(answers, httpx.Response(200, json=SUBMITTED))
        return httpx.Response(200, json=pages[request.url.params.get("cursor")])

    async def record(seconds: float) -> None:
        waits.append(seconds)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with AsyncLeaderboardClient(BASE, "k", http=http, sleep=record) as client:
        done = await client.submit_score("p1", 1, "trivia", "classic")
        walked = [entry["playerId"] async for entry in client.walk_board("t", "v", page_size=1)]
    await http.aclose()
    assert (done.attempts, waits) == (2, [3.0])
    assert walked == ["a", "b"]


CLAIMED: dict[str, Any] = {
    "playerId": "p1",
    "leaderboardId": "trivia#classic#day:2026-12-01",
    "rank": 3,
    "playerCount": 120,
    "claimedAt": "2026-12-02T00:05:00Z",
}


def _claim(client: LeaderboardClient, key: str | None = None) -> Claim:
    return client.claim_reward("trivia", "classic", "day:2026-12-01", "p1", idempotency_key=key)


def test_a_first_claim_is_first_and_a_repeat_is_not_with_the_same_body() -> None:
    client, seen, _ = _mocked(
        [httpx.Response(201, json=CLAIMED), httpx.Response(200, json=CLAIMED)]
    )
    first = _claim(client)
    again = _claim(client, "mine")
    assert (first.first, again.first) == (True, False)
    assert first.claim == again.claim == CLAIMED
    assert (first.rank, first.player_count, first.leaderboard_id) == (
        3,
        120,
        CLAIMED["leaderboardId"],
    )
    assert seen[0].method == "POST"
    assert seen[0].url.path == "/v1/leaderboards/trivia/classic/day:2026-12-01/claims/p1"
    assert len(first.idempotency_key) == 36  # a uuid4, made once per call
    assert [r.headers["Idempotency-Key"] for r in seen] == [first.idempotency_key, "mine"]


def test_a_claim_retried_after_a_lost_answer_keeps_its_key_and_its_201() -> None:
    client, seen, waits = _mocked(
        [
            httpx.ReadTimeout("the 201 never came"),
            _problem(503, "unavailable", "1"),
            httpx.Response(201, json=CLAIMED),
        ]
    )
    claim = _claim(client)
    assert (claim.first, claim.attempts) == (True, 3)
    assert {r.headers["Idempotency-Key"] for r in seen} == {claim.idempotency_key}
    assert waits == [0.2, 1.0]


def test_a_claim_before_the_close_raises_period_open_at_once() -> None:
    client, seen, waits = _mocked([_problem(409, "period-open", "3600"), httpx.Response(201)])
    with pytest.raises(LeaderboardError) as raised:
        _claim(client)
    assert (raised.value.status, raised.value.type) == (409, "/problems/period-open")
    assert raised.value.retry_after == 3600.0
    assert (len(seen), waits) == (1, [])


async def test_the_async_client_claims_first_then_repeat() -> None:
    answers = iter([httpx.Response(201, json=CLAIMED), httpx.Response(200, json=CLAIMED)])
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return next(answers)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with AsyncLeaderboardClient(BASE, "k", http=http) as client:
        first = await client.claim_reward("trivia", "classic", "day:2026-12-01", "p1")
        again = await client.claim_reward("trivia", "classic", "day:2026-12-01", "p1")
    await http.aclose()
    assert (first.first, again.first, first.claim == again.claim) == (True, False, True)
    assert seen[0].headers["Idempotency-Key"] != seen[1].headers["Idempotency-Key"]


ENTRANT: dict[str, Any] = {"playerId": "p1", "cohortId": "gold-2", "tier": "gold"}


def test_a_join_is_first_on_201_and_a_repeat_is_not_with_the_same_body() -> None:
    client, seen, waits = _mocked(
        [
            _problem(503, "unavailable", "1"),
            httpx.Response(201, json=ENTRANT),
            httpx.Response(200, json=ENTRANT),
        ]
    )
    first = client.join_board("trivia", "cup", "day:2026-12-06", "p1")
    again = client.join_board("trivia", "cup", "day:2026-12-06", "p1")
    assert (first.first, first.attempts, again.first, again.attempts) == (True, 2, False, 1)
    assert first.entrant == again.entrant == ENTRANT
    assert (first.player_id, first.cohort_id, first.tier) == ("p1", "gold-2", "gold")
    assert [(r.method, r.url.path) for r in seen] == [
        ("POST", "/v1/leaderboards/trivia/cup/day:2026-12-06/entrants/p1")
    ] * 3
    assert waits == [1.0]
    # One key for a join's retries (the service answers a retry of a placing join 201), a new
    # one for another join.
    keys = [r.headers["Idempotency-Key"] for r in seen]
    assert keys[0] == keys[1] != keys[2]


def test_a_join_to_a_full_board_raises_full_at_once() -> None:
    client, seen, waits = _mocked([_problem(409, "full"), httpx.Response(201, json=ENTRANT)])
    with pytest.raises(LeaderboardError) as raised:
        client.join_board("trivia", "cup", "day", "p1")
    assert (raised.value.status, raised.value.type) == (409, "/problems/full")
    assert (len(seen), waits) == (1, [])


def test_a_join_outside_cohorts_has_no_cohort_and_no_tier() -> None:
    client, _, _ = _mocked([httpx.Response(201, json={"playerId": "p1", "cohortId": None})])
    entrant = client.join_board("trivia", "cup", "day", "p1")
    assert (entrant.cohort_id, entrant.tier, entrant.first) == (None, None, True)


def test_the_top_of_a_cohort_and_the_league_are_read_from_their_paths() -> None:
    page: dict[str, Any] = {
        "leaderboardId": "trivia#cup#alltime#~gold-2",
        "entries": [],
        "nextCursor": None,
    }
    league: dict[str, Any] = {"tier": "gold", "cohortId": "gold-2", "period": "week:2026-W49"}
    client, seen, _ = _mocked([httpx.Response(200, json=page), httpx.Response(200, json=league)])
    assert client.top_of_cohort("trivia", "cup", "alltime", "gold-2", limit=5) == page
    assert client.league("trivia", "cup", "p1") == league
    assert [(r.url.path, dict(r.url.params)) for r in seen] == [
        ("/v1/leaderboards/trivia/cup/alltime/cohorts/gold-2", {"limit": "5"}),
        ("/v1/games/trivia/variants/cup/players/p1/league", {}),
    ]


async def test_the_async_client_joins_reads_a_cohort_and_a_league() -> None:
    page: dict[str, Any] = {"entries": [{"playerId": "p1"}], "nextCursor": None}
    league: dict[str, Any] = {"tier": "bronze", "cohortId": None, "period": "day:2026-12-06"}
    answers = iter(
        [
            httpx.Response(201, json=ENTRANT),
            httpx.Response(200, json=ENTRANT),
            httpx.Response(200, json=page),
            httpx.Response(200, json=league),
        ]
    )
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.method} {request.url.path}")
        return next(answers)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with AsyncLeaderboardClient(BASE, "k", http=http) as client:
        first = await client.join_board("trivia", "cup", "day", "p1")
        again = await client.join_board("trivia", "cup", "day", "p1")
        top = await client.top_of_cohort("trivia", "cup", "day", "3")
        placed = await client.league("trivia", "cup", "p1")
    await http.aclose()
    assert (first.first, again.first, top, placed) == (True, False, page, league)
    assert seen == [
        "POST /v1/leaderboards/trivia/cup/day/entrants/p1",
        "POST /v1/leaderboards/trivia/cup/day/entrants/p1",
        "GET /v1/leaderboards/trivia/cup/day/cohorts/3",
        "GET /v1/games/trivia/variants/cup/players/p1/league",
    ]


def _item_result(key: str, status: int, slug: str = "", retry_after: int | None = None) -> Any:
    if status == 200:
        return {"idempotencyKey": key, "status": 200, "replayed": False, "body": SUBMITTED}
    problem = {"type": f"/problems/{slug}", "title": slug, "status": status, "detail": "d"}
    result = {"idempotencyKey": key, "status": status, "replayed": False, "body": problem}
    return result | ({} if retry_after is None else {"retryAfter": retry_after})


ROUND: list[Any] = [
    {"playerId": p, "score": 10, "game": "trivia", "variant": "classic"}
    for p in ("ada", "bob", "cy", "dan")
]


def test_a_batch_sends_again_only_the_items_that_ask_with_their_own_keys() -> None:
    sent: list[list[dict[str, Any]]] = []
    waits: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        items = json.loads(request.content)["submissions"]
        sent.append(items)
        keys = [item["idempotencyKey"] for item in items]
        if len(sent) == 1:
            answered = [
                _item_result(keys[0], 200),
                _item_result(keys[1], 503, "throttled", 2),
                _item_result(keys[2], 422, "invalid-input"),
                _item_result(keys[3], 409, "request-in-flight", 1),
            ]
        else:
            answered = [_item_result(key, 200) for key in keys]
        return httpx.Response(200, json={"results": answered})

    http = httpx.Client(transport=httpx.MockTransport(handler))
    client = LeaderboardClient(BASE, "k", http=http, sleep=waits.append)
    results = client.submit_scores([*ROUND[:3], ROUND[3] | {"idempotencyKey": "mine"}])
    keys = [item["idempotencyKey"] for item in sent[0]]
    assert len(set(keys)) == 4
    assert keys[3] == "mine"
    assert [(i["playerId"], i["idempotencyKey"]) for i in sent[1]] == [
        ("bob", keys[1]),
        ("dan", "mine"),
    ]
    assert len(sent) == 2
    assert waits == [2.0]  # the longest retryAfter of the items sent again
    assert [r.idempotency_key for r in results] == [keys[0], keys[1], keys[2], "mine"]
    first, second, third, fourth = results
    assert isinstance(first, Submission)
    assert (first.response, first.attempts) == (SUBMITTED, 1)
    assert isinstance(second, Submission)
    assert second.attempts == 2
    assert isinstance(fourth, Submission)
    assert isinstance(third, Refused)
    assert (third.status, third.error.type, third.error.attempts) == (
        422,
        "/problems/invalid-input",
        1,
    )


def test_a_batch_refused_whole_is_sent_again_as_it_was_or_raised() -> None:
    sent: list[bytes] = []
    answers = iter(
        [
            _problem(503, "overloaded", "1"),
            httpx.Response(200, json={"results": [_item_result("k", 200)]}),
            _problem(422, "invalid-input"),
        ]
    )

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.content)
        return next(answers)

    http = httpx.Client(transport=httpx.MockTransport(handler))
    client = LeaderboardClient(BASE, "k", http=http, sleep=lambda _: None)
    [done] = client.submit_scores([ROUND[0]])
    assert isinstance(done, Submission)
    assert sent[0] == sent[1]  # the same items, the same keys
    with pytest.raises(LeaderboardError) as raised:
        client.submit_scores(
            [ROUND[0] | {"idempotencyKey": "k"}, ROUND[1] | {"idempotencyKey": "k"}]
        )
    assert raised.value.status == 422


async def test_the_async_client_sends_a_batch_again_as_asked() -> None:
    answers = iter([503, 200])
    waits: list[float] = []

    def handler(request: httpx.Request) -> httpx.Response:
        [item] = json.loads(request.content)["submissions"]
        status = next(answers)
        answered = _item_result(item["idempotencyKey"], status, "unavailable", 3)
        return httpx.Response(200, json={"results": [answered]})

    async def record(seconds: float) -> None:
        waits.append(seconds)

    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with AsyncLeaderboardClient(BASE, "k", http=http, sleep=record) as client:
        [result] = await client.submit_scores([ROUND[0]])
    await http.aclose()
    assert isinstance(result, Submission)
    assert (result.attempts, waits) == (2, [3.0])


# Against the real service.


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`leaderboard serve` on a free loopback port, its own embedded DynamoDB, a dev key."""
    directory = tmp_path_factory.mktemp("service")
    # The board list read afresh each time, so a board made by a test is listed at once.
    environment = clean_environment() | {
        "LEADERBOARD_DEV_API_KEY": KEY,
        "LEADERBOARD_BOARD_LIST_CACHE_SECONDS": "0",
    }
    try:
        with serve(directory, environment, ready_timeout_s=READY_TIMEOUT_S) as base_url:
            yield base_url
    except ServiceExited as exc:
        pytest.fail(str(exc))


@pytest.fixture
def connect(service: str) -> Iterator[Callable[[str], LeaderboardClient]]:
    """Clients of the service with a given key; trust_env=False: no proxy between us and loopback."""
    https: list[httpx.Client] = []

    def make(api_key: str) -> LeaderboardClient:
        https.append(httpx.Client(trust_env=False, timeout=10.0))
        return LeaderboardClient(service, api_key, http=https[-1])

    yield make
    for http in https:
        http.close()


def test_a_retry_with_the_same_key_is_replayed(
    connect: Callable[[str], LeaderboardClient],
) -> None:
    client = connect(KEY)
    first = client.submit_score("replayer", 500, "pyclient", "replay", display_name="Re P.")
    again = client.submit_score(
        "replayer",
        500,
        "pyclient",
        "replay",
        display_name="Re P.",
        idempotency_key=first.idempotency_key,
    )
    assert (first.replayed, again.replayed) == (False, True)
    assert again.response == first.response
    alltime = next(b for b in first.boards if b["period"] == "alltime")
    assert (alltime["best"], alltime["improved"], alltime.get("rankAfter")) == (500, True, 1)

    fresh = client.submit_score("replayer", 500, "pyclient", "replay", display_name="Re P.")
    assert fresh.idempotency_key != first.idempotency_key
    assert not fresh.replayed


def test_a_batch_is_answered_item_by_item_and_its_resend_replayed(
    connect: Callable[[str], LeaderboardClient],
) -> None:
    client = connect(KEY)
    items: list[Any] = [
        {"playerId": "b-ada", "score": 30, "game": "pyclient", "variant": "batch"},
        {"playerId": "b-bad", "score": -1, "game": "pyclient", "variant": "batch"},
        {"playerId": "b-bob", "score": 20, "game": "pyclient", "variant": "batch"},
    ]
    first = client.submit_scores(items)
    ada, bad, bob = first
    assert isinstance(ada, Submission)
    assert isinstance(bob, Submission)
    assert (ada.player_id, ada.replayed, bob.player_id) == ("b-ada", False, "b-bob")
    assert isinstance(bad, Refused)
    assert (bad.status, bad.error.type) == (422, "/problems/invalid-input")
    assert [e["field"] for e in bad.error.errors or []] == ["score"]
    again = client.submit_scores(
        [item | {"idempotencyKey": r.idempotency_key} for item, r in zip(items, first, strict=True)]
    )
    assert [type(r) for r in again] == [Submission, Refused, Submission]
    assert [r.replayed for r in again if isinstance(r, Submission)] == [True, True]
    assert [r.response for r in again if isinstance(r, Submission)] == [ada.response, bob.response]
    on_board = [e["playerId"] for e in client.walk_board("pyclient", "batch")]
    assert on_board == ["b-ada", "b-bob"]


def test_walk_board_returns_every_player_in_rank_order_across_pages(
    connect: Callable[[str], LeaderboardClient],
) -> None:
    client = connect(KEY)
    scores = {f"walker-{i:02d}": 1000 + 37 * ((i * 7) % 13) for i in range(13)}
    for player_id, score in scores.items():
        client.submit_score(player_id, score, "pyclient", "walk")
    first_page = client.top("pyclient", "walk", limit=5)
    assert first_page["nextCursor"] is not None
    assert first_page["playerCount"] == 13

    walked = list(client.walk_board("pyclient", "walk", "alltime", page_size=5))
    expected = sorted(scores, key=lambda p: -scores[p])
    assert [e["playerId"] for e in walked] == expected
    assert [e["rank"] for e in walked] == list(range(1, 14))
    assert [e["playerId"] for e in walked[:5]] == [e["playerId"] for e in first_page["entries"]]


def test_player_rank_is_exact_with_the_right_rank(
    connect: Callable[[str], LeaderboardClient],
) -> None:
    client = connect(KEY)
    for player_id, score in {"r-first": 900, "r-second": 800, "r-third": 700, "r-last": 5}.items():
        client.submit_score(player_id, score, "pyclient", "rank", country="NO")
    got = client.player_rank("pyclient", "rank", "alltime", "r-third")
    assert isinstance(got.rank, ExactRank)
    assert got.rank.rank == 3
    assert got.rank.top_percent == pytest.approx(75.0)
    assert (got.entry["playerId"], got.entry["score"], got.entry["country"]) == (
        "r-third",
        700,
        "NO",
    )

    around = client.around("pyclient", "rank", "alltime", "r-third", before=1, after=1)
    assert [e["playerId"] for e in around["entries"]] == ["r-second", "r-third", "r-last"]
    listed = {(g["game"], v["variant"]) for g in client.boards()["games"] for v in g["variants"]}
    assert ("pyclient", "rank") in listed

    with pytest.raises(LeaderboardError) as raised:
        client.player_rank("pyclient", "rank", "alltime", "nobody-here")
    assert raised.value.status == 404


def test_a_claim_on_an_open_board_is_period_open_and_reads_carry_the_period(
    connect: Callable[[str], LeaderboardClient],
) -> None:
    client = connect(KEY)
    client.submit_score("claimer", 40, "pyclient", "claim")
    with pytest.raises(LeaderboardError) as raised:
        client.claim_reward("pyclient", "claim", "day", "claimer")
    assert (raised.value.status, raised.value.type) == (409, "/problems/period-open")
    assert raised.value.retry_after is not None
    assert raised.value.attempts == 1
    ranked = client.player_rank("pyclient", "claim", "day", "claimer")
    page = client.top("pyclient", "claim", "day")
    assert ranked.period is not None
    assert ranked.period == page["period"]
    assert ranked.period["endsAt"] is not None


def _define(service: str, game: str, variant: str, **fields: Any) -> None:
    """Define a variant with the dev key (an admin's); the client has no method for it."""
    with httpx.Client(trust_env=False, timeout=10.0) as http:
        defined = http.put(
            f"{service}/v1/games/{game}/variants/{variant}",
            json=fields,
            headers={"Authorization": f"Bearer {KEY}"},
        )
    assert defined.status_code == 200, defined.text


def test_players_join_cohorts_and_each_cohort_ranks_its_own(
    service: str, connect: Callable[[str], LeaderboardClient]
) -> None:
    _define(service, "pycohort", "cup", cohortSize=2, periods=["alltime"])
    client = connect(KEY)
    joined = [
        client.join_board("pycohort", "cup", "alltime", p) for p in ("c-ann", "c-bob", "c-cy")
    ]
    assert [(e.player_id, e.cohort_id, e.tier, e.first) for e in joined] == [
        ("c-ann", "1", None, True),
        ("c-bob", "1", None, True),
        ("c-cy", "2", None, True),
    ]
    again = client.join_board("pycohort", "cup", "alltime", "c-bob")
    assert (again.first, again.entrant) == (False, joined[1].entrant)

    for player_id, score in {"c-ann": 10, "c-bob": 30, "c-cy": 20}.items():
        client.submit_score(player_id, score, "pycohort", "cup")
    first = client.top_of_cohort("pycohort", "cup", "alltime", "1")
    assert [(e["playerId"], e["rank"]) for e in first["entries"]] == [("c-bob", 1), ("c-ann", 2)]
    assert (first["playerCount"], first["nextCursor"]) == (2, None)
    assert first["period"] == client.top("pycohort", "cup")["period"]
    paged = client.top_of_cohort("pycohort", "cup", "alltime", "1", limit=1)
    assert [e["playerId"] for e in paged["entries"]] == ["c-bob"]
    assert paged["nextCursor"] is not None
    second = client.top_of_cohort("pycohort", "cup", "alltime", "2")
    assert [(e["playerId"], e["rank"]) for e in second["entries"]] == [("c-cy", 1)]

    # On the whole board c-ann is third; in her cohort, second.
    ranked = client.player_rank("pycohort", "cup", "alltime", "c-ann")
    assert isinstance(ranked.rank, ExactRank)
    assert ranked.rank.rank == 3
    assert ranked.cohort is not None
    assert (ranked.cohort["cohortId"], ranked.cohort["rank"]) == ("1", 2)
    assert ranked.cohort.get("tier") is None
    client.submit_score("c-ann", 10, "pycohort", "plain")
    assert client.player_rank("pycohort", "plain", "alltime", "c-ann").cohort is None


def test_a_join_past_max_entrants_is_full_and_outside_cohorts_a_404(
    service: str, connect: Callable[[str], LeaderboardClient]
) -> None:
    _define(service, "pycohort", "capped", maxEntrants=1, periods=["alltime"])
    client = connect(KEY)
    entrant: Entrant = client.join_board("pycohort", "capped", "alltime", "f-one")
    assert (entrant.first, entrant.cohort_id) == (True, None)
    with pytest.raises(LeaderboardError) as full:
        client.join_board("pycohort", "capped", "alltime", "f-two")
    assert (full.value.status, full.value.type, full.value.attempts) == (409, "/problems/full", 1)
    assert not client.join_board("pycohort", "capped", "alltime", "f-one").first

    _define(service, "pycohort", "open", periods=["alltime"])
    with pytest.raises(LeaderboardError) as nothing_to_join:
        client.join_board("pycohort", "open", "alltime", "f-one")
    assert nothing_to_join.value.status == 404
    with pytest.raises(LeaderboardError) as no_cohorts:
        client.top_of_cohort("pycohort", "capped", "alltime", "1")
    assert no_cohorts.value.status == 404


def test_a_league_places_a_new_player_in_the_lowest_tier_and_says_so(
    service: str, connect: Callable[[str], LeaderboardClient]
) -> None:
    tiers = [{"id": "bronze", "promote": 1}, {"id": "silver", "demote": 1}]
    _define(service, "pycohort", "league", cohortSize=2, periods=["day"], tiers=tiers)
    client = connect(KEY)
    today = client.top("pycohort", "league", "day")["period"]["id"]
    before = client.league("pycohort", "league", "l-ann")
    assert (before["tier"], before["cohortId"], before["period"]) == ("bronze", None, today)
    assert before.get("previous") is None

    entrant = client.join_board("pycohort", "league", "day", "l-ann")
    assert (entrant.first, entrant.tier, entrant.cohort_id) == (True, "bronze", "bronze-1")
    placed = client.league("pycohort", "league", "l-ann")
    assert (placed["tier"], placed["cohortId"], placed["period"]) == ("bronze", "bronze-1", today)

    client.submit_score("l-ann", 70, "pycohort", "league")
    ranked = client.player_rank("pycohort", "league", "day", "l-ann")
    assert ranked.cohort == {"cohortId": "bronze-1", "tier": "bronze", "rank": 1}
    cohort = client.top_of_cohort("pycohort", "league", "day", "bronze-1")
    assert [e["playerId"] for e in cohort["entries"]] == ["l-ann"]

    _define(service, "pycohort", "noleague", cohortSize=2, periods=["day"])
    with pytest.raises(LeaderboardError) as not_a_league:
        client.league("pycohort", "noleague", "l-ann")
    assert (not_a_league.value.status, not_a_league.value.type) == (404, "/problems/not-found")


def test_a_cheater_is_hidden_banned_voided_and_restored_through_the_client(
    connect: Callable[[str], LeaderboardClient],
) -> None:
    client = connect(KEY)
    for player_id, score in {"m-ann": 900, "m-bob": 800, "m-cat": 700}.items():
        client.submit_score(player_id, score, "pymod", "classic")
    hidden = client.moderate("pymod", "m-bob", "hide", "aimbot")
    assert (hidden["playerId"], hidden["action"], hidden["reason"]) == ("m-bob", "hide", "aimbot")
    assert [e["playerId"] for e in client.walk_board("pymod", "classic")] == ["m-ann", "m-cat"]
    assert client.moderate("pymod", "m-bob", "ban", "again")["since"] == hidden["since"]
    with pytest.raises(LeaderboardError) as banned:
        client.submit_score("m-bob", 999, "pymod", "classic")
    assert (banned.value.status, banned.value.type) == (403, "/problems/player-banned")
    listed = client.moderated_players("pymod", limit=10)
    assert [(p["playerId"], p["action"]) for p in listed["players"]] == [("m-bob", "ban")]
    voided = client.void_entry("pymod", "classic", "alltime", "m-cat", reason="impossible")
    assert voided["voided"]["playerId"] == "m-cat"
    assert client.restore("pymod", "m-bob") == {
        "playerId": "m-bob",
        "game": "pymod",
        "rowsRestored": 3,
    }
    assert [e["playerId"] for e in client.walk_board("pymod", "classic")] == ["m-ann", "m-bob"]
    log = client.moderation_log("pymod", limit=2)
    assert [e["action"] for e in log["events"]] == ["restore", "void"]
    assert log["nextCursor"] is not None
    older = client.moderation_log("pymod", cursor=log["nextCursor"])
    assert [e["action"] for e in older["events"]] == ["ban", "hide"]
    with pytest.raises(LeaderboardError) as missing:
        client.restore("pymod", "m-bob")
    assert missing.value.status == 404


def test_a_bad_key_raises_unauthorized_without_retrying(
    connect: Callable[[str], LeaderboardClient],
) -> None:
    with pytest.raises(LeaderboardError) as raised:
        connect("not-a-key").submit_score("p1", 1, "pyclient", "denied")
    error = raised.value
    assert (error.status, error.type, error.attempts) == (401, "/problems/unauthorized", 1)
    assert error.title
    assert error.detail


def _readme_example_commands() -> tuple[tuple[dict[str, str], list[str]], ...]:
    """The README's lines that start the service and run the example game server, each as its
    leading ``NAME=value`` settings and its words (continuation lines joined, comments and a
    trailing ``&`` dropped)."""
    blocks = re.findall(r"^```sh\n(.*?)^```", README.read_text(), re.MULTILINE | re.DOTALL)
    (block,) = [block for block in blocks if "examples/game_server.py" in block]
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        words = [word for word in shlex.split(line, comments=True) if word != "&"]
        settings = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            name, _, value = words.pop(0).partition("=")
            settings[name] = value
        if words:
            commands.append((settings, words))
    return tuple(commands)


def _fresh_shell_environment() -> dict[str, str]:
    """This environment as a new shell in the checkout has it: without the service's settings, a
    proxy, or the virtual environment this test runs in (so ``python3`` is the machine's own)."""
    proxies = {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}
    ours = {(ROOT / ".venv" / "bin").resolve()}
    if sys.prefix != sys.base_prefix:  # run from a virtual environment: its bin too
        ours.add(Path(sys.prefix, "bin").resolve())
    path = [entry for entry in os.environ.get("PATH", "").split(os.pathsep) if entry]
    environment = {
        k: v for k, v in clean_environment().items() if k not in {*proxies, "VIRTUAL_ENV"}
    }
    environment["PATH"] = os.pathsep.join(e for e in path if Path(e).resolve() not in ours)
    return environment


def test_the_readme_runs_the_example_game_server_as_it_says(
    service: str, connect: Callable[[str], LeaderboardClient]
) -> None:
    """The README's two lines, from the repository's root in a shell with only the machine's
    ``python3``: its service command is there (asked for its help), and its example command posts
    a round to a service and prints the top, with httpx from the repository's environment."""
    commands = _readme_example_commands()
    assert len(commands) == 2, f"the README should start the service, then the example: {commands}"
    (serve_settings, serve_words), (settings, words) = commands
    for command in (serve_words, words):
        assert command[:2] == ["python3", "tools/uv.py"], (
            f"a README command should need nothing but python3 (tools/uv.py brings uv): {command}"
        )
    port = serve_words[serve_words.index("--port") + 1]
    assert settings["LEADERBOARD_URL"] == f"http://127.0.0.1:{port}"
    assert serve_settings == {"LEADERBOARD_DEV_API_KEY": settings["LEADERBOARD_API_KEY"]}

    environment = _fresh_shell_environment()
    helped = subprocess.run(
        [*serve_words, "--help"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert helped.returncode == 0, f"{shlex.join(serve_words)} --help:\n{helped.stderr[-3000:]}"
    assert "--port" in helped.stdout

    # Against this module's service, on a board of its own (the README's key and URL replaced).
    settings |= {
        "LEADERBOARD_URL": service,
        "LEADERBOARD_API_KEY": KEY,
        "LEADERBOARD_GAME": "pyclient",
        "LEADERBOARD_VARIANT": "example",
    }
    finished = subprocess.run(
        words,
        cwd=ROOT,
        env=environment | settings,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, (
        f"the README's example command, {shlex.join(words)}:\n{finished.stderr[-3000:]}"
    )
    players = ["ada", "grace", "linus", "margaret"]
    for player_id in players:
        assert f"posted {player_id} " in finished.stdout
    assert "top of pyclient#example#alltime (4 players)" in finished.stdout
    assert {line.rsplit(" ", 1)[-1] for line in finished.stdout.splitlines()[-4:]} == {
        "(owl)",
        "(fox)",
        "(penguin)",
        "(moth)",
    }
    on_board = [e["playerId"] for e in connect(KEY).walk_board("pyclient", "example")]
    assert sorted(on_board) == players


def test_uv_build_makes_a_wheel_with_the_package(tmp_path: Path) -> None:
    finished = subprocess.run(
        [
            sys.executable,
            str(ROOT / "tools" / "uv.py"),
            "build",
            "--wheel",
            "--out-dir",
            str(tmp_path),
        ],
        cwd=CLIENT_DIR,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    (wheel,) = tmp_path.glob("*.whl")
    assert wheel.name == "leaderboard_client-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read("leaderboard_client-0.1.0.dist-info/METADATA").decode()
    for module in ("__init__.py", "client.py", "models.py", "py.typed"):
        assert f"leaderboard_client/{module}" in names
    assert "Requires-Dist: httpx<1,>=0.27" in metadata
    assert "Requires-Python: >=3.11" in metadata


def test_the_generated_models_are_current_with_the_committed_document(tmp_path: Path) -> None:
    """A contract change regenerates them (``python3 clients/python/generate.py``)."""
    fresh = tmp_path / "models.py"
    ran = subprocess.run(
        [sys.executable, str(CLIENT_DIR / "generate.py"), "--output", str(fresh)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    committed = CLIENT_DIR / "leaderboard_client" / "models.py"
    assert fresh.read_text() == committed.read_text(), (
        "clients/python/leaderboard_client/models.py is stale: run clients/python/generate.py"
    )
