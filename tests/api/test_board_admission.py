"""A burst past what a task lets in to one board at once: the submissions past the limit are
refused at once (503 ``board-busy``, ``Retry-After``) and write nothing; their retries land."""

from __future__ import annotations

import asyncio

import pytest

from app.settings import Settings
from app.store.tables import TableNames
from tests.conftest import Service, make_settings
from tests.faults import install
from tests.support import counter_total, now_ms, submit


@pytest.fixture
def settings(dynamo_endpoint: str, table_names: TableNames) -> Settings:
    return make_settings(
        dynamo_endpoint,
        table_names,
        periods=["alltime"],
        board_in_flight_per_shard=1,
        board_admission_wait_seconds=0,
    )


async def test_a_submission_past_the_board_s_limit_is_refused_and_writes_nothing(
    service: Service, dynamo_endpoint: str
) -> None:
    http = service.http
    t0 = now_ms() - 60_000
    assert (await submit(http, player="warm", score=1, achieved_ms=t0)).status_code == 200
    install(service.runtime.client, dynamo_endpoint).delay_s = 0.2  # a slow DynamoDB
    first, second = await asyncio.gather(
        submit(http, player="ana", score=500, achieved_ms=t0, idempotency_key="k-ana"),
        submit(http, player="bo", score=400, achieved_ms=t0, idempotency_key="k-bo"),
    )
    answers = sorted([first, second], key=lambda r: r.status_code)
    assert [r.status_code for r in answers] == [200, 503]
    refused = answers[1]
    assert refused.json()["type"].endswith("/board-busy")
    assert refused.headers["Retry-After"] == "1"
    who = "bo" if refused is second else "ana"
    page = (await http.get("/v1/leaderboards/trivia/classic/alltime")).json()
    assert who not in [e["playerId"] for e in page["entries"]]
    assert await counter_total(service.runtime, "trivia#classic#alltime") == (2, 2)
    again = await submit(
        http,
        player=who,
        score=500 if who == "ana" else 400,
        achieved_ms=t0,
        idempotency_key=f"k-{who}",
    )
    assert again.status_code == 200, again.text
    assert await counter_total(service.runtime, "trivia#classic#alltime") == (3, 3)
