"""Every bad input gets its 4xx problem document, says what was wrong, and writes nothing."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from app.api.patterns import RULES
from app.domain.clock import iso_ms
from tests.conftest import OTHER_GAME_KEY, SUBMIT_KEY, Service
from tests.support import now_ms, scores_items

VALID: dict[str, Any] = {"playerId": "p1", "score": 10, "game": "trivia", "variant": "classic"}
AUTH = {"Authorization": f"Bearer {SUBMIT_KEY}", "Idempotency-Key": "k-1"}


def _with(**changes: Any) -> dict[str, Any]:
    body = dict(VALID)
    for name, value in changes.items():
        if value is ...:
            body.pop(name, None)
        else:
            body[name] = value
    return body


BAD_BODIES: list[tuple[str, dict[str, Any], str]] = [
    ("negative score", _with(score=-1), "score"),
    ("score at the ceiling", _with(score=10**12), "score"),
    ("fractional score", _with(score=1.5), "score"),
    ("fractional float score", _with(score=10.25), "score"),
    ("string score", _with(score="10"), "score"),
    ("boolean score", _with(score=True), "score"),
    ("missing score", _with(score=...), "score"),
    ("hash in player id", _with(playerId="a#b"), "playerId"),
    ("empty player id", _with(playerId=""), "playerId"),
    ("long player id", _with(playerId="x" * 65), "playerId"),
    ("space in player id", _with(playerId="a b"), "playerId"),
    ("hash in game", _with(game="tri#via"), "game"),
    ("hash in variant", _with(variant="#"), "variant"),
    ("reserved game name", _with(game="idem"), "game"),
    ("unknown field", _with(nickname="x"), "nickname"),
    ("mass-assigned rank", _with(rank=1), "rank"),
    ("mass-assigned best", _with(best=10**9), "best"),
    ("mass-assigned rankKey", _with(rankKey="0000000000000#0#p1"), "rankKey"),
    ("naive achievedAt", _with(achievedAt="2026-11-30T10:00:00"), "achievedAt"),
    ("control char in name", _with(displayName="a\u0007b"), "displayName"),
    ("lowercase country", _with(country="gb"), "country"),
    ("non-object context", _with(context=[1, 2]), "context"),
    ("string rankDelta", _with(rankDelta="yes"), "rankDelta"),
]


async def _assert_nothing_written(service: Service) -> None:
    assert await scores_items(service.runtime) == []


def _assert_problem(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    problem: dict[str, Any] = response.json()
    assert problem["status"] == status
    assert problem["title"]
    assert problem["detail"]
    return problem


@pytest.mark.parametrize(("case", "body", "field"), BAD_BODIES, ids=[c for c, _, _ in BAD_BODIES])
async def test_invalid_fields_are_422_naming_the_field(
    service: Service, case: str, body: dict[str, Any], field: str
) -> None:
    response = await service.http.post("/v1/scores", json=body, headers=AUTH)
    problem = _assert_problem(response, 422)
    assert field in {e["field"] for e in problem["errors"]}, case
    await _assert_nothing_written(service)


@pytest.mark.parametrize(
    ("case", "offset_ms"), [("future beyond skew", 60_000), ("older than lateness", -7_200_000)]
)
async def test_achieved_at_out_of_window_is_422(
    service: Service, case: str, offset_ms: int
) -> None:
    body = _with(achievedAt=iso_ms(now_ms() + offset_ms))
    problem = _assert_problem(await service.http.post("/v1/scores", json=body, headers=AUTH), 422)
    assert "achievedAt" in problem["detail"], case
    await _assert_nothing_written(service)


async def test_malformed_json_is_400(service: Service) -> None:
    headers = {**AUTH, "Content-Type": "application/json"}
    response = await service.http.post("/v1/scores", content=b'{"playerId": ', headers=headers)
    _assert_problem(response, 400)
    response = await service.http.post("/v1/scores", content=b'{"score": NaN}', headers=headers)
    _assert_problem(response, 400)
    await _assert_nothing_written(service)


async def test_body_that_is_not_an_object_is_422(service: Service) -> None:
    response = await service.http.post("/v1/scores", json=[VALID], headers=AUTH)
    _assert_problem(response, 422)
    await _assert_nothing_written(service)


async def test_wrong_content_type_is_415(service: Service) -> None:
    headers = {**AUTH, "Content-Type": "text/plain"}
    response = await service.http.post("/v1/scores", content=json.dumps(VALID), headers=headers)
    _assert_problem(response, 415)
    await _assert_nothing_written(service)


async def test_body_over_the_limit_is_413(service: Service) -> None:
    body = _with(context={"padding": "x" * (70 * 1024)})
    _assert_problem(await service.http.post("/v1/scores", json=body, headers=AUTH), 413)
    await _assert_nothing_written(service)


async def test_missing_idempotency_key_is_400(service: Service) -> None:
    headers = {"Authorization": AUTH["Authorization"]}
    problem = _assert_problem(
        await service.http.post("/v1/scores", json=VALID, headers=headers), 400
    )
    assert "Idempotency-Key" in problem["title"]
    await _assert_nothing_written(service)


@pytest.mark.parametrize(
    ("case", "authorization", "status"),
    [
        ("no key", None, 401),
        ("unknown key", "Bearer not-a-key", 401),
        ("wrong scheme", f"Basic {SUBMIT_KEY}", 401),
        ("key of another game", f"Bearer {OTHER_GAME_KEY}", 403),
    ],
)
async def test_keys_are_checked_before_anything_is_written(
    service: Service, case: str, authorization: str | None, status: int
) -> None:
    headers = {"Idempotency-Key": "k-1"}
    if authorization:
        headers["Authorization"] = authorization
    response = await service.http.post("/v1/scores", json=VALID, headers=headers)
    _assert_problem(response, status)
    assert SUBMIT_KEY not in response.text, case
    assert "not-a-key" not in response.text, case
    await _assert_nothing_written(service)


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/v1/leaderboards/trivia/classic/alltime?limit=0", 422),
        ("/v1/leaderboards/trivia/classic/alltime?limit=101", 422),
        ("/v1/leaderboards/trivia/classic/year", 422),
        ("/v1/leaderboards/trivia/classic/month:2026-13", 422),
        ("/v1/leaderboards/trivia/classic/day:2026-02-30", 422),
        ("/v1/leaderboards/trivia/classic/week:2026-W60", 422),
        ("/v1/leaderboards/trivia/classic/alltime:2026", 422),
        ("/v1/leaderboards/tri%23via/classic/alltime", 422),
        ("/v1/leaderboards/trivia/classic/alltime?cursor=not-a-cursor", 400),
        ("/v1/leaderboards/trivia/classic/alltime?cursor=eyJ4Ijox.AAAA", 400),
        ("/v1/nothing-here", 404),
    ],
)
async def test_bad_reads_are_problems(service: Service, path: str, status: int) -> None:
    _assert_problem(await service.http.get(path), status)


async def test_a_cursor_only_works_on_its_own_board(service: Service) -> None:
    for i in range(3):
        headers = {**AUTH, "Idempotency-Key": f"k-{i}"}
        body = _with(playerId=f"p{i}", score=i, rankDelta=False)
        assert (
            await service.http.post("/v1/scores", json=body, headers=headers)
        ).status_code == 200
    page = (await service.http.get("/v1/leaderboards/trivia/classic/alltime?limit=1")).json()
    cursor = page["nextCursor"]
    assert cursor
    other = await service.http.get(f"/v1/leaderboards/trivia/other/alltime?cursor={cursor}")
    _assert_problem(other, 400)
    payload, signature = cursor.split(".")
    forged = payload[:-2] + ("A" if payload[-2] != "A" else "B") + payload[-1] + "." + signature
    tampered = await service.http.get(f"/v1/leaderboards/trivia/classic/alltime?cursor={forged}")
    _assert_problem(tampered, 400)
    ok = await service.http.get(f"/v1/leaderboards/trivia/classic/alltime?cursor={cursor}")
    assert [e["rank"] for e in ok.json()["entries"]] == [2, 3]


async def test_an_integral_number_written_with_a_fraction_is_an_integer(service: Service) -> None:
    """JSON Schema calls 10.0 an integer; so does the API."""
    response = await service.http.post("/v1/scores", json=_with(score=10.0), headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.json()["boards"][0]["best"] == 10


async def test_an_unknown_query_parameter_is_422(service: Service) -> None:
    response = await service.http.get("/v1/leaderboards/trivia/classic/alltime?limt=5")
    problem = _assert_problem(response, 422)
    assert problem["errors"] == [{"field": "limt", "message": "unknown"}]
    known = await service.http.get("/v1/leaderboards/trivia/classic/alltime?limit=5")
    assert known.status_code == 200


async def test_every_route_refuses_an_unknown_query_parameter_first(service: Service) -> None:
    """Each operation of the API and each page the service serves, with one parameter it does not
    declare and nothing else right (no key, no body): 422 naming it, before any other refusal,
    and nothing written."""
    before = await scores_items(service.runtime)
    paths = service.app.openapi()["paths"]
    operations = [(m.upper(), p) for p, ops in paths.items() for m in ops]
    operations += [("GET", "/"), ("GET", "/docs")]
    assert len(operations) > 20
    for method, template in operations:
        path = re.sub(r"\{[^}]+\}", "x", template)
        response = await service.http.request(method, f"{path}?nonsense=1")
        problem = _assert_problem(response, 422)
        assert problem["errors"] == [{"field": "nonsense", "message": "unknown"}], (method, path)
    assert await scores_items(service.runtime) == before


def _nested(kind: str, depth: int) -> str:
    """``depth`` objects or arrays inside one another, as JSON text."""
    if kind == "objects":
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth + "1" + "]" * depth


def _with_context(context: str) -> str:
    """A valid submission's JSON text with ``context`` (JSON text) added."""
    return json.dumps(VALID)[:-1] + ',"context":' + context + "}"


