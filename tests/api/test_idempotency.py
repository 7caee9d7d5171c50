"""Idempotency-Key semantics: replay, reuse with another body, in flight, takeover, scoping."""

from __future__ import annotations

import asyncio
from typing import Any

from app.services.submit import request_fingerprint
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


async def _reserve(
    service: Service,
    fields: dict[str, object],
    *,
    deadline_ms: int,
    key: str = "k",
    expires_at: int | None = None,
) -> None:
    """A reservation as earlier versions wrote one before working on a request."""
    runtime = service.runtime
    await runtime.client.put_item(
        TableName=runtime.tables.scores,
        Item={
            "playerId": {"S": f"idem#trivia-server#{key}"},
            "leaderboardId": {"S": "idem"},
            "requestHash": {"S": request_fingerprint("trivia-server", fields)},
            "status": {"S": "in_progress"},
            "owner": {"S": "someone-else"},
            "deadline": {"N": str(deadline_ms)},
            "expiresAt": {"N": str(expires_at or now_ms() // 1000 + 3600)},
        },
    )


async def test_retry_while_the_first_is_in_flight_is_409_with_retry_after(
    service: Service,
) -> None:
    """Within one process: the second request with a key whose first is still running is told to
    wait, without a DynamoDB call, and nothing of it is written."""
    runtime = service.runtime
    reads = asyncio.Event()
    release = asyncio.Event()
    calls: list[str] = []

    async def slow_first_read(request: Any, **_: Any) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        calls.append(target.decode() if isinstance(target, bytes) else target)
        if not reads.is_set():
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


async def test_a_reservation_of_an_earlier_version_holds_its_key_until_its_deadline(
    service: Service,
) -> None:
    fields = {"playerId": "p1", "score": 10, "game": "trivia", "variant": "classic"}
    await _reserve(service, fields, deadline_ms=now_ms() + 20_000)
    response = await submit(service.http, player="p1", score=10, idempotency_key="k")
    assert response.status_code == 409
    assert 1 <= int(response.headers["Retry-After"]) <= 20
    assert await _versions(service, "p1") == []


async def test_an_in_progress_record_past_its_deadline_is_taken_over(service: Service) -> None:
    fields = {"playerId": "p1", "score": 10, "game": "trivia", "variant": "classic"}
    await _reserve(service, fields, deadline_ms=now_ms() - 1)
    response = await submit(service.http, player="p1", score=10, idempotency_key="k")
    assert response.status_code == 200, response.text
    assert [b["improved"] for b in response.json()["boards"]] == [True, True, True]
    replay = await submit(service.http, player="p1", score=10, idempotency_key="k")
    assert replay.headers["Idempotent-Replayed"] == "true"


async def test_a_stale_record_of_another_request_is_not_taken_over(service: Service) -> None:
    fields = {"playerId": "p1", "score": 11, "game": "trivia", "variant": "classic"}
    await _reserve(service, fields, deadline_ms=now_ms() - 1)
    response = await submit(service.http, player="p1", score=10, idempotency_key="k")
    assert response.status_code == 422
    assert await _versions(service, "p1") == []


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
    fields = {"playerId": "p1", "score": 10, "game": "trivia", "variant": "classic"}
    await _reserve(service, fields, deadline_ms=t, key="old", expires_at=t // 1000 - 10)
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
