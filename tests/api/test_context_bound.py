"""A submission's ``context`` is stored on every board row it writes, in one transaction: it is
bounded (``LEADERBOARD_MAX_CONTEXT_BYTES``) so that a row holding it is an item DynamoDB takes.
Over the bound is a 422 naming the field and the bound, and writes nothing; at the bound it is
stored whole.

moto counts item sizes its own way; every test's client refuses what DynamoDB would
(``tests.dynamo_rules``), and fails the test that sends it."""

from __future__ import annotations

import json
import uuid
from typing import Any

from app.bootstrap import Runtime
from app.domain.clock import iso_ms
from app.services.api_keys import digest_of
from app.settings import ApiKeyEntry, Settings
from app.store.tables import TableNames
from tests.conftest import SUBMIT_KEY, Service, make_settings, serve
from tests.support import WIDEST_NAME, now_ms, scores_items

DEFAULT_BOUND = 16 * 1024
LARGEST_BOUND = 384 * 1024
_EMPTY = len('{"padding":""}')


def context_of(size: int) -> dict[str, Any]:
    """A context whose compact JSON (as stored) is ``size`` bytes."""
    context = {"padding": "x" * (size - _EMPTY)}
    assert len(json.dumps(context, separators=(",", ":"))) == size
    return context


async def _submit(http: Any, key: str, body: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {key}", "Idempotency-Key": uuid.uuid4().hex}
    return await http.post("/v1/scores", json=body, headers=headers)


def _body(context: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {
        "playerId": "p1",
        "score": 10,
        "game": "trivia",
        "variant": "classic",
        "context": context,
        **fields,
    }


async def _rows(runtime: Runtime) -> list[dict[str, Any]]:
    return [i for i in await scores_items(runtime) if "rankKey" in i]


async def test_a_context_over_the_bound_is_a_422_naming_it_and_writes_nothing(
    service: Service,
) -> None:
    response = await _submit(service.http, SUBMIT_KEY, _body(context_of(DEFAULT_BOUND + 1)))
    assert response.status_code == 422, response.text
    problem = response.json()
    (error,) = problem["errors"]
    assert error["field"] == "context"
    assert f"{DEFAULT_BOUND:,} bytes" in error["message"]
    assert f"{DEFAULT_BOUND:,} bytes" in problem["detail"]
    assert await scores_items(service.runtime) == []


async def test_a_context_at_the_bound_is_stored_whole(service: Service) -> None:
    context = context_of(DEFAULT_BOUND)
    response = await _submit(service.http, SUBMIT_KEY, _body(context))
    assert response.status_code == 200, response.text
    rows = await _rows(service.runtime)
    assert len(rows) == 3  # alltime, day, week
    for row in rows:
        assert json.loads(row["context"]["S"]) == context


async def test_a_context_that_would_make_a_row_too_large_is_a_422_not_a_500(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """The body limit allows 1 MiB: a context of 450 KB was a row DynamoDB refuses, a 500."""
    settings = make_settings(dynamo_endpoint, table_names, max_body_bytes=1024 * 1024)
    async with serve(settings) as running:
        response = await _submit(running.http, SUBMIT_KEY, _body(context_of(450_000)))
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["field"] == "context"
    assert await scores_items(runtime) == []


async def test_the_largest_bound_fits_a_row_with_every_field_at_its_largest(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """At ``LEADERBOARD_MAX_CONTEXT_BYTES``'s upper bound, with the longest ids and name, a score
    sent to four boards (alltime, day, week, month) is four rows DynamoDB takes, in one
    transaction it takes."""
    key = "test-any-game-key"
    settings = make_settings(
        dynamo_endpoint,
        table_names,
        max_body_bytes=1024 * 1024,
        max_context_bytes=LARGEST_BOUND,
        periods=["alltime", "day", "week", "month"],
        api_keys=[ApiKeyEntry(name="any", sha256=digest_of(key), scopes=["submit:*"])],
    )
    bounds = Settings.model_fields["max_context_bytes"].metadata
    assert [b.le for b in bounds if hasattr(b, "le")] == [LARGEST_BOUND]
    context = context_of(LARGEST_BOUND)
    body = _body(
        context,
        playerId="p" * 64,
        score=10**12 - 1,
        game="g" * 64,
        variant="v" * 64,
        achievedAt=iso_ms(now_ms()),
        displayName=WIDEST_NAME,
        country="NZ",
    )
    async with serve(settings) as running:
        response = await _submit(running.http, key, body)
        assert response.status_code == 200, response.text
        assert len(response.json()["boards"]) == 4
    rows = await _rows(runtime)
    assert len(rows) == 4
    for row in rows:
        assert json.loads(row["context"]["S"]) == context
