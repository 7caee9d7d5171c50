"""What no caller gets for free (issue 31, item 6): the documentation and the OpenAPI document are
rate limited like any read and ``/docs`` may not be framed; a request runs without a deadline only
on the admin routes that need it, never on a path that merely ends like one; a query parameter
named twice is refused; a group counts its distinct ids toward both of its limits; and production
refuses the variants no one defined."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
from typing import Any

import pytest

from app.bootstrap import Runtime
from app.domain.models import Standing
from app.services.reads._players import MAX_GROUP, MAX_GROUP_RANKED
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, Service, make_settings, serve
from tests.support import submit

BOARD = "/v1/leaderboards/trivia/classic/alltime"


@pytest.mark.parametrize("path", ["/docs", "/openapi.json"])
async def test_the_docs_and_the_document_are_rate_limited_reads(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime, path: str
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, read_burst=2, read_rate_per_second=0.01)
    async with serve(settings) as running:
        answers = [await running.http.get(path) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    assert answers[0].headers["RateLimit"].startswith('"burst";r=1;')
    refused = answers[2]
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert int(refused.headers["Retry-After"]) >= 1


async def test_the_docs_page_runs_only_its_own_script_and_is_never_framed(
    service: Service,
) -> None:
    page = await service.http.get("/docs")
    assert page.status_code == 200
    assert page.headers["X-Frame-Options"] == "DENY"
    policy = dict(
        directive.strip().split(" ", 1)
        for directive in page.headers["Content-Security-Policy"].split(";")
    )
    assert policy["frame-ancestors"] == "'none'"
    assert policy["default-src"] == "'none'"
    assert policy["connect-src"] == "'self'"  # "Try it out" asks this service only
    # The page's one inline script (which starts Swagger UI) by its hash, and files of this
    # origin: no 'unsafe-inline', no other site.
    [inline] = re.findall(rb"<script>(.*?)</script>", page.content, re.DOTALL)
    digest = base64.b64encode(hashlib.sha256(inline).digest()).decode()
    assert policy["script-src"].split() == ["'self'", f"'sha256-{digest}'"]
    assert "unsafe" not in page.headers["Content-Security-Policy"]


async def test_a_path_ending_in_seed_is_no_exemption_from_the_deadline(
    dynamo_endpoint: str,
    table_names: TableNames,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A player called "seed" is read under the deadline like any other; the seed route itself,
    an admin's, runs past it."""
    deadline = 0.3
    settings = make_settings(dynamo_endpoint, table_names, request_deadline_seconds=deadline)
    async with serve(settings) as running:
        standings = running.runtime.stores.standings
        read_standing = standings.read_standing

        async def slow(board_id: str, player_id: str) -> Standing | None:
            await asyncio.sleep(deadline * 2)
            return await read_standing(board_id, player_id)

        monkeypatch.setattr(standings, "read_standing", slow)
        player = await running.http.get(f"{BOARD}/players/seed")
        seeded = await running.http.post(
            f"{BOARD}/seed",
            params={"graceSeconds": deadline * 2},  # the seed waits past the deadline
            content="playerId,score,achievedAt\nseed,5,2026-11-01T10:00:00.000Z\n",
            headers={"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "text/csv"},
        )
    assert player.status_code == 503, player.text
    assert "took longer than" in player.json()["detail"]
    assert seeded.status_code == 200, seeded.text
    assert seeded.json()["rowsWritten"] == 1


@pytest.mark.parametrize(
    ("path", "named"),
    [
        (f"{BOARD}?limit=5&limit=50", ["limit"]),
        (f"{BOARD}/players?ids=a&ids=b", ["ids"]),
        (f"{BOARD}/players?ids=a&withRank=true&withRank=false", ["withRank"]),
        ("/v1/boards?limit=1&cursor=x&limit=2&cursor=y", ["cursor", "limit"]),
        ("/v1/players/ann/standings?limit=1&limit=1", ["limit"]),
        ("/openapi.json?x=1&x=1", ["x"]),
    ],
)
async def test_a_query_parameter_named_twice_is_a_422_naming_it(
    service: Service, path: str, named: list[str]
) -> None:
    response = await service.http.get(path)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    errors = response.json()["errors"]
    if path.startswith("/openapi.json"):  # it declares no parameter: unknown first
        assert errors == [{"field": "x", "message": "unknown"}]
        return
    assert errors == [{"field": name, "message": "named more than once"} for name in named]


async def _group(service: Service, ids: list[str], **params: Any) -> Any:
    return await service.http.get(f"{BOARD}/players", params={"ids": ",".join(ids), **params})


async def test_a_group_counts_its_distinct_ids_toward_both_limits(service: Service) -> None:
    for player, score in (("ann", 30), ("bob", 20)):
        assert (await submit(service.http, player=player, score=score)).status_code == 200
    distinct = [f"p{i}" for i in range(MAX_GROUP - 2)] + ["ann", "bob"]
    named_twice = await _group(service, [*distinct, "ann", "bob", "p0"])
    assert named_twice.status_code == 200, named_twice.text
    assert [e["entry"]["playerId"] for e in named_twice.json()["entries"]] == ["ann", "bob"]
    too_many = await _group(service, [*distinct, "p-extra"])
    assert too_many.status_code == 422
    assert f"1 to {MAX_GROUP} distinct players" in too_many.json()["detail"]

    ranked = distinct[-MAX_GROUP_RANKED:]
    with_rank = await _group(service, [*ranked, *ranked], withRank="true")
    assert with_rank.status_code == 200, with_rank.text
    assert [e["rank"]["rank"] for e in with_rank.json()["entries"]] == [1, 2]
    too_many_ranked = await _group(service, [*ranked, "p-extra"], withRank="true")
    assert too_many_ranked.status_code == 422
    assert f"1 to {MAX_GROUP_RANKED} distinct players" in too_many_ranked.json()["detail"]


async def test_production_refuses_a_variant_no_one_defined_unless_told_otherwise(
    dynamo_endpoint: str,
    table_names: TableNames,
    runtime: Runtime,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Production signs with the credential chain's keys, even on moto's endpoint: give it some.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "production-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "production-test")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    production = make_settings(dynamo_endpoint, table_names, environment="production")
    assert production.undefined_boards == "refuse"
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with serve(production) as running:
        refused = await submit(running.http, player="p1", score=5, variant="new-every-time")
        defined = await running.http.put(
            "/v1/games/trivia/variants/classic", json={"order": "desc"}, headers=admin
        )
        assert defined.status_code == 200, defined.text
        accepted = await submit(running.http, player="p1", score=5, variant="classic")
        listing = (await running.http.get("/v1/boards")).json()
    assert refused.status_code == 422
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "'new-every-time'" in refused.json()["detail"]
    assert refused.json()["errors"] == [
        {"field": "variant", "message": "not a defined variant of the game"}
    ]
    assert accepted.status_code == 200, accepted.text
    assert [v["variant"] for g in listing["games"] for v in g["variants"]] == ["classic"]
    allowed = make_settings(
        dynamo_endpoint, table_names, environment="production", undefined_boards="allow"
    )
    assert allowed.undefined_boards == "allow"
    assert make_settings(dynamo_endpoint, table_names).undefined_boards == "allow"
