"""A burst of submissions on a slow DynamoDB, where many are cut by the request deadline, each
client retrying as the response's headers say: every submission ends with a 200, written once.

Seen before the write path held nothing in progress: 200 players at 32 in flight, cut requests
left their keys reserved for 30 s while answering ``Retry-After: 1``, and 39 submissions never got
a 200 within 15 retries.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter

import httpx

from app.bootstrap import Runtime
from app.store.tables import TableNames
from tests.conftest import make_settings, serve
from tests.faults import install
from tests.support import counter_total, now_ms, submit

PLAYERS = 60
IN_FLIGHT = 8
RETRIES = 40
"""Generous: under a loaded machine, moto itself is slow, and the point is the 409s, not the count."""


async def test_a_burst_cut_by_the_deadline_ends_with_every_submission_written_once(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(
        dynamo_endpoint, table_names, periods=["alltime"], request_deadline_seconds=0.7
    )
    statuses: Counter[int] = Counter()
    attempts: Counter[str] = Counter()
    rng = random.Random(7)
    base = now_ms() - 60_000
    async with serve(settings) as running:
        faults = install(running.runtime.client, dynamo_endpoint)
        # Each call 0..0.3 s: three round trips often outlast the 0.7 s deadline, not always.
        faults.jitter_s = 0.3
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def player(i: int) -> int:
            name, score, key = f"p{i:03d}", rng.randrange(10_000), f"round-1-p{i:03d}"
            for _ in range(RETRIES + 1):
                async with gate:
                    attempts[name] += 1
                    response = await submit(
                        running.http,
                        player=name,
                        score=score,
                        achieved_ms=base + i,
                        idempotency_key=key,
                    )
                statuses[response.status_code] += 1
                if response.status_code == 200:
                    return score
                assert response.status_code in {409, 503}, response.text
                await asyncio.sleep(_retry_after(response))
            raise AssertionError(f"{name} got no 200 in {RETRIES} retries")

        scores = await asyncio.gather(*(player(i) for i in range(PLAYERS)))
    assert statuses[503] > 0, statuses  # the deadline did cut requests
    assert statuses[409] == 0, statuses  # and none left its key held
    board = "trivia#classic#alltime"
    page = await runtime.stores.index.query_board(board, limit=PLAYERS + 1, start=None)
    assert sorted(e.score for e in page.entries) == sorted(scores)
    assert await counter_total(runtime, board) == (PLAYERS, PLAYERS)
    print(f"statuses {dict(statuses)}, most attempts {max(attempts.values())}")


def _retry_after(response: httpx.Response) -> float:
    """As a client does: what the header says (whole seconds), shortened for the test."""
    return int(response.headers["Retry-After"]) / 10
