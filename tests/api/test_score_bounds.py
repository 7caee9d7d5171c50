"""A variant's score bounds through the HTTP API (docs/boards.md#score-bounds): put, shown, listed
and stored, an older definition without them unbounded; bounds outside the score range or crossed
a 422 that stores nothing; a submission outside them a 422 ``score-out-of-bounds`` that stores
nothing (no row, no counter, no registered board, no Idempotency-Key record), on a task that holds
the definition and on one that guessed the default; exactly at the bounds a 200; each batch item
judged alone; a seed row outside them refused whole."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.bootstrap import Runtime
from app.domain.clock import iso_ms
from app.domain.keys import SCORE_CEILING
from app.domain.storage_keys import definition_pk
from app.store.items import key, n, s
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, SUBMIT_KEY, Service, make_settings, serve
from tests.support import counter_total, now_ms, scores_items, submit

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
VARIANT = "/v1/games/trivia/variants/classic"
TOP = "/v1/leaderboards/trivia/classic/alltime"
OUT_OF_BOUNDS = "/problems/score-out-of-bounds"


async def define(http: httpx.AsyncClient, **fields: Any) -> httpx.Response:
    return await http.put(VARIANT, json={"periods": ["alltime"], **fields}, headers=ADMIN)


async def top(http: httpx.AsyncClient) -> dict[str, int]:
    page = await http.get(TOP, params={"limit": 100})
    assert page.status_code == 200, page.text
    return {entry["playerId"]: entry["score"] for entry in page.json()["entries"]}


async def test_bounds_are_put_shown_listed_and_stored(service: Service) -> None:
    http = service.http
    unbounded = (await http.get(VARIANT)).json()
    assert (unbounded["scoreMin"], unbounded["scoreMax"]) == (None, None)
    put = await define(http, scoreMin=0, scoreMax=5000)
    assert put.status_code == 200, put.text
    assert (put.json()["scoreMin"], put.json()["scoreMax"]) == (0, 5000)
    assert (await http.get(VARIANT)).json() == put.json()
    listed = (await http.get("/v1/games/trivia/variants")).json()
    assert [(v["scoreMin"], v["scoreMax"]) for v in listed["variants"]] == [(0, 5000)]
    assert (listed["default"]["scoreMin"], listed["default"]["scoreMax"]) == (None, None)
    stored = await service.runtime.stores.definitions.get_definition("trivia", "classic")
    assert stored is not None
    assert (stored.definition.score_min, stored.definition.score_max) == (0, 5000)  # 0 kept
    # A PUT says the whole definition: bounds left out are gone.
    assert (await define(http, scoreMax=10)).json()["scoreMin"] is None
    cleared = (await define(http)).json()
    assert (cleared["scoreMin"], cleared["scoreMax"]) == (None, None)


async def test_a_definition_stored_before_bounds_reads_back_unbounded(service: Service) -> None:
    runtime = service.runtime
    await runtime.client.put_item(
        TableName=runtime.tables.scores,
        Item={
            **key(definition_pk("trivia"), "classic"),
            "order": s("asc"),
            "operator": s("best"),
            "periods": {"L": [s("alltime")]},
            "retentionDays": n(30),
            "definedAt": s("2026-11-01T00:00:00.000Z"),
        },
    )
    shown = (await service.http.get(VARIANT)).json()
    assert (shown["order"], shown["scoreMin"], shown["scoreMax"]) == ("asc", None, None)
    for player, score in (("ann", 0), ("bob", SCORE_CEILING - 1)):
        answered = await submit(service.http, player=player, score=score)
        assert answered.status_code == 200, answered.text
    assert await top(service.http) == {"ann": 0, "bob": SCORE_CEILING - 1}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"scoreMin": 11, "scoreMax": 10}, "scoreMax"),
        ({"scoreMin": -1}, "scoreMin"),
        ({"scoreMax": SCORE_CEILING}, "scoreMax"),
        ({"scoreMin": 1.5}, "scoreMin"),
        ({"scoreMax": "10"}, "scoreMax"),
        ({"scoreMin": True}, "scoreMin"),
    ],
)
async def test_bad_bounds_are_a_422_naming_the_field_that_changes_nothing(
    service: Service, body: dict[str, Any], field: str
) -> None:
    http = service.http
    assert (await define(http, scoreMin=1, scoreMax=2)).status_code == 200
    before = (await http.get(VARIANT)).json()
    refused = await define(http, **body)
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["type"] == "/problems/invalid-input"
    assert [e["field"] for e in problem["errors"]] == [field]
    assert problem["detail"].startswith(f"{field}: ")
    assert (await http.get(VARIANT)).json() == before


async def _refused(
    http: httpx.AsyncClient, player: str, score: int, idempotency_key: str
) -> dict[str, Any]:
    response = await submit(http, player=player, score=score, idempotency_key=idempotency_key)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert problem["type"] == OUT_OF_BOUNDS
    return problem


async def test_a_score_outside_the_bounds_is_a_422_that_stores_nothing(service: Service) -> None:
    http, runtime = service.http, service.runtime
    assert (await define(http, scoreMin=10, scoreMax=5000)).status_code == 200
    # The tests' tasks hold no definition: each submission starts under the default, which has no
    # bounds, and is judged by the variant's own once its read comes back, before any write.
    assert not runtime.definitions.holds("trivia", "classic")
    before = await scores_items(runtime)
    # The variant's first submissions: not even its board is registered by a refused one.
    low = await _refused(http, "ann", 9, "round-1-ann")
    high = await _refused(http, "bob", 5001, "round-1-bob")
    assert "score 9 " in low["detail"]
    assert "score 5001 " in high["detail"]
    for problem in (low, high):
        assert "from 10 to 5000 (scoreMin 10, scoreMax 5000)" in problem["detail"]
        assert [e["field"] for e in problem["errors"]] == ["score"]
    assert await scores_items(runtime) == before
    assert await top(http) == {}
    # Exactly at the bounds: accepted.
    for player, score in (("cy", 10), ("di", 5000)):
        assert (await submit(http, player=player, score=score)).status_code == 200
    written = await scores_items(runtime)
    # A player on a registered board (the definition read beside the state): their row stays.
    await _refused(http, "cy", 5001, "round-2-cy")
    assert await scores_items(runtime) == written
    assert await top(http) == {"cy": 10, "di": 5000}
    assert await counter_total(runtime, "trivia#classic#alltime") == (2, 2)
    # No Idempotency-Key record was kept: once the bounds allow it, the same request is a new
    # submission, not a replay of the refusal.
    assert (await define(http, scoreMin=0, scoreMax=6000)).status_code == 200
    again = await submit(http, player="bob", score=5001, idempotency_key="round-1-bob")
    assert again.status_code == 200, again.text
    assert "Idempotent-Replayed" not in again.headers
    assert await top(http) == {"cy": 10, "di": 5000, "bob": 5001}


async def test_a_task_holding_the_definition_refuses_with_no_call_to_dynamodb(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, definition_cache_seconds=10)
    async with serve(settings) as service:
        assert (await define(service.http, scoreMax=100)).status_code == 200
        assert service.runtime.definitions.holds("trivia", "classic")
        calls: list[str] = []

        def called(model: Any, **_: Any) -> None:
            calls.append(model.name)

        service.runtime.client.meta.events.register("before-call.dynamodb", called)
        await _refused(service.http, "ann", 101, "k-ann")
        assert calls == []
        assert (await submit(service.http, player="ann", score=100)).status_code == 200
        assert "TransactWriteItems" in calls


async def test_a_task_that_guessed_the_default_refuses_by_the_variant_s_bounds(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """A task that has not read the variant submits under the default (no bounds) while the
    definition is read beside it; the definition's bounds refuse the score before anything is
    written, whether or not the task has registered the board already."""
    holding = make_settings(dynamo_endpoint, table_names, definition_cache_seconds=10)
    async with (
        serve(make_settings(dynamo_endpoint, table_names)) as definer,
        serve(holding) as other,
    ):
        assert (await define(definer.http, scoreMin=5, scoreMax=50)).status_code == 200
        assert not other.runtime.definitions.holds("trivia", "classic")
        before = await scores_items(runtime)
        await _refused(other.http, "ann", 51, "k-1")
        assert await scores_items(runtime) == before
        assert (await submit(other.http, player="bob", score=50)).status_code == 200
        assert await top(definer.http) == {"bob": 50}


async def test_a_sum_board_bounds_each_submission_not_the_total(service: Service) -> None:
    http = service.http
    assert (await define(http, operator="sum", scoreMin=1, scoreMax=100)).status_code == 200
    for _ in range(3):
        assert (await submit(http, player="ann", score=100)).status_code == 200
    await _refused(http, "ann", 101, "k-101")
    await _refused(http, "ann", 0, "k-0")
    assert await top(http) == {"ann": 300}


async def test_narrowed_bounds_leave_the_entries_on_the_boards(service: Service) -> None:
    http = service.http
    assert (await define(http)).status_code == 200
    assert (await submit(http, player="ann", score=900)).status_code == 200
    # Not a change of ranking: boards holding entries take it, and keep them.
    assert (await define(http, scoreMax=100)).status_code == 200
    assert await top(http) == {"ann": 900}
    await _refused(http, "bob", 900, "k-bob")


async def test_each_batch_item_is_judged_by_the_bounds_alone(service: Service) -> None:
    http = service.http
    assert (await define(http, scoreMin=10, scoreMax=5000)).status_code == 200
    at = iso_ms(now_ms() - 60_000)
    items = [
        {"playerId": p, "score": score, "game": "trivia", "variant": "classic", "achievedAt": at}
        | {"idempotencyKey": f"k-{p}"}
        for p, score in (("ann", 10), ("bob", 5001), ("cy", 5000), ("di", 9))
    ]
    response = await http.post(
        "/v1/scores:batch",
        json={"submissions": items},
        headers={"Authorization": f"Bearer {SUBMIT_KEY}"},
    )
    assert response.status_code == 200, response.text
    answered = response.json()["results"]
    assert [(r["idempotencyKey"], r["status"]) for r in answered] == [
        ("k-ann", 200),
        ("k-bob", 422),
        ("k-cy", 200),
        ("k-di", 422),
    ]
    for refused in (answered[1], answered[3]):
        assert refused["body"]["type"] == OUT_OF_BOUNDS
        assert refused["body"]["instance"] == "/v1/scores"
    assert await top(http) == {"ann": 10, "cy": 5000}
    assert await counter_total(service.runtime, "trivia#classic#alltime") == (2, 2)


async def test_a_seed_with_a_row_outside_the_bounds_is_refused_whole(service: Service) -> None:
    http, runtime = service.http, service.runtime
    assert (await define(http, scoreMax=100)).status_code == 200
    before = await scores_items(runtime)
    at = iso_ms(now_ms() - 60_000)
    response = await http.post(
        f"{TOP}/seed",
        params={"graceSeconds": 0},
        content=f"playerId,score,achievedAt\nann,100,{at}\nbob,101,{at}\n",
        headers=ADMIN | {"Content-Type": "text/csv"},
    )
    assert response.status_code == 422, response.text
    assert response.json()["errors"] == [
        {
            "line": 3,
            "field": "score",
            "message": "101 is outside the variant's bounds: at most 100 (scoreMax 100)",
        }
    ]
    assert await scores_items(runtime) == before