@pytest.mark.parametrize(
    "body",
    [
        # 400 objects are about 3 KB, far under the body limit; pydantic cannot serialise them.
        pytest.param(_with_context(_nested("objects", 400)), id="400 objects in context"),
        pytest.param(_with_context('{"a":' + _nested("arrays", 1_000) + "}"), id="1,000 arrays"),
        pytest.param(_with_context('{"a":' + _nested("arrays", 30_000) + "}"), id="30,000 arrays"),
        pytest.param(_nested("arrays", 30_000), id="a top-level array 30,000 deep"),
    ],
)
async def test_json_nested_past_the_limit_is_422_before_it_is_parsed(
    service: Service, body: str
) -> None:
    headers = {**AUTH, "Content-Type": "application/json"}
    response = await service.http.post("/v1/scores", content=body.encode(), headers=headers)
    problem = _assert_problem(response, 422)
    assert problem["type"] == "/problems/nested-too-deeply"
    assert "32" in problem["detail"]
    await _assert_nothing_written(service)


async def test_json_nested_to_the_limit_is_accepted(service: Service) -> None:
    # The body is one level and context a second: 30 more reach the limit of 32.
    body = _with_context('{"a":' * 29 + "[1]" + "}" * 29)
    headers = {**AUTH, "Content-Type": "application/json"}
    response = await service.http.post("/v1/scores", content=body.encode(), headers=headers)
    assert response.status_code == 200, response.text


