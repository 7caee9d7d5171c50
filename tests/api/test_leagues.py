"""Leagues (DESIGN.md section 16, decision 0040) over HTTP on the embedded backend: a league of
three tiers over two closes moves exactly its promoted and relegated players, once, lists them
in each close's event, and places every player in their tier's cohorts; a player of the last
period waits on its close (503 with Retry-After) and reads ``pending`` meanwhile; the
definition's rules for tiers are 422s; erasure takes the league record and the player's id out
of the moves.

The seasons are a few seconds long, in real time, so that a period ends during the test; the
service is run with no lateness, so that it closes as it ends."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.domain.clock import iso_ms, to_ms
from app.settings import Settings
from app.store.tables import TableNames
from tests.api.test_definitions import define
from tests.conftest import SUBMIT_KEY, Service, make_settings
from tests.support import operations, scores_items, submit

SPAN_S = 11
"""Each short season's length: long enough for a phase's submissions on a busy machine."""
VARIANT = "/v1/games/trivia/variants/classic"
TIERS = [
    {"id": "bronze", "promote": 1},
    {"id": "silver", "promote": 1, "demote": 1},
    {"id": "gold", "demote": 1},
]


@pytest.fixture
def settings(dynamo_endpoint: str, table_names: TableNames) -> Settings:
    return make_settings(dynamo_endpoint, table_names, max_lateness_seconds=0)


def _seasons(start: datetime) -> Iterator[dict[str, str]]:
    edges = [start - timedelta(minutes=1), *(start + timedelta(seconds=SPAN_S * i) for i in (1, 2))]
    edges.append(start + timedelta(days=1))
    for number, (begins, ends) in enumerate(itertools.pairwise(edges), start=1):
        yield {"id": f"s{number}", "startsAt": iso_ms(to_ms(begins)), "endsAt": iso_ms(to_ms(ends))}


async def _league(http: httpx.AsyncClient, player: str) -> dict[str, Any]:
    answer = await http.get(f"{VARIANT}/players/{player}/league")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def _scores(http: httpx.AsyncClient, scores: dict[str, int]) -> dict[str, str]:
    """Each player's score, in order (first come, first placed): their cohorts."""
    cohorts = {}
    for player, value in scores.items():
        sent = await submit(http, player=player, score=value)
        assert sent.status_code == 200, sent.text
        cohorts[player] = (await http.get(_rank(player))).json()["cohort"]["cohortId"]
    return cohorts


def _rank(player: str) -> str:
    return f"/v1/leaderboards/trivia/classic/season/players/{player}"


async def _until(moment: datetime) -> None:
    await asyncio.sleep(max(0.0, (moment - datetime.now(UTC)).total_seconds()) + 0.2)


async def _close(service: Service) -> None:
    counts = await operations(service.runtime, settle=timedelta(0)).close_periods(datetime.now(UTC))
    assert (counts.closed, counts.failed) == (1, 0), counts


async def _league_events(service: Service) -> list[dict[str, Any]]:
    items = await scores_items(service.runtime)
    events = [json.loads(i["body"]["S"]) for i in items if i["playerId"]["S"] == "outbox#trivia"]
    return sorted(
        (e["league"] | {"period": e["period"]["id"]} for e in events if "league" in e),
        key=lambda league: str(league["period"]),
    )


def _moved(league: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(m["playerId"], m["from"], m["to"]) for m in league["moves"]}


async def test_three_tiers_over_two_closes_move_exactly_the_promoted_and_relegated(
    service: Service,
) -> None:
    http, start = service.http, datetime.now(UTC)
    s1_ends, s2_ends = (start + timedelta(seconds=SPAN_S * i) for i in (1, 2))
    defined = await define(
        http, periods=["season"], seasons=list(_seasons(start)), cohortSize=3, tiers=TIERS
    )
    assert defined.status_code == 200, defined.text
    assert defined.json()["tiers"] == [{"promote": 0, "demote": 0} | t for t in TIERS]
    assert await _league(http, "p1") == {
        "tier": "bronze",
        "cohortId": None,
        "period": "season:s1",
        "previous": None,
    }

    # Season 1: everyone new, in the lowest tier; each cohort's best goes up.
    first = await _scores(http, {"p1": 60, "p2": 50, "p3": 40, "p4": 90, "p5": 80, "p6": 70})
    assert first == dict.fromkeys(["p1", "p2", "p3"], "bronze-1") | dict.fromkeys(
        ["p4", "p5", "p6"], "bronze-2"
    )
    assert (await _league(http, "p4"))["cohortId"] == "bronze-2"

    await _until(s1_ends)
    waiting = await submit(http, player="p1", score=1)
    assert waiting.status_code == 503, waiting.text
    assert int(waiting.headers["Retry-After"]) >= 1
    assert "close" in waiting.json()["detail"]
    assert (await _league(http, "p1"))["previous"] == {
        "period": "season:s1",
        "tier": "bronze",
        "cohortId": "bronze-1",
        "move": "pending",
    }
    new = await submit(http, player="p7", score=5)  # a new player waits on nothing
    assert new.status_code == 200, new.text
    await _close(service)

    # Season 2: p1 and p4 in silver; bronze's rest after the newcomer p7, who took its first
    # seat (their score was achieved after season 1's end).
    second = await _scores(http, {"p1": 90, "p4": 50, "p2": 10, "p3": 20, "p5": 70, "p6": 30})
    assert second == {
        "p1": "silver-1",
        "p4": "silver-1",
        "p2": "bronze-1",
        "p3": "bronze-1",
        "p5": "bronze-2",
        "p6": "bronze-2",
    }
    assert (await _league(http, "p1"))["previous"] is None  # placed this period
    await _until(s2_ends)
    await _close(service)

    players = ("p1", "p2", "p3", "p4", "p5", "p6", "p7")
    tiers = {p: (await _league(http, p))["tier"] for p in players}
    assert tiers == {
        "p1": "gold",
        "p2": "bronze",
        "p3": "silver",  # bronze-1's best: p7 5, p2 10, p3 20
        "p4": "bronze",
        "p5": "silver",  # bronze-2's best: p5 70, p6 30
        "p6": "bronze",
        "p7": "bronze",
    }
    assert (await _league(http, "p4"))["previous"] == {
        "period": "season:s2",
        "tier": "silver",
        "cohortId": "silver-1",
        "move": "down",
    }
    one, two = await _league_events(service)
    assert (one["period"], two["period"]) == ("season:s1", "season:s2")
    assert _moved(one) == {("p1", "bronze", "silver"), ("p4", "bronze", "silver")}
    assert _moved(two) == {
        ("p1", "silver", "gold"),
        ("p4", "silver", "bronze"),
        ("p3", "bronze", "silver"),
        ("p5", "bronze", "silver"),
    }
    assert (two["promoted"], two["demoted"], two["movesTruncated"]) == (3, 1, False)

    # Season 3: each in their tier's cohorts.
    assert await _scores(http, {"p1": 1, "p4": 1}) == {"p1": "gold-1", "p4": "bronze-1"}


