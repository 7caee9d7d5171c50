"""Keys from the key store (create, rotate, revoke without a redeploy) and rate limits (429 with
Retry-After and RateLimit headers, before anything is stored)."""

from __future__ import annotations

import json
import time

import httpx
import structlog

from app.bootstrap import Runtime
from app.services.api_keys import (
    ApiKeyInfo,
    create_api_key,
    digest_of,
    list_api_keys,
    revoke_api_key,
)
from app.services.ports import ApiKeyStore
from app.store.tables import TableNames
from tests.conftest import SUBMIT_KEY, Service, make_settings, serve
from tests.support import scores_items, submit


async def test_stored_keys_rotate_and_revoke_without_a_restart(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    keys = runtime.stores.api_keys
    old = await create_api_key(keys, "quiz-server", ["submit:trivia"])
    settings = make_settings(dynamo_endpoint, table_names, api_key_cache_ttl_seconds=0)
    async with serve(settings) as running:
        assert (await submit(running.http, player="a", score=1, key=old)).status_code == 200
        new = await create_api_key(keys, "quiz-server", ["submit:trivia"])  # rotation: both work
        assert (await submit(running.http, player="b", score=1, key=new)).status_code == 200
        assert (await submit(running.http, player="c", score=1, key=old)).status_code == 200
        other_game = await submit(running.http, player="d", score=1, key=new, game="chess")
        assert other_game.status_code == 403
        old_id = next(i.key_id for i in await _infos(keys) if i.revoked_at is None)
        await revoke_api_key(keys, key_id=old_id)
        statuses = {
            (await submit(running.http, player="e", score=1, key=k)).status_code for k in (old, new)
        }
        assert statuses == {200, 401}
        await revoke_api_key(keys, "quiz-server")
        assert (await submit(running.http, player="f", score=1, key=new)).status_code == 401
    table = str(await scores_items(runtime))
    assert old not in table
    assert new not in table


async def _infos(keys: ApiKeyStore) -> list[ApiKeyInfo]:
    return await list_api_keys(keys)


async def test_writes_over_the_limit_get_429_and_store_nothing(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(
        dynamo_endpoint, table_names, write_rate_per_second=0.001, write_burst=2
    )
    async with serve(settings) as running:
        for i in range(2):
            ok = await submit(running.http, player=f"p{i}", score=1, rankDelta=False)
            assert ok.status_code == 200
            assert ok.headers["RateLimit"].startswith(f'"burst";r={1 - i};t=')
            assert ok.headers["RateLimit-Policy"].startswith('"burst";q=2;w=')
        before = await scores_items(runtime)
        limited = await submit(running.http, player="p9", score=1, idempotency_key="later")
        assert limited.status_code == 429
        assert limited.headers["content-type"].startswith("application/problem+json")
        assert int(limited.headers["Retry-After"]) >= 1
        assert limited.headers["RateLimit"].startswith('"burst";r=0;')
        assert await scores_items(runtime) == before
        # Another key has its own bucket.
        other = await submit(
            running.http, player="c1", score=1, game="chess", key="test-submit-chess-key"
        )
        assert other.status_code == 200


async def test_reads_over_the_limit_get_429(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, read_rate_per_second=0.001, read_burst=3)
    async with serve(settings) as running:
        statuses = [
            (await running.http.get("/v1/leaderboards/trivia/classic/alltime")).status_code
            for _ in range(5)
        ]
        assert statuses == [200, 200, 200, 429, 429]
        limited = await running.http.get("/v1/players/p1/standings")
        assert limited.status_code == 429
        assert "Retry-After" in limited.headers
        assert (await running.http.get("/healthz")).status_code == 200  # ops paths are not limited


async def test_no_key_or_authorization_header_reaches_a_log_line(
    service: Service,
) -> None:
    with structlog.testing.capture_logs() as logs:
        await submit(service.http, player="p1", score=1)
        await submit(service.http, player="p1", score=1, key="lb_live_not-a-real-key-000000000")
    text = json.dumps(logs, default=str)
    assert "request" in {entry["event"] for entry in logs}
    assert SUBMIT_KEY not in text
    assert digest_of(SUBMIT_KEY) not in text
    assert "lb_live_not-a-real-key" not in text
    assert "Bearer" not in text


async def test_each_request_logs_one_line_with_its_status_duration_and_dynamodb_cost(
    service: Service,
) -> None:
    with structlog.testing.capture_logs() as logs:
        started = time.perf_counter()
        response = await submit(service.http, player="p1", score=1)
        elapsed_ms = (time.perf_counter() - started) * 1000
    (line,) = [entry for entry in logs if entry["event"] == "request"]
    assert line["status"] == response.status_code == 200
    assert 0 < line["duration_ms"] <= elapsed_ms
    assert line["dynamodb_calls"] >= 4  # reserve, read, write the boards, store the outcome
    assert line["write_units"] > 0


async def test_a_bug_is_a_500_problem_without_internals_or_locals_in_the_log(
    service: Service,
) -> None:
    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    service.runtime.stores.counters.coarse_counts = broken  # type: ignore[method-assign,assignment]
    transport = httpx.ASGITransport(app=service.asgi, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        with structlog.testing.capture_logs() as logs:
            response = await http.get("/v1/leaderboards/trivia/classic/alltime")
    assert response.status_code == 500
    assert response.headers["content-type"].startswith("application/problem+json")
    assert "boom" not in response.text
    assert any(entry["event"] == "unhandled_error" for entry in logs)