def _patterns(document: Any) -> set[str]:
    if isinstance(document, dict):
        found = {document["pattern"]} if isinstance(document.get("pattern"), str) else set()
        for value in document.values():
            found |= _patterns(value)
        return found
    if isinstance(document, list):
        return set().union(*(_patterns(value) for value in document)) if document else set()
    return set()


async def test_every_pattern_in_the_document_has_its_rule_in_words(service: Service) -> None:
    document = (await service.http.get("/openapi.json")).json()
    patterns = _patterns(document)
    assert patterns  # ids, periods, keys, times, names, countries
    assert patterns <= set(RULES), patterns - set(RULES)


@pytest.mark.parametrize(
    ("method", "path", "headers", "body", "field"),
    [
        ("GET", "/v1/leaderboards/tri%23via/classic/alltime", {}, None, "game"),
        ("GET", "/v1/leaderboards/trivia/classic/day:9999-12-31", {}, None, "period"),
        ("GET", "/v1/leaderboards/trivia/classic/alltime/snapshots/yesterday", {}, None, None),
        ("GET", "/v1/players/a%20b/standings", {}, None, "player_id"),
        ("POST", "/v1/scores", {**AUTH, "Idempotency-Key": "two words"}, VALID, None),
        ("POST", "/v1/scores", AUTH, _with(playerId="a#b", country="gb", nickname="x"), None),
    ],
)
async def test_problems_state_rules_in_words_never_regexes_or_help_links(
    service: Service,
    method: str,
    path: str,
    headers: dict[str, str],
    body: dict[str, Any] | None,
    field: str | None,
) -> None:
    response = await service.http.request(method, path, headers=headers, json=body)
    problem = _assert_problem(response, 422)
    for said in [problem["detail"], *(e["message"] for e in problem["errors"])]:
        assert "pattern" not in said, said
        assert not any(mark in said for mark in ("^", "$", "\\d", "{1,", "[A-Z")), said
        assert "pydantic" not in said, said
    if field is not None:
        (error,) = [e for e in problem["errors"] if e["field"] == field]
        assert error["message"].startswith("must be")