async def test_a_league_s_definition_rules_are_422s_that_say_why(service: Service) -> None:
    http = service.http
    refused: dict[str, dict[str, Any]] = {
        "no cohortSize": {"periods": ["week"], "tiers": TIERS},
        "two periods": {"periods": ["week", "day"], "cohortSize": 5, "tiers": TIERS},
        "top promotes": {
            "periods": ["week"],
            "cohortSize": 5,
            "tiers": [{"id": "a", "promote": 1}, {"id": "b", "promote": 1}],
        },
        "bad id": {"periods": ["week"], "cohortSize": 5, "tiers": [{"id": "A-1"}, {"id": "b"}]},
        "unknown field": {"periods": ["week"], "cohortSize": 5, "tiers": [{"id": "a", "up": 1}]},
    }
    for why, body in refused.items():
        answer = await define(http, **body)
        assert answer.status_code == 422, (why, answer.text)
        assert answer.json()["type"] == "/problems/invalid-input", why
    assert (await http.get(VARIANT)).json()["defined"] is False  # nothing stored


async def test_the_league_of_a_variant_without_tiers_is_404(service: Service) -> None:
    http = service.http
    assert (await define(http, periods=["week"], cohortSize=5)).status_code == 200
    answer = await http.get(f"{VARIANT}/players/ann/league")
    assert answer.status_code == 404, answer.text
    assert "tiers" in answer.json()["detail"]
    assert (await define(http, periods=["week"], cohortSize=5, tiers=TIERS)).status_code == 200
    joined = await http.post(
        "/v1/leaderboards/trivia/classic/week/entrants/ann",
        headers={"Authorization": f"Bearer {SUBMIT_KEY}"},
    )
    assert (joined.status_code, joined.json()) == (
        201,
        {"playerId": "ann", "cohortId": "bronze-1", "tier": "bronze"},
    )
    league = await _league(http, "ann")
    assert (league["tier"], league["cohortId"]) == ("bronze", "bronze-1")
    assert (await submit(http, player="ann", score=10)).status_code == 200
    renamed = [{"id": "tin", "promote": 1}, *TIERS[1:]]
    changed = await define(http, periods=["week"], cohortSize=5, tiers=renamed)
    assert changed.status_code == 409, changed.text
    assert "tiers" in changed.json()["detail"]
    wider = [{"id": "bronze", "promote": 2}, *TIERS[1:]]
    assert (await define(http, periods=["week"], cohortSize=5, tiers=wider)).status_code == 200


async def test_players_joined_and_yet_to_score_hold_the_entry_fields(service: Service) -> None:
    http = service.http
    assert (await define(http, periods=["week"], joinRequired=True)).status_code == 200
    joined = await http.post(
        "/v1/leaderboards/trivia/classic/week/entrants/ann",
        headers={"Authorization": f"Bearer {SUBMIT_KEY}"},
    )
    assert joined.status_code == 201, joined.text
    # No score yet, but a seat: cohorts cut now would leave ann in none.
    refused = await define(http, periods=["week"], joinRequired=True, cohortSize=5)
    assert refused.status_code == 409, refused.text
    assert "cohortSize" in refused.json()["detail"]
    assert (await http.get(VARIANT)).json()["cohortSize"] is None


async def test_a_league_s_players_join_its_current_period_only(service: Service) -> None:
    http = service.http
    assert (await define(http, periods=["week"], cohortSize=5, tiers=TIERS)).status_code == 200
    now = datetime.now(UTC)
    for days in (7, -7):
        other = (now + timedelta(days=days)).isocalendar()
        path = f"week:{other.year}-W{other.week:02d}"
        refused = await http.post(
            f"/v1/leaderboards/trivia/classic/{path}/entrants/ann",
            headers={"Authorization": f"Bearer {SUBMIT_KEY}"},
        )
        assert refused.status_code == 422, refused.text
        assert "current period" in refused.json()["detail"]
    assert (await _league(http, "ann"))["cohortId"] is None  # nothing was placed
