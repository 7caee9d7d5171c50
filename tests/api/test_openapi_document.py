"""The OpenAPI document is the contract a generated client is built from: it is the committed
``docs/openapi.json`` (so a change to it is a reviewed change), every operation has a short id and
an audience, every error is the Problem under ``application/problem+json``, and every problem
``type`` resolves to a page saying what it means."""

from __future__ import annotations

import json
import re
from typing import Any

from app.api.problem_types import MEANING
from app.errors import problem_types
from tests.conftest import Service
from tools.openapi_document import COMMITTED, document_text

HOW = "run `python3 tools/uv.py run --frozen python -m tools.openapi_document --write docs/openapi.json`"


def _operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
    ]


async def test_the_served_document_is_the_committed_one(service: Service) -> None:
    served = (await service.http.get("/openapi.json")).json()
    assert served == json.loads(COMMITTED.read_text()), f"the contract changed: {HOW}"
    assert document_text() == COMMITTED.read_text(), f"docs/openapi.json is stale: {HOW}"


def test_every_operation_has_a_short_id_and_an_audience() -> None:
    document = json.loads(document_text())
    tags = {tag["name"] for tag in document["tags"]}
    ids = [operation["operationId"] for _, _, operation in _operations(document)]
    assert len(ids) == len(set(ids))
    for method, path, operation in _operations(document):
        assert re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)+", operation["operationId"]), (method, path)
        assert len(operation["tags"]) == 1, (method, path)
        assert set(operation["tags"]) <= tags
    by_id = {op["operationId"]: (m, p) for m, p, op in _operations(document)}
    assert by_id["submitScore"] == ("post", "/v1/scores")
    assert by_id["getTopOfBoard"] == ("get", "/v1/leaderboards/{game}/{variant}/{period}")
    assert by_id["getPlayerRank"][1].endswith("/players/{player_id}")


def test_every_error_is_the_problem_document_and_bodies_are_named() -> None:
    document = json.loads(document_text())
    problem = {"schema": {"$ref": "#/components/schemas/Problem"}}
    for method, path, operation in _operations(document):
        for status, response in operation["responses"].items():
            if int(status) >= 400:
                assert response["content"] == {"application/problem+json": problem}, (
                    method,
                    path,
                    status,
                )
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is not None:
            assert set(body["schema"]) == {"$ref"}, (method, path)
    text = json.dumps(document)
    for internal in ("apikey", "seedlock", "hist#", "idem#", "Playerid", "Achievedat"):
        assert internal not in text


def test_the_examples_match_their_parameters() -> None:
    document = json.loads(document_text())
    for _, _, operation in _operations(document):
        for parameter in operation.get("parameters", []):
            examples = parameter["schema"].get("examples", [])
            pattern = parameter["schema"].get("pattern")
            for example in examples:
                if pattern:
                    assert re.search(pattern, str(example)), (parameter["name"], example)
            if parameter["name"] == "variant":
                assert "player_123" not in examples


async def test_every_problem_type_resolves_to_a_page_that_says_what_it_means(
    service: Service,
) -> None:
    assert set(MEANING) == set(problem_types()), "each problem type needs its meaning"
    for slug, (status, title) in problem_types().items():
        page = await service.http.get(f"/problems/{slug}")
        assert page.status_code == 200, slug
        assert page.headers["content-type"].startswith("text/html")
        assert title in page.text
        assert str(status) in page.text
    index = await service.http.get("/problems")
    assert all(f'id="{slug}"' in index.text for slug in problem_types())
    unknown = await service.http.get("/problems/no-such-thing")
    assert unknown.status_code == 404
    assert unknown.json()["type"] == "/problems/not-found"
    # A problem the service answers with names a type that resolves.
    refused = await service.http.post("/v1/scores", json={})
    assert refused.status_code == 401
    assert (await service.http.get(refused.json()["type"])).status_code == 200
