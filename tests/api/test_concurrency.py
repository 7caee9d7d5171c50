"""Many copies of one submission at once, and a key reused with changed bodies."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Service
from tests.support import counter_total, now_ms, scores_items, submit


async def test_sixty_four_identical_submissions_write_each_board_once(service: Service) -> None:
    t = now_ms() - 1000
    responses = await asyncio.gather(
        *(
            submit(service.http, player="p1", score=77, achieved_ms=t, idempotency_key="same")
            for _ in range(64)
        )
    )
    statuses = Counter(r.status_code for r in responses)
    assert set(statuses) <= {200, 409}, statuses
    assert statuses[200] >= 1
    first = [
        r for r in responses if r.status_code == 200 and "Idempotent-Replayed" not in r.headers
    ]
    assert len(first) == 1  # one did the work; the other 200s are replays of it
    assert all(r.json() == first[0].json() for r in responses if r.status_code == 200)
    for conflict in (r for r in responses if r.status_code == 409):
        assert int(conflict.headers["Retry-After"]) >= 1
    rows = [i for i in await scores_items(service.runtime) if "rankKey" in i]
    assert sorted(int(r["version"]["N"]) for r in rows) == [1, 1, 1]
    assert await counter_total(service.runtime, "trivia#classic#alltime") == (1, 1)


changes = st.one_of(
    st.fixed_dictionaries({"score": st.integers(0, 10**12 - 1).filter(lambda s: s != 10)}),
    st.fixed_dictionaries(
        {"displayName": st.text(min_size=1, max_size=10).filter(str.isprintable)}
    ),
    st.fixed_dictionaries({"country": st.sampled_from(["FR", "DE", "JP"])}),
    st.fixed_dictionaries({"rankDelta": st.sampled_from([False])}),
    st.fixed_dictionaries(
        {"context": st.dictionaries(st.text(max_size=5), st.integers(), max_size=2)}
    ),
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(change=changes)
async def test_a_key_reused_with_a_changed_body_is_422_and_writes_nothing(
    service: Service, change: dict[str, Any]
) -> None:
    key = f"k-{now_ms()}-{id(change)}"
    t = now_ms() - 1000
    first = await submit(service.http, player="p1", score=10, achieved_ms=t, idempotency_key=key)
    assert first.status_code == 200
    before = await scores_items(service.runtime)
    body = {"score": 10, **change}
    score = body.pop("score")
    changed = await submit(
        service.http, player="p1", score=score, achieved_ms=t, idempotency_key=key, **body
    )
    assert changed.status_code == 422, change
    assert changed.json()["type"] == "/problems/idempotency-key-reused"
    assert await scores_items(service.runtime) == before
