"""Idempotency-Key semantics: replay, reuse with another body, in flight, expiry, scoping."""

from __future__ import annotations

import asyncio
from typing import Any

from app.services.submissions._submit import request_fingerprint
from tests.conftest import SUBMIT_KEY, Service
from tests.support import counter_total, now_ms, scores_items, submit

BOARD = "trivia#classic#alltime"


async def _versions(service: Service, player: str) -> list[int]:
    return sorted(
        int(item["version"]["N"])
        for item in await scores_items(service.runtime)
        if item["playerId"]["S"] == player and "rankKey" in item
    )


async def test_same_key_same_request_replays_the_stored_response(service: Service) -> None:
    t = now_ms() - 1000
    first = await submit(service.http, player="p1", score=10, achieved_ms=t, idempotency_key="k")
    again = await submit(service.http, player="p1", score=10, achieved_ms=t, idempotency_key="k")
    assert first.status_code == again.status_code == 200
    assert "Idempotent-Replayed" not in first.headers
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert await _versions(service, "p1") == [1, 1, 1]  # each board written once
    assert await counter_total(service.runtime, BOARD) == (1, 1)


async def test_same_key_different_request_is_422_and_changes_nothing(service: Service) -> None:
    t = now_ms() - 1000
    await submit(service.http, player="p1", score=10, achieved_ms=t, idempotency_key="k")
    before = await scores_items(service.runtime)
    reused = await submit(service.http, player="p1", score=99, achieved_ms=t, idempotency_key="k")
    assert reused.status_code == 422
    assert reused.json()["type"] == "/problems/idempotency-key-reused"
    assert await scores_items(service.runtime) == before


async def test_keys_are_scoped_to_the_calling_client(service: Service) -> None:
    t = now_ms() - 1000
    trivia = await submit(service.http, player="p1", score=10, achieved_ms=t, idempotency_key="k")
    assert trivia.status_code == 200
    # Another client may use the same key for its own, different request.
    chess = await submit(
        service.http,
        player="p2",
        score=5,
        achieved_ms=t,
        idempotency_key="k",
        game="chess",
        key="test-submit-chess-key",
    )
    assert chess.status_code == 200
    assert "Idempotent-Replayed" not in chess.headers


async def _record(
    service: Service, player: str, fields: dict[str, object], *, key: str, expires_at: int
) -> None:
    """A completed record, as a submission's transaction writes one."""
    runtime = service.runtime
    await runtime.client.put_item(
        TableName=runtime.tables.scores,
        Item={
            "playerId": {"S": player},
            "leaderboardId": {"S": f"idem#trivia-server#{key}"},
            "requestHash": {"S": request_fingerprint("trivia-server", fields)},
            "status": {"S": "completed"},
            "response": {"S": '{"playerId":"p1","boards":[]}'},
            "expiresAt": {"N": str(expires_at)},
        },
    )


async def test_retry_while_the_first_is_in_flight_is_409_with_retry_after(
    service: Service,
) -> None:
    """Within one process: the second request with a key whose first is still running (held in
    its read of the player's items) is told to wait, without a DynamoDB call, and nothing of it is
    written."""
    runtime = service.runtime
    reads = asyncio.Event()
    release = asyncio.Event()
    calls: list[str] = []

    async def slow_first_read(request: Any, **_: Any) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        calls.append(target.decode() if isinstance(target, bytes) else target)
        if calls[-1].endswith(".BatchGetItem") and not reads.is_set():
            reads.set()
            await release.wait()

    runtime.client.meta.events.register_first("before-send.dynamodb", slow_first_read)  # type: ignore[arg-type]
    try:
        t = now_ms() - 1000
        first = asyncio.create_task(
            submit(service.http, player="p1", score=10, achieved_ms=t, idempotency_key="k")
        )
        await reads.wait()
        calls_before = len(calls)
        second = await submit(
            service.http, player="p1", score=10, achieved_ms=t, idempotency_key="k"
        )
        assert second.status_code == 409
        assert second.json()["type"] == "/problems/request-in-flight"
        assert 1 <= int(second.headers["Retry-After"]) <= 10
        assert len(calls) == calls_before  # answered from memory
        release.set()
        assert (await first).status_code == 200
    finally:
        release.set()
        runtime.client.meta.events.unregister("before-send.dynamodb", slow_first_read)  # type: ignore[arg-type]
    assert await _versions(service, "p1") == [1, 1, 1]


async def test_keys_are_scoped_to_the_player_too(service: Service) -> None:
    """A record lives in its player's partition (erasure finds it there): one client's key used
    for two players is two submissions."""
    t = now_ms() - 1000
    first = await submit(service.http, player="p1", score=10, achieved_ms=t, idempotency_key="k")
    other = await submit(service.http, player="p2", score=20, achieved_ms=t, idempotency_key="k")
    assert first.status_code == other.status_code == 200
    assert "Idempotent-Replayed" not in other.headers
    assert other.json()["playerId"] == "p2"


async def test_validation_failures_are_not_stored(service: Service) -> None:
    bad = await submit(service.http, player="p1", score=-5, idempotency_key="k")
    assert bad.status_code == 422
    good = await submit(service.http, player="p1", score=5, idempotency_key="k")
    assert good.status_code == 200
    assert "Idempotent-Replayed" not in good.headers
    assert SUBMIT_KEY not in good.text


async def test_an_expired_record_is_treated_as_absent(service: Service) -> None:
    """DynamoDB deletes TTL rows late and moto never does: a record past its expiresAt no
    longer replays; the key starts afresh."""
    t = now_ms() - 1000
    fields = {"playerId": "p9", "score": 3, "game": "trivia", "variant": "classic"}
    await _record(service, "p9", fields, key="old", expires_at=t // 1000 - 10)
    response = await submit(service.http, player="p9", score=3, idempotency_key="old")
    assert response.status_code == 200
    assert "Idempotent-Replayed" not in response.headers


async def test_the_same_body_under_a_new_key_is_a_new_submission(service: Service) -> None:
    first = await submit(service.http, player="p1", score=10, idempotency_key="a")
    again = await submit(service.http, player="p1", score=10, idempotency_key="b")
    assert first.status_code == again.status_code == 200
    assert "Idempotent-Replayed" not in again.headers
    board = again.json()["boards"][0]
    assert (board["improved"], board["previousBest"], board["best"]) == (False, 10, 10)
    assert await _versions(service, "p1") == [2, 2, 2]
