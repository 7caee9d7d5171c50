"""A cohort reads as a board of its own (DESIGN.md section 16, decision 0039), over HTTP on the
embedded backend: the players around a player in their cohort, a group's board within a cohort,
and a cohort's snapshots, each as the board's are; moderation, erasure and a void reach a
player's cohort row as their board's; seeding a cohort variant is refused."""

from __future__ import annotations

from typing import Any

import httpx

from app.domain.clock import iso_ms
from tests.api.test_definitions import ADMIN, define, top
from tests.api.test_moderation import moderate, restore
from tests.api.test_tournaments import score
from tests.conftest import SUBMIT_KEY, Service
from tests.support import now_ms

BOARD = "/v1/leaderboards/trivia/classic/alltime"
COHORT = f"{BOARD}/cohorts/2"
SCORES = (("ann", 10), ("bob", 30), ("cy", 20), ("dee", 50), ("eve", 40), ("fay", 5), ("gus", 1))
"""Placed in this order into cohorts of 3: 1 = ann, bob, cy; 2 = dee, eve, fay; 3 = gus."""


async def _cohorts(http: httpx.AsyncClient) -> None:
    assert (await define(http, cohortSize=3, periods=["alltime"])).status_code == 200
    for player, value in SCORES:
        assert (await score(http, player, value)).status_code == 200


def _ranked(body: dict[str, Any]) -> list[tuple[str, int | None]]:
    return [(e["playerId"], e["rank"]) for e in body["entries"]]


