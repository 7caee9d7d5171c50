"""Joins (DESIGN.md section 16, decision 0039) over HTTP on the embedded backend:
``POST .../{period}/entrants/{playerId}`` places a player first come first placed, 201 once and
200 after; 409 full past maxEntrants; 404 on a variant that places nobody; exact under a race
for the last places."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx

from tests.api.test_definitions import define
from tests.conftest import ADMIN_KEY, SUBMIT_KEY, Service
from tests.faults import install
from tests.support import submit

SUBMITTER = {"Authorization": f"Bearer {SUBMIT_KEY}"}
ENTRANTS = "/v1/leaderboards/trivia/classic/alltime/entrants"


async def join(http: httpx.AsyncClient, player: str, period: str = "alltime") -> httpx.Response:
    return await http.post(
        f"/v1/leaderboards/trivia/classic/{period}/entrants/{player}", headers=SUBMITTER
    )


async def test_a_join_places_the_player_once_201_then_200(service: Service) -> None:
    http = service.http
    assert (await define(http, cohortSize=2)).status_code == 200
    first = await join(http, "ann")
    assert first.status_code == 201, first.text
    assert first.json() == {"playerId": "ann", "cohortId": "1"}
    again = await join(http, "ann")
    assert again.status_code == 200, again.text
    assert again.json() == first.json()
    placed = [(await join(http, p)).json()["cohortId"] for p in ("bob", "cy", "dee", "eve")]
    assert placed == ["1", "2", "2", "3"]
    # Each period board seats its own: the day's is another board.
    assert (await join(http, "eve", "day")).json() == {"playerId": "eve", "cohortId": "1"}


async def test_a_variant_without_cohorts_or_caps_takes_no_joins(service: Service) -> None:
    refused = await join(service.http, "ann")
    assert refused.status_code == 404, refused.text
    assert "takes no joins" in refused.json()["detail"]


async def test_a_tournament_without_cohorts_places_players_with_no_cohort(
    service: Service,
) -> None:
    assert (await define(service.http, joinRequired=True)).status_code == 200
    joined = await join(service.http, "ann")
    assert (joined.status_code, joined.json()) == (201, {"playerId": "ann", "cohortId": None})


async def test_joins_past_max_entrants_are_409_full_and_a_repeat_is_still_200(
    service: Service,
) -> None:
    http = service.http
    assert (await define(http, maxEntrants=2)).status_code == 200
    assert [(await join(http, p)).status_code for p in ("ann", "bob")] == [201, 201]
    full = await join(http, "cy")
    assert full.status_code == 409, full.text
    problem = full.json()
    assert problem["type"] == "/problems/full"
    assert "maxEntrants" in problem["detail"]
    assert (await join(http, "ann")).status_code == 200


async def test_joining_needs_the_game_s_submit_key(service: Service) -> None:
    assert (await define(service.http, cohortSize=5)).status_code == 200
    anonymous = await service.http.post(f"{ENTRANTS}/ann")
    assert anonymous.status_code == 401
    bad = await service.http.post(f"{ENTRANTS}/a%23b", headers=SUBMITTER)
    assert bad.status_code == 422


async def test_fifty_joins_at_once_for_the_last_ten_places_place_exactly_ten(
    service: Service,
) -> None:
    http = service.http
    assert (await define(http, cohortSize=7, maxEntrants=20)).status_code == 200
    early = [await join(http, f"early{i}") for i in range(10)]
    assert {r.status_code for r in early} == {201}
    racing = await asyncio.gather(*(join(http, f"late{i:02d}") for i in range(50)))
    statuses = Counter(r.status_code for r in racing)
    assert statuses == {201: 10, 409: 40}, [r.text for r in racing if r.status_code >= 500]
    assert {r.json()["type"] for r in racing if r.status_code == 409} == {"/problems/full"}
    cohorts = Counter(r.json()["cohortId"] for r in [*early, *racing] if r.status_code == 201)
    assert cohorts == {"1": 7, "2": 7, "3": 6}
    # Every one of them placed once: a repeat answers the same cohort.
    winners: list[Any] = [r.json() for r in racing if r.status_code == 201]
    repeats = await asyncio.gather(*(join(http, w["playerId"]) for w in winners))
    assert [r.json() for r in repeats] == winners
    assert {r.status_code for r in repeats} == {200}


async def test_a_hundred_and_fifty_joins_fill_cohorts_of_seven_all_but_the_last(
    service: Service,
) -> None:
    """On the embedded backend, in racing waves (10,000 placements are the fakes' test,
    tests/unit/test_joins.py: the embedded backend serves one call at a time)."""
    http = service.http
    assert (await define(http, cohortSize=7)).status_code == 200
    answers: list[httpx.Response] = []
    for wave in range(0, 150, 25):
        answers += await asyncio.gather(*(join(http, f"p{i:03d}") for i in range(wave, wave + 25)))
    assert {r.status_code for r in answers} == {201}
    cohorts = Counter(r.json()["cohortId"] for r in answers)
    assert len(cohorts) == 22  # 21 full cohorts of 7, and 3 players in the last
    assert all(cohorts[str(c)] == 7 for c in range(1, 22))
    assert cohorts["22"] == 3


async def test_a_join_whose_answer_was_lost_is_answered_as_the_first_and_costs_two_calls(
    service: Service, dynamo_endpoint: str
) -> None:
    http = service.http
    assert (await define(http, cohortSize=3)).status_code == 200
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.lose_responses = 1  # applied, then its answer lost: botocore resends it
    first = await join(http, "ann")
    assert first.status_code == 201, first.text
    assert faults.seen["TransactWriteItems"] == 2
    faults.seen.clear()
    assert (await join(http, "bob")).json() == {"playerId": "bob", "cohortId": "1"}
    assert (faults.seen["BatchGetItem"], faults.seen["TransactWriteItems"]) == (1, 1)
    faults.seen.clear()
    assert (await join(http, "bob")).status_code == 200
    # A repeat is one read.
    assert (faults.seen["BatchGetItem"], faults.seen["TransactWriteItems"]) == (1, 0)


async def test_a_submission_to_a_tournament_makes_no_more_calls_and_to_cohorts_one(
    service: Service, dynamo_endpoint: str
) -> None:
    http = service.http
    faults = install(service.runtime.client, dynamo_endpoint)
    costs = []
    variants: list[tuple[str, dict[str, Any]]] = [
        ("plain", {"scoreFormat": "duration_ms"}),  # defined, as the others are
        ("cup", {"maxAttempts": 9, "maxEntrants": 100}),
        ("league", {"cohortSize": 5, "maxAttempts": 9}),
    ]
    for variant, fields in variants:
        path = f"/v1/games/trivia/variants/{variant}"
        assert (await define(http, path, **fields)).status_code == 200
        for player in ("ann", "ann", "bob"):  # warm, then a second submission, then a new player
            faults.seen.clear()
            sent = await submit(http, player=player, score=10, variant=variant)
            assert sent.status_code == 200, sent.text
            costs.append((variant, player, dict(faults.seen)))
    plain = [c for v, _, c in costs if v == "plain"]
    cup = [c for v, _, c in costs if v == "cup"]
    assert cup[1:] == plain[1:], costs
    # With cohorts: a new player's places read first, one call more; a player placed before
    # (the task remembers a placement: it never moves) makes none more.
    cohorts = [c for v, _, c in costs if v == "league"]
    assert cohorts[1] == plain[1], costs
    new_player = {**plain[2], "BatchGetItem": plain[2]["BatchGetItem"] + 1}
    assert cohorts[2] == new_player, costs


async def test_a_remembered_placement_erased_since_is_placed_again_where_the_count_says(
    service: Service,
) -> None:
    """The task remembers a placement (it never moves), but erasure deletes it: the next
    submission's write finds none, plans again, and seats the player anew, not in the cohort
    remembered."""
    http = service.http
    assert (await define(http, cohortSize=2, periods=["alltime"])).status_code == 200
    for player in ("ann", "ann", "bob"):  # ann's second submission is from memory
        assert (await submit(http, player=player, score=10)).status_code == 200
    board = "/v1/leaderboards/trivia/classic/alltime"
    assert (await http.get(f"{board}/players/ann")).json()["cohort"]["cohortId"] == "1"
    erased = await http.delete("/v1/players/ann", headers={"Authorization": f"Bearer {ADMIN_KEY}"})
    assert erased.status_code == 200, erased.text
    assert (await submit(http, player="ann", score=30)).status_code == 200
    assert (await http.get(f"{board}/players/ann")).json()["cohort"]["cohortId"] == "2"
    first = (await http.get(f"{board}/cohorts/1")).json()["entries"]
    assert [e["playerId"] for e in first] == ["bob"]


async def test_a_join_retried_with_its_idempotency_key_is_told_it_was_the_first(
    service: Service,
) -> None:
    http = service.http
    assert (await define(http, cohortSize=3)).status_code == 200
    path = "/v1/leaderboards/trivia/classic/alltime/entrants/ann"
    keyed = {"Authorization": f"Bearer {SUBMIT_KEY}", "Idempotency-Key": "signup-ann-1"}
    first = await http.post(path, headers=keyed)
    assert first.status_code == 201, first.text
    retried = await http.post(path, headers=keyed)  # as after a 201 that never arrived
    assert (retried.status_code, retried.json()) == (201, first.json())
    other = await http.post(path, headers={**keyed, "Idempotency-Key": "signup-ann-2"})
    assert (other.status_code, other.json()) == (200, first.json())
    unkeyed = await join(http, "ann")
    assert unkeyed.status_code == 200
