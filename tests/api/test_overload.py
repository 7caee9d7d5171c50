"""The overload limit as the app serves it (decision 0030): past what the task lets in at once, a
request under /v1/ is refused at once with the overloaded problem, its Retry-After and a metric,
while health, readiness and metrics still answer."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx

from app.bootstrap import Runtime
from app.store.tables import TableNames
from tests.conftest import make_settings, serve
from tests.support import now_ms, submit


async def test_a_task_at_its_limit_refuses_at_once_and_still_answers_its_operators(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(
        dynamo_endpoint,
        table_names,
        admission_latency_target_seconds=1,
        admission_initial_limit=1,
    )
    async with serve(settings) as service:
        held = 0
        arrived = asyncio.Condition()
        release = asyncio.Event()

        async def hold(**_: Any) -> None:
            nonlocal held
            async with arrived:
                held += 1
                arrived.notify_all()
            await release.wait()

        async def until_held(count: int) -> None:
            async with arrived:
                await arrived.wait_for(lambda: held >= count)

        shed_before = _shed(await service.http.get("/metrics"))
        client = service.runtime.client
        client.meta.events.register_first("before-send.dynamodb", hold)  # type: ignore[arg-type]
        try:
            first = asyncio.create_task(
                submit(service.http, player="ann", score=50, achieved_ms=now_ms() - 500)
            )
            await until_held(1)  # the write holds the one place, its first call held
            # Each kind keeps its share of the limit: a read is let in beside the write...
            read = asyncio.create_task(service.http.get("/v1/leaderboards/trivia/classic/alltime"))
            await until_held(2)
            # ... and then neither kind has a place left.
            refused = await service.http.get("/v1/leaderboards/trivia/classic/alltime")
            refused_write = await submit(service.http, player="bob", score=40, achieved_ms=now_ms())
            health = await service.http.get("/healthz")
            metrics = await service.http.get("/metrics")
            ready = await service.http.get("/readyz")  # its own client: not held
        finally:
            release.set()
            client.meta.events.unregister("before-send.dynamodb", hold)  # type: ignore[arg-type]
        answered, read_answered = await first, await read
    assert answered.status_code == 200, answered.text
    assert read_answered.status_code == 200, read_answered.text
    for response in (refused, refused_write):
        assert response.status_code == 503, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["type"] == "/problems/overloaded"
        assert int(response.headers["retry-after"]) >= 1
    assert (health.status_code, metrics.status_code, ready.status_code) == (200, 200, 200)
    # The process's counters, which other tests of this process may have moved before: by one each.
    shed = _shed(metrics)
    assert {kind: shed[kind] - shed_before[kind] for kind in shed} == {"read": 1, "write": 1}


def _shed(metrics: httpx.Response) -> dict[str, float]:
    """``leaderboard_requests_shed_total`` by kind, as /metrics says it."""
    pattern = r'^leaderboard_requests_shed_total\{kind="(\w+)"\} ([0-9.]+)$'
    return {kind: float(n) for kind, n in re.findall(pattern, metrics.text, re.MULTILINE)}
