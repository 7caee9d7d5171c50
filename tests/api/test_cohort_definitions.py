"""The definition fields of cohorts and tournaments (DESIGN.md section 16, decision 0039):
``cohortSize``, ``joinRequired``, ``maxEntrants`` and ``maxAttempts`` stored, shown and validated
like the others, and fixed once the boards hold entries, but for ``maxAttempts`` rising."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.test_definitions import ADMIN, VARIANT, define, post
from tests.conftest import Service
from tests.support import now_ms

CUP: dict[str, Any] = {
    "cohortSize": 50,
    "joinRequired": True,
    "maxEntrants": 1000,
    "maxAttempts": 3,
}


async def test_the_entry_fields_are_stored_and_shown(service: Service) -> None:
    http = service.http
    put = await define(http, **CUP)
    assert put.status_code == 200, put.text
    shown = (await http.get(VARIANT)).json()
    assert {name: shown[name] for name in CUP} == CUP
    assert (await http.get("/v1/games/trivia/variants")).json()["variants"][0]["cohortSize"] == 50
    cleared = (await define(http)).json()
    assert (cleared["cohortSize"], cleared["joinRequired"], cleared["maxAttempts"]) == (
        None,
        False,
        None,
    )


@pytest.mark.parametrize(
    "body",
    [
        {"cohortSize": 1},
        {"cohortSize": 1001},
        {"cohortSize": "50"},
        {"cohortSize": 2.5},
        {"joinRequired": "yes"},
        {"joinRequired": 1},
        {"maxEntrants": 0},
        {"maxEntrants": 10**7 + 1},
        {"maxAttempts": 0},
        {"maxAttempts": 10_001},
        {"maxAttempts": True},
        {"tiers": [{"id": "solo"}]},
    ],
)
async def test_a_bad_entry_field_is_a_422_that_changes_nothing(
    service: Service, body: dict[str, Any]
) -> None:
    response = await service.http.put(VARIANT, json=body, headers=ADMIN)
    assert response.status_code == 422, response.text
    assert (await service.http.get(VARIANT)).json()["defined"] is False


async def test_the_extremes_are_taken(service: Service) -> None:
    bodies: list[dict[str, Any]] = [
        {"cohortSize": 2, "maxEntrants": 1, "maxAttempts": 1},
        {"cohortSize": 1000, "maxEntrants": 10**7, "maxAttempts": 10_000},
        {"cohortSize": 50.0},
    ]
    for body in bodies:
        response = await define(service.http, **body)
        assert response.status_code == 200, response.text


async def test_entry_fields_are_fixed_once_boards_hold_entries_but_attempts_may_rise(
    service: Service,
) -> None:
    http = service.http
    assert (await define(http, cohortSize=7, maxAttempts=5)).status_code == 200
    assert (await define(http, cohortSize=8, maxAttempts=5)).status_code == 200  # empty: free
    await post(http, "ann", 10, now_ms() - 60_000)
    changes: list[dict[str, Any]] = [
        {"cohortSize": 9, "maxAttempts": 5},
        {"cohortSize": 8, "maxAttempts": 5, "joinRequired": True},
        {"cohortSize": 8, "maxAttempts": 5, "maxEntrants": 100},
        {"cohortSize": 8, "maxAttempts": 4},
        {"maxAttempts": 5},  # no cohorts: a change too
    ]
    for change in changes:
        refused = await define(http, **change)
        assert refused.status_code == 409, (change, refused.text)
        assert "hold entries" in refused.json()["detail"]
    assert (await http.get(VARIANT)).json()["cohortSize"] == 8
    for rise in (6, None):
        risen = await define(http, cohortSize=8, maxAttempts=rise)
        assert risen.status_code == 200, risen.text
        assert risen.json()["maxAttempts"] == rise
