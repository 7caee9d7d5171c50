"""Faults DynamoDB raises and moto does not, injected at botocore's before-send: the submission
still lands once on every board, or fails cleanly and lands once when retried with its key."""

from __future__ import annotations

import asyncio
from typing import Any

from structlog.testing import capture_logs

from app.bootstrap import Runtime
from app.store.tables import TableNames
from tests.conftest import Service, make_settings, serve
from tests.faults import conflict_on_row, fail_first, install, rejected, throttled
from tests.support import counter_total, now_ms, scores_items, submit, written_items

BOARDS = ("trivia#classic#alltime",)


async def _rows(runtime: Runtime, player: str) -> list[dict[str, Any]]:
    return [
        i for i in await scores_items(runtime) if i["playerId"]["S"] == player and "rankKey" in i
    ]


async def test_conflicting_first_attempts_still_write_each_board_once(
    service: Service, dynamo_endpoint: str
) -> None:
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("TransactWriteItems", 5, conflict_on_row))
    response = await submit(service.http, player="p1", score=42, rankDelta=False)
    assert response.status_code == 200, response.text
    assert [b["improved"] for b in response.json()["boards"]] == [True, True, True]
    # Five cancelled attempts and the one that landed, every board in it (a connection botocore
    # itself retried may add one).
    assert faults.seen["TransactWriteItems"] >= 1 + 5
    rows = await _rows(service.runtime, "p1")
    assert sorted(int(r["version"]["N"]) for r in rows) == [1, 1, 1]
    assert await counter_total(service.runtime, BOARDS[0]) == (1, 1)


async def test_throttled_transactions_are_retried_by_the_client(
    service: Service, dynamo_endpoint: str
) -> None:
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("TransactWriteItems", 2, lambda _: throttled()))
    response = await submit(service.http, player="p1", score=42, rankDelta=False)
    assert response.status_code == 200, response.text
    assert sorted(int(r["version"]["N"]) for r in await _rows(service.runtime, "p1")) == [
        1,
        1,
        1,
    ]


async def test_throttling_past_the_retries_is_503_and_a_retry_completes_it(
    service: Service, dynamo_endpoint: str
) -> None:
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("TransactWriteItems", 1000, lambda _: throttled()))
    t = now_ms() - 1000
    failed = await submit(service.http, player="p1", score=42, achieved_ms=t, idempotency_key="k")
    assert failed.status_code == 503
    assert int(failed.headers["Retry-After"]) >= 1
    assert failed.headers["content-type"].startswith("application/problem+json")
    faults.rules.clear()
    retried = await submit(service.http, player="p1", score=42, achieved_ms=t, idempotency_key="k")
    assert retried.status_code == 200, retried.text
    assert "Idempotent-Replayed" not in retried.headers
    assert sorted(int(r["version"]["N"]) for r in await _rows(service.runtime, "p1")) == [
        1,
        1,
        1,
    ]


async def test_a_lost_response_after_commit_is_applied_once(
    service: Service, dynamo_endpoint: str
) -> None:
    """The transaction commits but its response times out; botocore resends the same call with
    the same ClientRequestToken, which DynamoDB (emulated here) does not apply twice."""
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.lose_responses = 3
    response = await submit(service.http, player="p1", score=42, rankDelta=False)
    assert response.status_code == 200, response.text
    assert [b["improved"] for b in response.json()["boards"]] == [True, True, True]
    assert sorted(int(r["version"]["N"]) for r in await _rows(service.runtime, "p1")) == [
        1,
        1,
        1,
    ]
    assert await counter_total(service.runtime, BOARDS[0]) == (1, 1)


async def test_responses_lost_past_the_retries_then_a_retry_reports_the_true_outcome(
    service: Service, dynamo_endpoint: str
) -> None:
    """Every response of one board's commit is lost: the client gets a 503, and its retry with the
    same key finds the rows already written by this request and reports what it really did."""
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.lose_responses = 1000
    t = now_ms() - 1000
    failed = await submit(service.http, player="p1", score=42, achieved_ms=t, idempotency_key="k")
    assert failed.status_code == 503
    faults.lose_responses = 0
    retried = await submit(service.http, player="p1", score=42, achieved_ms=t, idempotency_key="k")
    assert retried.status_code == 200, retried.text
    boards = retried.json()["boards"]
    assert [(b["improved"], b["previousBest"]) for b in boards] == [(True, None)] * 3
    assert sorted(int(r["version"]["N"]) for r in await _rows(service.runtime, "p1")) == [
        1,
        1,
        1,
    ]
    assert await counter_total(service.runtime, BOARDS[0]) == (1, 1)


