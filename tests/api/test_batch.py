"""``POST /v1/scores:batch``: each item answered as ``POST /v1/scores`` would answer it alone, in
the request's order, none changing anything for another; a malformed batch is a 422 that stores
nothing; limits count items (decision 0034)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from structlog.testing import capture_logs

from app.api import batches
from app.bootstrap import Runtime
from app.domain.clock import iso_ms
from app.store.tables import TableNames
from tests.api.test_metrics import scrape, value
from tests.conftest import ADMIN_KEY, SUBMIT_KEY, Service, make_settings, serve
from tests.support import now_ms, scores_items, submit, written_items

BATCH = "/v1/scores:batch"
TOP = "/v1/leaderboards/trivia/classic/alltime"
AUTH = {"Authorization": f"Bearer {SUBMIT_KEY}"}


def item(player: str, score: int, key: str, **extra: Any) -> dict[str, Any]:
    """One item: a submission body a minute old (on one moment, so the day and week are the same
    for every item of a test), with its key."""
    body = {"playerId": player, "score": score, "game": "trivia", "variant": "classic"}
    return body | {"achievedAt": iso_ms(AT), "idempotencyKey": key} | extra


AT = now_ms() - 60_000


async def post_batch(
    http: httpx.AsyncClient, items: list[dict[str, Any]], *, key: str = SUBMIT_KEY
) -> httpx.Response:
    return await http.post(
        BATCH, json={"submissions": items}, headers={"Authorization": f"Bearer {key}"}
    )


def results(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    answered: list[dict[str, Any]] = response.json()["results"]
    return answered


async def top(service: Service) -> dict[str, int]:
    page = await service.http.get(TOP, params={"limit": 100})
    return {entry["playerId"]: entry["score"] for entry in page.json()["entries"]}


async def test_each_item_is_answered_in_order_as_a_submission_alone(service: Service) -> None:
    items = [item("cy", 30, "k-cy"), item("al", 10, "k-al"), item("bo", 20, "k-bo")]
    response = await post_batch(service.http, items)
    answered = results(response)
    assert [r["idempotencyKey"] for r in answered] == ["k-cy", "k-al", "k-bo"]
    assert [(r["status"], r["replayed"]) for r in answered] == [(200, False)] * 3
    assert [r["body"]["playerId"] for r in answered] == ["cy", "al", "bo"]
    assert all("retryAfter" not in r for r in answered)
    assert response.headers["RateLimit"].startswith('"burst";')
    assert await top(service) == {"cy": 30, "al": 10, "bo": 20}
    # Each body is what POST /v1/scores answers for that submission: its replay there says so.
    for sent, got in zip(items, answered, strict=True):
        body = {k: v for k, v in sent.items() if k != "idempotencyKey"}
        alone = await service.http.post(
            "/v1/scores", json=body, headers=AUTH | {"Idempotency-Key": sent["idempotencyKey"]}
        )
        assert alone.status_code == 200
        assert alone.headers["Idempotent-Replayed"] == "true"
        assert alone.json() == got["body"]
        # A new player has no rank before: left out, not null, as POST /v1/scores leaves it.
        assert [set(b) for b in got["body"]["boards"]] == [
            {"leaderboardId", "period", "best", "previousBest", "improved", "rankAfter"}
        ] * 3


async def test_a_replayed_item_says_so_and_is_written_once(service: Service) -> None:
    first = await submit(service.http, player="al", score=10, achieved_ms=AT, idempotency_key="a")
    assert first.status_code == 200
    before = await scores_items(service.runtime)
    answered = results(await post_batch(service.http, [item("al", 10, "a"), item("bo", 5, "b")]))
    assert [(r["status"], r["replayed"]) for r in answered] == [(200, True), (200, False)]
    assert answered[0]["body"] == first.json()
    # The whole batch again, as after a lost answer: every item replayed, nothing written.
    after = await scores_items(service.runtime)
    again = results(await post_batch(service.http, [item("al", 10, "a"), item("bo", 5, "b")]))
    assert [(r["status"], r["replayed"]) for r in again] == [(200, True), (200, True)]
    assert [r["body"] for r in again] == [r["body"] for r in answered]
    assert len(after) > len(before)
    assert await scores_items(service.runtime) == after


async def test_bad_items_are_answered_alone_and_the_others_stored(service: Service) -> None:
    await submit(service.http, player="re", score=7, achieved_ms=AT, idempotency_key="used")
    items = [
        item("al", 10, "k1"),
        item("bad", -1, "k2"),  # a score out of range
        item("ch", 5, "k3", game="chess"),  # a game this key may not submit to
        item("re", 8, "used"),  # the key of another submission
        item("un", 3, "k5", colour="red"),  # an unknown field
        item("bo", 20, "k6"),
    ]
    answered = results(await post_batch(service.http, items))
    assert [r["status"] for r in answered] == [200, 422, 403, 422, 422, 200]
    assert [r["idempotencyKey"] for r in answered] == ["k1", "k2", "k3", "used", "k5", "k6"]
    problems = {r["idempotencyKey"]: r["body"] for r in answered if r["status"] != 200}
    assert problems["k2"]["type"] == "/problems/invalid-input"
    assert [e["field"] for e in problems["k2"]["errors"]] == ["score"]
    assert problems["k3"]["type"] == "/problems/forbidden"
    assert problems["used"]["type"] == "/problems/idempotency-key-reused"
    assert problems["k5"]["errors"] == [{"field": "colour", "message": "unknown field"}]
    for problem in problems.values():
        assert problem["instance"] == "/v1/scores"  # as POST /v1/scores would have answered
    # The same item alone gets the same problem.
    alone = await submit(service.http, player="bad", score=-1, achieved_ms=AT)
    assert alone.json() | {"instance": "/v1/scores"} == problems["k2"]
    assert await top(service) == {"al": 10, "bo": 20, "re": 7}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"submissions": []}, "submissions"),
        ({"submissions": [item(f"p{i}", i, f"k{i}") for i in range(101)]}, "submissions"),
        ({"submissions": [item("al", 1, "k1"), {"playerId": "bo", "score": 2}]}, "submissions.1.idempotencyKey"),
        ({"submissions": [item("al", 1, "k1"), item("bo", 2, "k 2")]}, "submissions.1.idempotencyKey"),
        ({"submissions": [item("al", 1, "k1"), 7]}, "submissions.1"),
        ({"submissions": [item("al", 1, "k1")], "round": 3}, "round"),
        ({}, "submissions"),
    ],
)  # fmt: skip
async def test_a_malformed_batch_is_422_and_stores_nothing(
    service: Service, body: dict[str, Any], field: str
) -> None:
    response = await service.http.post(BATCH, json=body, headers=AUTH)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem = response.json()
    assert problem["type"] == "/problems/invalid-input"
    assert field in [e["field"] for e in problem["errors"]], problem
    assert await written_items(service.runtime) == []


async def test_two_items_with_one_key_are_422_and_store_nothing(service: Service) -> None:
    items = [item("al", 1, "k1"), item("bo", 2, "k2"), item("cy", 3, "k1")]
    response = await post_batch(service.http, items)
    assert response.status_code == 422
    assert response.json()["errors"] == [
        {
            "field": "submissions.2.idempotencyKey",
            "message": "repeats the key of submissions.0: each submission has a key of its own",
        }
    ]
    assert await scores_items(service.runtime) == []


async def test_a_batch_answers_the_whole_request_s_problems_as_the_single_endpoint_does(
    service: Service,
) -> None:
    items = [item("al", 1, "k1")]
    assert (await post_batch(service.http, items, key="no-such-key")).status_code == 401
    text = await service.http.post(
        BATCH, content="{", headers=AUTH | {"Content-Type": "application/json"}
    )
    assert text.status_code == 400
    wrong_type = await service.http.post(
        BATCH, content="x", headers=AUTH | {"Content-Type": "text/plain"}
    )
    assert wrong_type.status_code == 415
    # An admin key has no submit scope: each item is refused as it would be alone.
    admin = results(await post_batch(service.http, items, key=ADMIN_KEY))
    assert [r["status"] for r in admin] == [403]
    assert await written_items(service.runtime) == []


async def test_a_batch_may_take_16_times_the_body_limit(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, max_body_bytes=1024)
    async with serve(settings) as service:
        ten = [item(f"p{i}", i, f"k{i}", displayName=f"Player number {i}") for i in range(10)]
        assert len(json.dumps({"submissions": ten})) > 1024
        assert [r["status"] for r in results(await post_batch(service.http, ten))] == [200] * 10
        many = [item(f"q{i}", i, f"j{i}", context={"note": "x" * 200}) for i in range(100)]
        assert len(json.dumps({"submissions": many})) > 16 * 1024
        too_large = await post_batch(service.http, many)
        assert too_large.status_code == 413
        assert too_large.json()["type"] == "/problems/payload-too-large"
        assert await top(service) == {f"p{i}": i for i in range(10)}


async def test_rate_limits_count_items_and_those_past_it_are_429_alone(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(
        dynamo_endpoint, table_names, write_rate_per_second=0.001, write_burst=3
    )
    async with serve(settings) as service:
        items = [item(f"p{i}", 10 + i, f"k{i}") for i in range(5)]
        response = await post_batch(service.http, items)
        answered = results(response)
        assert [r["status"] for r in answered] == [200, 200, 200, 429, 429]
        for limited in answered[3:]:
            assert limited["body"]["type"] == "/problems/rate-limited"
            assert limited["retryAfter"] >= 1
        assert response.headers["RateLimit"].startswith('"burst";r=0;')
        assert "Retry-After" not in response.headers
        assert await top(service) == {"p0": 10, "p1": 11, "p2": 12}
        # The bucket is empty: the next batch is refused whole, before its body is read.
        refused = await post_batch(service.http, items[3:])
        assert refused.status_code == 429
        assert "Retry-After" in refused.headers
        assert await top(service) == {"p0": 10, "p1": 11, "p2": 12}


async def test_an_item_in_flight_elsewhere_is_409_alone(service: Service) -> None:
    """An item whose key is still being served (a retry that overtook its first attempt) is the
    409 the single endpoint answers; the others are written all the same."""
    held = asyncio.Event()
    release = asyncio.Event()

    async def hold(request: Any, **_: Any) -> None:
        if b'"slow"' in request.body and not release.is_set():
            held.set()
            await release.wait()

    client = service.runtime.client
    client.meta.events.register_first("before-send.dynamodb", hold)  # type: ignore[arg-type]
    try:
        first = asyncio.create_task(
            submit(service.http, player="slow", score=5, achieved_ms=AT, idempotency_key="s")
        )
        await held.wait()
        answered = results(
            await post_batch(service.http, [item("al", 1, "a"), item("slow", 5, "s")])
        )
    finally:
        release.set()
    assert [r["status"] for r in answered] == [200, 409]
    assert answered[1]["body"]["type"] == "/problems/request-in-flight"
    assert answered[1]["retryAfter"] >= 1
    assert (await first).status_code == 200
    assert await top(service) == {"al": 1, "slow": 5}


async def test_an_item_not_done_by_the_deadline_is_503_alone_and_a_retry_completes_it(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, request_deadline_seconds=2)
    release = asyncio.Event()

    async def hold(request: Any, **_: Any) -> None:
        if b'"slow"' in request.body and not release.is_set():
            await release.wait()

    async with serve(settings) as service:
        client = service.runtime.client
        client.meta.events.register_first("before-send.dynamodb", hold)  # type: ignore[arg-type]
        items = [
            item("al", 1, "a", rankDelta=False),
            item("slow", 5, "s", rankDelta=False),
            item("bo", 2, "b", rankDelta=False),
        ]
        with capture_logs() as logs:
            answered = results(await post_batch(service.http, items))
        assert [r["status"] for r in answered] == [200, 503, 200]
        [cut] = [entry for entry in logs if entry["event"] == "batch_items_cut_off"]
        assert (cut["items"], cut["of"]) == (1, 3)
        assert answered[1]["body"]["type"] == "/problems/unavailable"
        assert answered[1]["retryAfter"] >= 1
        release.set()
        again = results(await post_batch(service.http, items))
        assert [(r["status"], r["replayed"]) for r in again] == [
            (200, True),
            (200, False),
            (200, True),
        ]
        assert await top(service) == {"al": 1, "slow": 5, "bo": 2}


async def test_items_run_a_few_at_a_time_and_a_limit_of_one_runs_them_all(
    dynamo_endpoint: str,
    table_names: TableNames,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Under an overload limit of one request at once (held there: every answer is later than
    the target), the batch's place passes from item to item: its own items never shed each
    other."""
    monkeypatch.setattr(batches, "CONCURRENCY", 3)
    running = most = 0

    def counted(service: Service) -> None:
        submissions = service.state.leaderboard.submissions
        submit_one = submissions.submit

        async def counting(*args: Any, **kwargs: Any) -> Any:
            nonlocal running, most
            running += 1
            most = max(most, running)
            try:
                return await submit_one(*args, **kwargs)
            finally:
                running -= 1

        submissions.submit = counting  # type: ignore[method-assign]

    limited = make_settings(
        dynamo_endpoint,
        table_names,
        admission_latency_target_seconds=0.001,
        admission_initial_limit=1,
    )
    async with serve(limited) as service:
        counted(service)
        items = [item(f"p{i}", i, f"k{i}", rankDelta=False) for i in range(6)]
        answered = results(await post_batch(service.http, items))
        assert [r["status"] for r in answered] == [200] * 6
        assert most == 1  # one place: one item at a time
    running = most = 0
    async with serve(make_settings(dynamo_endpoint, table_names)) as service:
        counted(service)
        items = [item(f"q{i}", i, f"j{i}", rankDelta=False) for i in range(9)]
        assert [r["status"] for r in results(await post_batch(service.http, items))] == [200] * 9
        assert most == 3


async def test_items_are_counted_as_submissions(service: Service) -> None:
    before = await scrape(service)
    await submit(service.http, player="al", score=1, achieved_ms=AT, idempotency_key="a")
    items = [item("al", 1, "a"), item("bo", 2, "b"), item("cy", 3, "c"), item("x", -1, "d")]
    with capture_logs() as logs:
        assert [r["status"] for r in results(await post_batch(service.http, items))] == [
            200,
            200,
            200,
            422,
        ]
    after = await scrape(service)

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("leaderboard_submissions_total", outcome="written") == 3  # "a" once, alone
    assert grew("leaderboard_submissions_total", outcome="replayed") == 1
    assert grew("leaderboard_batch_items_total", status="200") == 3
    assert grew("leaderboard_batch_items_total", status="422") == 1
    route = {"route": BATCH, "method": "POST", "status": "200"}
    assert grew("leaderboard_http_requests_total", **route) == 1
    [line] = [entry for entry in logs if entry["event"] == "request"]
    assert line["path"] == BATCH
    assert line["dynamodb_calls"] > 0  # every item's calls, on the batch's line