async def _json(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


async def test_around_a_player_reads_their_cohort_with_its_ranks(service: Service) -> None:
    http = service.http
    await _cohorts(http)
    around = await _json(await http.get(f"{COHORT}/players/eve/around"))
    assert around["leaderboardId"] == "trivia#classic#alltime#~2"
    assert around["rankKind"] == "exact"
    assert _ranked(around) == [("dee", 1), ("eve", 2), ("fay", 3)]
    # The board's around of the same player: everyone, board ranks.
    sides = {"before": 1, "after": 4}
    board = await _json(await http.get(f"{BOARD}/players/eve/around", params=sides))
    assert _ranked(board) == [("dee", 1), ("eve", 2), ("bob", 3), ("cy", 4), ("ann", 5), ("fay", 6)]
    one = await _json(await http.get(f"{COHORT}/players/fay/around", params={"before": 1}))
    assert _ranked(one) == [("eve", 2), ("fay", 3)]
    # A player of another cohort is not in this one, as a player not on a board.
    assert (await http.get(f"{COHORT}/players/bob/around")).status_code == 404
    assert (await http.get(f"{COHORT}/players/eve/around?after=51")).status_code == 422


async def test_a_group_board_within_a_cohort_leaves_out_the_other_cohorts(
    service: Service,
) -> None:
    http = service.http
    await _cohorts(http)
    params = {"ids": "bob,fay,dee,zed", "withRank": "true"}
    group = await _json(await http.get(f"{COHORT}/players", params=params))
    assert group["leaderboardId"] == "trivia#classic#alltime#~2"
    assert [
        (e["groupRank"], e["entry"]["playerId"], e["entry"]["rank"], e["rank"]["rank"])
        for e in group["entries"]
    ] == [(1, "dee", 1, 1), (2, "fay", 3, 3)]
    board = await _json(await http.get(f"{BOARD}/players", params=params))
    assert [e["entry"]["playerId"] for e in board["entries"]] == ["dee", "bob", "fay"]
    past = await _json(await http.get(f"{BOARD}/cohorts/9/players", params={"ids": "dee"}))
    assert past["entries"] == []
    assert (await http.get(f"{COHORT}/players", params={"ids": ""})).status_code == 422


async def test_a_cohort_s_snapshots_are_taken_listed_and_read_as_the_board_s(
    service: Service,
) -> None:
    http = service.http
    await _cohorts(http)
    url = f"{COHORT}/snapshots"
    refused = await http.post(url, headers={"Authorization": f"Bearer {SUBMIT_KEY}"})
    assert refused.status_code == 403, refused.text
    assert (await http.post(url)).status_code == 401
    taken = await http.post(url, params={"top": 2}, headers=ADMIN)
    assert taken.status_code == 201, taken.text
    snapshot = taken.json()
    assert snapshot["leaderboardId"] == "trivia#classic#alltime#~2"
    assert snapshot["playerCount"] == 3
    assert snapshot["reason"] == "manual"
    assert _ranked(snapshot) == [("dee", 1), ("eve", 2)]
    listed = await _json(await http.get(url))
    assert [(s["snapshotTakenAt"], s["playerCount"]) for s in listed["snapshots"]] == [
        (snapshot["snapshotTakenAt"], 3)
    ]
    assert listed["period"]["id"] == "alltime"
    read = await _json(await http.get(f"{url}/{snapshot['snapshotTakenAt']}"))
    assert read == snapshot
    # The board's snapshots are the board's own: the cohort's is not among them.
    assert (await _json(await http.get(f"{BOARD}/snapshots")))["snapshots"] == []
    assert (await http.get(f"{BOARD}/snapshots/{snapshot['snapshotTakenAt']}")).status_code == 404
    other = f"{BOARD}/cohorts/1/snapshots/{snapshot['snapshotTakenAt']}"
    assert (await http.get(other)).status_code == 404
    assert (await _json(await http.get(f"{BOARD}/cohorts/9/snapshots")))["snapshots"] == []


async def test_a_variant_without_cohorts_has_none_to_read_or_snapshot(service: Service) -> None:
    http = service.http
    assert (await score(http, "ann", 10)).status_code == 200
    cohort = f"{BOARD}/cohorts/1"
    for answer in (
        await http.get(f"{cohort}/players/ann/around"),
        await http.get(f"{cohort}/players", params={"ids": "ann"}),
        await http.get(f"{cohort}/snapshots"),
        await http.get(f"{cohort}/snapshots/2026-12-01T00:00:00.000Z"),
        await http.post(f"{cohort}/snapshots", headers=ADMIN),
    ):
        assert answer.status_code == 404, answer.text
        assert "cohortSize" in answer.json()["detail"]
    assert (await http.get(f"{BOARD}/cohorts/0/snapshots")).status_code == 422


async def test_a_hidden_player_leaves_their_cohort_s_reads_and_its_player_count(
    service: Service,
) -> None:
    http = service.http
    await _cohorts(http)
    taken = await http.post(f"{COHORT}/snapshots", headers=ADMIN)
    assert taken.status_code == 201, taken.text
    assert (await moderate(http, "dee", "hide")).status_code == 200
    page = await _json(await http.get(COHORT))
    assert page["playerCount"] == 2
    assert _ranked(page) == [("eve", 1), ("fay", 2)]
    assert (await http.get(f"{COHORT}/players/dee/around")).status_code == 404
    assert (await http.get(f"{BOARD}/players/dee")).status_code == 404
    around = await _json(await http.get(f"{COHORT}/players/fay/around"))
    assert _ranked(around) == [("eve", 1), ("fay", 2)]
    group = await _json(await http.get(f"{COHORT}/players", params={"ids": "dee,fay"}))
    assert [e["entry"]["playerId"] for e in group["entries"]] == ["fay"]
    assert (await _json(await http.get(f"{BOARD}/players/eve")))["cohort"]["rank"] == 1
    snapshot = await _json(await http.get(f"{COHORT}/snapshots/{taken.json()['snapshotTakenAt']}"))
    assert _ranked(snapshot) == [("eve", 1), ("fay", 2)]
    assert snapshot["playerCount"] == 2
    assert (await restore(http, "dee")).status_code == 200
    assert (await _json(await http.get(COHORT)))["playerCount"] == 3
    assert (await _json(await http.get(f"{BOARD}/players/eve")))["cohort"]["rank"] == 2


async def test_an_erased_player_leaves_their_cohort_and_its_snapshots(service: Service) -> None:
    http = service.http
    await _cohorts(http)
    taken = await http.post(f"{COHORT}/snapshots", headers=ADMIN)
    assert taken.status_code == 201, taken.text
    erased = await http.delete("/v1/players/eve", headers=ADMIN)
    assert erased.status_code == 200, erased.text
    page = await _json(await http.get(COHORT))
    assert (page["playerCount"], _ranked(page)) == (2, [("dee", 1), ("fay", 2)])
    snapshot = await _json(await http.get(f"{COHORT}/snapshots/{taken.json()['snapshotTakenAt']}"))
    assert [e["playerId"] for e in snapshot["entries"]] == ["dee", None, "fay"]


async def test_a_void_takes_the_entry_off_the_cohort_too_and_the_player_keeps_their_seat(
    service: Service,
) -> None:
    http = service.http
    await _cohorts(http)
    voided = await http.delete(f"{BOARD}/players/dee", params={"reason": "bot"}, headers=ADMIN)
    assert voided.status_code == 200, voided.text
    assert voided.json()["voided"]["score"] == 50
    page = await _json(await http.get(COHORT))
    assert (page["playerCount"], _ranked(page)) == (2, [("eve", 1), ("fay", 2)])
    assert "dee" not in [p for p, _, _ in await top(http)]
    assert (await http.delete(f"{BOARD}/players/dee", headers=ADMIN)).status_code == 404
    # Submitting again, the player is back in the cohort they were placed in.
    assert (await score(http, "dee", 7)).status_code == 200
    page = await _json(await http.get(COHORT))
    assert (page["playerCount"], _ranked(page)) == (3, [("eve", 1), ("dee", 2), ("fay", 3)])
    assert (await _json(await http.get(f"{BOARD}/players/dee")))["cohort"]["cohortId"] == "2"


async def test_seeding_a_cohort_variant_is_refused_and_writes_nothing(service: Service) -> None:
    http = service.http
    await _cohorts(http)
    text = f"playerId,score,achievedAt\nzed,99,{iso_ms(now_ms() - 60_000)}\n"
    refused = await http.post(
        f"{BOARD}/seed",
        params={"graceSeconds": 0},
        content=text,
        headers={**ADMIN, "Content-Type": "text/csv"},
    )
    assert refused.status_code == 422, refused.text
    assert "cohortSize" in refused.json()["detail"]
    assert "zed" not in [p for p, _, _ in await top(http)]
    assert (await http.get(f"{BOARD}/players/zed")).status_code == 404