async def test_a_seeding_lease_refuses_the_board_with_409_and_writes_nothing(
    service: Service,
) -> None:
    runtime = service.runtime
    board = "trivia#classic#alltime"
    lease = {"playerId": {"S": f"seedlock#{board}"}, "leaderboardId": {"S": board}}
    await runtime.client.put_item(
        TableName=runtime.tables.scores,
        Item={**lease, "expiresAt": {"N": str(now_ms() // 1000 + 30)}},
    )
    t = now_ms() - 1000
    refused = await submit(service.http, player="p1", score=42, achieved_ms=t, idempotency_key="k")
    assert refused.status_code == 409
    assert 1 <= int(refused.headers["Retry-After"]) <= 30
    assert refused.json()["type"] == "/problems/board-being-seeded"
    assert [
        i for i in await written_items(runtime) if i["playerId"]["S"] != lease["playerId"]["S"]
    ] == []
    # An expired lease no longer holds the board, and the key was not spent.
    await runtime.client.put_item(
        TableName=runtime.tables.scores,
        Item={**lease, "expiresAt": {"N": str(now_ms() // 1000 - 1)}},
    )
    accepted = await submit(service.http, player="p1", score=42, achieved_ms=t, idempotency_key="k")
    assert accepted.status_code == 200
    assert "Idempotent-Replayed" not in accepted.headers


async def test_a_request_past_its_deadline_is_503_and_a_retry_at_once_completes_it(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """A request cut by the deadline leaves nothing reserved: the retry its Retry-After asks for
    (1 s) is served at once, and the boards are written exactly once."""
    settings = make_settings(dynamo_endpoint, table_names, request_deadline_seconds=1.0)
    t = now_ms() - 1000
    async with serve(settings) as running:
        faults = install(running.runtime.client, dynamo_endpoint)
        faults.delay_s = 0.4
        slow = await submit(running.http, player="p1", score=7, achieved_ms=t, idempotency_key="k")
        assert slow.status_code == 503
        assert slow.headers["Retry-After"] == "1"
        assert slow.headers["content-type"].startswith("application/problem+json")
        faults.delay_s = 0
        retried = await submit(
            running.http, player="p1", score=7, achieved_ms=t, idempotency_key="k"
        )
        assert retried.status_code == 200, retried.text
        assert [(b["improved"], b["best"]) for b in retried.json()["boards"]] == [(True, 7)] * 3
    rows = await _rows(runtime, "p1")
    assert sorted(int(r["version"]["N"]) for r in rows) == [1, 1, 1]
    assert await counter_total(runtime, BOARDS[0]) == (1, 1)


async def test_a_throttled_first_read_is_503_and_leaves_nothing_behind(
    service: Service, dynamo_endpoint: str
) -> None:
    """The first read fails past botocore's retries: nothing was written or reserved, so the retry
    the 503 asks for is served, not told to wait for a request that is gone."""
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("BatchGetItem", 1000, lambda _: throttled()))
    t = now_ms() - 1000
    failed = await submit(service.http, player="p1", score=5, achieved_ms=t, idempotency_key="k")
    assert failed.status_code == 503
    assert failed.json()["type"] == "/problems/throttled"
    assert await written_items(service.runtime) == []
    faults.rules.clear()
    retried = await submit(service.http, player="p1", score=5, achieved_ms=t, idempotency_key="k")
    assert retried.status_code == 200, retried.text
    assert sorted(int(r["version"]["N"]) for r in await _rows(service.runtime, "p1")) == [
        1,
        1,
        1,
    ]


async def test_a_lost_read_response_is_resent_and_the_submission_lands_once(
    service: Service, dynamo_endpoint: str
) -> None:
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.lose["BatchGetItem"] = 1
    response = await submit(service.http, player="p1", score=5, idempotency_key="k")
    assert response.status_code == 200, response.text
    assert faults.seen["BatchGetItem"] >= 2  # sent, lost, resent
    assert sorted(int(r["version"]["N"]) for r in await _rows(service.runtime, "p1")) == [
        1,
        1,
        1,
    ]


async def test_a_request_dynamodb_refuses_as_malformed_is_a_logged_500_not_a_503(
    service: Service, dynamo_endpoint: str
) -> None:
    """A ValidationException means the service built a bad request: a bug to find, not an outage
    to retry through."""
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("Query", 1000, lambda _: rejected("bad expression")))
    with capture_logs() as logs:
        response = await service.http.get("/v1/leaderboards/trivia/classic/alltime")
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "Retry-After" not in response.headers
    assert "bad expression" not in response.text
    [logged] = [e for e in logs if e["event"] == "dynamodb_rejected_request"]
    assert logged["code"] == "ValidationException"


async def test_a_remembered_lease_absence_is_covered_by_the_seeders_grace(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """A task reads a board's lease once a cache time; the lease a seeder takes is seen once that
    time is out, and the seeder's grace period covers it."""
    settings = make_settings(dynamo_endpoint, table_names, lease_cache_seconds=0.5)
    board = "trivia#classic#alltime"
    lease = {"playerId": {"S": f"seedlock#{board}"}, "leaderboardId": {"S": board}}
    async with serve(settings) as running:
        faults = install(running.runtime.client, dynamo_endpoint)
        assert (await submit(running.http, player="a", score=1)).status_code == 200
        await runtime.client.put_item(
            TableName=runtime.tables.scores,
            Item={**lease, "expiresAt": {"N": str(now_ms() // 1000 + 30)}},
        )
        assert (await submit(running.http, player="b", score=1)).status_code == 200  # remembered
        await asyncio.sleep(0.6)
        refused = await submit(running.http, player="c", score=1)
        assert refused.status_code == 409
        assert refused.json()["type"] == "/problems/board-being-seeded"
        assert faults.seen["BatchGetItem"] == 3
    assert running.runtime.policies.seed.grace_s == settings.request_deadline_seconds + 0.5
