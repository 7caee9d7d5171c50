"""Submissions to variants that place their players (DESIGN.md section 16, decision 0039) over
HTTP on the embedded backend: a first accepted submission places the player; ``joinRequired``
refuses a player not joined (403 not-joined, nothing stored); ``maxAttempts`` counts accepted
submissions, exactly under a race, and a replay is not one (409 attempts-exhausted past it);
``maxEntrants`` refuses a new player's first submission on a full board (409 full)."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx

from tests.api.test_definitions import ADMIN, define, top
from tests.api.test_entrants import join
from tests.conftest import Service
from tests.support import now_ms, scores_items, submit

AT = now_ms() - 60_000
"""One moment for every score: a replay is the same request."""


async def score(http: httpx.AsyncClient, player: str, value: int, **extra: str) -> httpx.Response:
    return await submit(http, player=player, score=value, achieved_ms=AT, **extra)


async def test_a_first_submission_places_the_player_in_a_cohort(service: Service) -> None:
    http = service.http
    assert (await define(http, cohortSize=2, periods=["alltime"])).status_code == 200
    for player in ("ann", "bob", "cy"):
        assert (await score(http, player, 10)).status_code == 200
    assert (await score(http, "ann", 20)).status_code == 200  # placed once
    placed = {p: (await join(http, p)).json()["cohortId"] for p in ("ann", "bob", "cy", "dee")}
    assert placed == {"ann": "1", "bob": "1", "cy": "2", "dee": "2"}
    assert (await join(http, "ann")).status_code == 200


async def test_a_player_not_joined_is_refused_403_and_nothing_is_stored(service: Service) -> None:
    http = service.http
    assert (await define(http, joinRequired=True, periods=["alltime"])).status_code == 200
    refused = await score(http, "ann", 10)
    assert refused.status_code == 403, refused.text
    assert refused.json()["type"] == "/problems/not-joined"
    assert await top(http) == []
    assert (await join(http, "ann")).status_code == 201
    assert (await score(http, "ann", 10)).status_code == 200
    assert await top(http) == [("ann", 10, 1)]


async def test_a_join_is_needed_on_every_period_board_a_score_goes_to(service: Service) -> None:
    http = service.http
    assert (await define(http, joinRequired=True, periods=["alltime", "day"])).status_code == 200
    assert (await join(http, "ann")).status_code == 201
    refused = await score(http, "ann", 10)
    assert refused.status_code == 403, refused.text
    assert "day#" in refused.json()["detail"]
    assert await top(http) == []
    assert (await join(http, "ann", "day")).status_code == 201
    assert (await score(http, "ann", 10)).status_code == 200


async def test_attempts_past_max_are_409_and_a_replay_is_not_an_attempt(service: Service) -> None:
    http = service.http
    assert (await define(http, maxAttempts=2, periods=["alltime"])).status_code == 200
    assert (await score(http, "ann", 10, idempotency_key="k1")).status_code == 200
    second = await score(http, "ann", 20, idempotency_key="k2")
    assert second.status_code == 200
    replayed = await score(http, "ann", 20, idempotency_key="k2")
    assert replayed.status_code == 200, replayed.text
    assert replayed.headers["Idempotent-Replayed"] == "true"
    assert replayed.json() == second.json()
    third = await score(http, "ann", 99, idempotency_key="k3")
    assert third.status_code == 409, third.text
    assert third.json()["type"] == "/problems/attempts-exhausted"
    assert await top(http) == [("ann", 20, 1)]  # the 99 stored nothing
    assert (await score(http, "bob", 5)).status_code == 200  # another player's own attempts
    risen = await define(http, maxAttempts=3, periods=["alltime"])
    assert risen.status_code == 200, risen.text
    assert (await score(http, "ann", 99, idempotency_key="k4")).status_code == 200


async def test_ten_submissions_at_once_for_the_last_attempt_land_one(service: Service) -> None:
    http = service.http
    assert (await define(http, maxAttempts=2, periods=["alltime"])).status_code == 200
    assert (await score(http, "ann", 1)).status_code == 200
    racing = await asyncio.gather(*(score(http, "ann", 10 + i) for i in range(10)))
    statuses = Counter(r.status_code for r in racing)
    assert statuses[200] == 1, [r.text for r in racing]
    assert set(statuses) <= {200, 409, 503}
    assert {r.json()["type"] for r in racing if r.status_code == 409} == {
        "/problems/attempts-exhausted"
    }


async def test_a_new_player_s_first_submission_to_a_full_board_is_409_full(
    service: Service,
) -> None:
    http = service.http
    assert (await define(http, maxEntrants=1, periods=["alltime"])).status_code == 200
    assert (await score(http, "ann", 10)).status_code == 200
    full = await score(http, "bob", 10)
    assert full.status_code == 409, full.text
    assert full.json()["type"] == "/problems/full"
    assert (await score(http, "ann", 20)).status_code == 200
    assert await top(http) == [("ann", 20, 1)]


async def test_erasing_a_player_erases_their_placements_and_keeps_the_seat_taken(
    service: Service,
) -> None:
    http = service.http
    assert (await define(http, cohortSize=2, periods=["alltime", "day"])).status_code == 200
    assert (await join(http, "ann")).status_code == 201
    assert (await score(http, "ann", 10)).status_code == 200  # placed on the day board too
    erased = await http.delete("/v1/players/ann", headers=ADMIN)
    assert erased.status_code == 200, erased.text
    assert not [i for i in await scores_items(service.runtime) if i["playerId"]["S"] == "ann"]
    # A seat given is not given back: the next player sits after the erased one.
    assert (await join(http, "bob")).json() == {"playerId": "bob", "cohortId": "1"}
    assert (await join(http, "cy")).json() == {"playerId": "cy", "cohortId": "2"}
