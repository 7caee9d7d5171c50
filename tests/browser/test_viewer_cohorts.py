"""The board viewer's cohort view in headless Chromium, against `leaderboard serve --demo`: on a
variant cut into cohorts (DESIGN.md section 16), the open player's panel lists the top of their
cohort as the API ranks it (``GET .../{period}/cohorts/{cohortId}``, named by their rank read),
their row marked; on a league variant it says the player's tier and cohort as the league read
answers them (``GET /v1/games/{game}/variants/{variant}/players/{playerId}/league``); on any other
variant it shows none, and asks for no cohort and no league.

Every figure is checked against what the API answers to the test itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import date, timedelta

import httpx
import pytest
from playwright.sync_api import Browser, Page, Request, Route

from tests.browser.harness import DESKTOP
from tests.browser.test_viewer import (
    REFRESH_TIMEOUT_MS,
    _as_shown,
    _open,
    _rows,
    _shown,
    _submit,
    _wait_for_text,
)
from tests.browser.test_viewer_periods import _define


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport=DESKTOP, locale="en-GB")
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    page.on(
        "console",
        lambda message: problems.append(f"console {message.type}: {message.text}")
        if message.type == "error" and "Failed to load resource" not in message.text
        else None,
    )
    yield page
    context.close()
    assert problems == [], problems


def _asked(page: Page) -> list[str]:
    """The API paths the page asks for from now on, in order."""
    paths: list[str] = []

    def record(request: Request) -> None:
        path = request.url.split("://", 1)[1].split("/", 1)[1]
        paths.append(f"/{path}")

    page.on("request", record)
    return paths


def _cohort_shown(page: Page) -> None:
    page.wait_for_selector("#cohort tbody tr", timeout=REFRESH_TIMEOUT_MS)


def test_a_players_cohort_is_listed_as_the_api_ranks_it_with_their_row_marked(
    page: Page, service: str, api: httpx.Client
) -> None:
    variant = f"cup{uuid.uuid4().hex[:6]}"
    _define(api, variant, {"cohortSize": 2, "periods": ["alltime"]})
    # First come, first placed: ann and bob fill cohort 1, cy opens cohort 2.
    for player, score in (("co-ann", 10), ("co-bob", 30), ("co-cy", 20)):
        _submit(api, player, score, variant=variant)
    board = f"/v1/leaderboards/trivia/{variant}/alltime"
    ranked = api.get(f"{board}/players/co-ann").json()
    assert ranked["rank"]["rank"] == 3
    assert ranked["cohort"] == {"cohortId": "1", "tier": None, "rank": 2}
    cohort = api.get(f"{board}/cohorts/1").json()
    assert [e["playerId"] for e in cohort["entries"]] == ["co-bob", "co-ann"]

    asked = _asked(page)
    _open(page, service, f"trivia/{variant}/alltime", "co-ann")
    _cohort_shown(page)
    assert page.is_visible("#cohort-view")
    assert page.text_content("#cohort-heading") == "Their cohort: 1"
    assert page.text_content("#cohort-rank") == "Rank 2 in the cohort of 2 players"
    rows = _rows(page, "#cohort")
    assert _shown(rows) == [_as_shown(e) for e in cohort["entries"]]
    assert [r["playerId"] for r in rows if "open" in r["classes"]] == ["co-ann"]
    current = page.eval_on_selector_all(
        "#cohort tbody tr[aria-current=true]", "rows => rows.map((r) => r.dataset.playerId)"
    )
    assert current == ["co-ann"]
    # The whole board is still the board: all three, ann third.
    assert [r["playerId"] for r in _rows(page)] == ["co-bob", "co-cy", "co-ann"]
    assert any(path.startswith(f"{board}/cohorts/1?limit=") for path in asked)
    assert not any(path.endswith("/league") for path in asked)  # no tiers: no league

    # ann's better score moves her up her cohort: the next refresh shows it, marked as a move.
    _submit(api, "co-ann", 40, variant=variant)
    _wait_for_text(page, "#cohort-rank", "Rank 1 in the cohort of 2 players")
    rows = _rows(page, "#cohort")
    cohort = api.get(f"{board}/cohorts/1").json()
    assert _shown(rows) == [_as_shown(e) for e in cohort["entries"]]
    assert [(r["playerId"], r["move"]) for r in rows] == [("co-ann", "▲1"), ("co-bob", "▼1")]

    # cy, alone in cohort 2.
    page.fill("#player", "co-cy")
    page.press("#player", "Enter")
    _wait_for_text(page, "#cohort-heading", "Their cohort: 2")
    _wait_for_text(page, "#cohort-rank", "Rank 1 in the cohort of 1 player")
    assert [r["playerId"] for r in _rows(page, "#cohort")] == ["co-cy"]
    assert page.is_hidden("#player-league")


def test_a_league_players_tier_and_cohort_are_said_as_the_league_read_answers(
    page: Page, service: str, api: httpx.Client
) -> None:
    variant = f"league{uuid.uuid4().hex[:6]}"
    tiers = [{"id": "bronze", "promote": 1}, {"id": "silver", "demote": 1}]
    _define(api, variant, {"cohortSize": 2, "periods": ["day"], "tiers": tiers})
    for player, score in (("lg-ann", 10), ("lg-bob", 30), ("lg-cy", 20)):
        _submit(api, player, score, variant=variant)
    league = api.get(f"/v1/games/trivia/variants/{variant}/players/lg-cy/league").json()
    today = league["period"]
    assert (league["tier"], league["cohortId"]) == ("bronze", "bronze-2")
    assert today.startswith("day:")
    board = f"/v1/leaderboards/trivia/{variant}/{today}"
    assert api.get(f"{board}/players/lg-cy").json()["cohort"] == {
        "cohortId": "bronze-2",
        "tier": "bronze",
        "rank": 1,
    }

    asked = _asked(page)
    _open(page, service, f"trivia/{variant}/day", "lg-cy")
    _cohort_shown(page)
    page.wait_for_selector("#player-league:not([hidden])", timeout=REFRESH_TIMEOUT_MS)
    assert (
        page.text_content("#player-league") == f"League: bronze tier · cohort bronze-2 in {today}"
    )
    assert page.text_content("#cohort-heading") == "Their cohort: bronze-2 · bronze tier"
    assert page.text_content("#cohort-rank") == "Rank 1 in the cohort of 1 player"
    assert [r["playerId"] for r in _rows(page, "#cohort")] == ["lg-cy"]
    assert f"/v1/games/trivia/variants/{variant}/players/lg-cy/league" in asked

    # What the last period's close did, as the league read says it (a close is hours away here:
    # the service's answer, with the previous placement a close would have left, as the test's).
    yesterday = f"day:{date.fromisoformat(today[4:]) - timedelta(days=1)}"
    previous = {"period": yesterday, "tier": "silver", "cohortId": "silver-1", "move": "down"}

    def after_a_close(route: Route) -> None:
        answer = route.fetch()
        route.fulfill(response=answer, json={**answer.json(), "previous": previous})

    page.route("**/players/lg-cy/league", after_a_close)
    _wait_for_text(
        page,
        "#player-league",
        f"League: bronze tier · cohort bronze-2 in {today} · {yesterday} in silver: moved down",
    )


def test_a_variant_without_cohorts_shows_no_cohort_and_asks_for_none(
    page: Page, service: str, api: httpx.Client
) -> None:
    variant = f"plain{uuid.uuid4().hex[:6]}"
    _define(api, variant, {"periods": ["alltime"]})
    _submit(api, "pl-ann", 10, variant=variant)
    read = api.get(f"/v1/leaderboards/trivia/{variant}/alltime/players/pl-ann").json()
    assert read.get("cohort") is None

    asked = _asked(page)
    _open(page, service, f"trivia/{variant}/alltime", "pl-ann")
    page.wait_for_selector("#around tbody tr", timeout=REFRESH_TIMEOUT_MS)
    assert page.is_hidden("#cohort-view")
    assert page.is_hidden("#player-league")
    assert not any("/cohorts/" in path or path.endswith("/league") for path in asked)
