"""The board viewer at ``/`` in headless Chromium, against `leaderboard serve --demo` on its embedded
backend: every figure the page shows is checked against what the API answers for the same
question, the API asked by the test itself.

The service runs with ``LEADERBOARD_RANK_COUNT_CAP=1``, so that a handful of players tied on one
score get an estimated rank from the API itself (the demo's players, whose scores rarely tie, keep
exact ranks), and with the board list read afresh on each request, so a board a test makes is
listed at once. About 30 s; the page polls every 5 s and one test waits for a refresh. Midnight
UTC is the browser's fake clock (``BrowserContext.clock``) and a board list the test answers.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route

from app.api.viewer import WORDS, viewer_words
from tests.browser.harness import (
    DESKTOP,
    KEY,
    PHONE,
    take_screenshots,
    wait_for_rows,
)

DASH = "\u2013"  # the en dash the page writes between a range's two ends
REFRESH_TIMEOUT_MS = 15_000  # the page refreshes every 5 s

# The visible text of each row's cells, as a sighted reader sees it: without the text kept for
# screen readers (.visually-hidden), and with an entry's metadata (.meta, under the name) apart.
ROWS_JS = """(selector) => [...document.querySelectorAll(selector + " tbody tr")].map((row) => {
  const text = (element, without) => {
    const copy = element.cloneNode(true);
    copy.querySelectorAll(without).forEach((hidden) => hidden.remove());
    return copy.textContent.trim();
  };
  const visible = (cell) => text(cell, ".visually-hidden, .meta");
  const cells = Object.fromEntries([...row.cells].map((c) => [c.className.split(" ")[0], visible(c)]));
  const meta = row.querySelector(".meta");
  return {
    ...cells,
    meta: meta ? text(meta, ".visually-hidden") : "",
    playerId: row.dataset.playerId,
    classes: [...row.classList],
  };
})"""
# When an entry was achieved, as every table writes it: UTC, 24-hour, to the second.
UTC_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


class Offsite:
    """Every request the page makes that is not to the service: there must be none."""

    def __init__(self) -> None:
        self.requests: list[str] = []


@pytest.fixture
def offsite() -> Offsite:
    return Offsite()


@pytest.fixture
def context(browser: Browser, service: str, offsite: Offsite) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport=DESKTOP, locale="en-GB")

    def only_the_service(route: Route) -> None:
        if route.request.url.startswith(f"{service}/"):
            route.fallback()
        else:
            offsite.requests.append(route.request.url)
            route.abort()

    context.route("**/*", only_the_service)
    yield context
    context.close()
    assert offsite.requests == [], "the page asked for something off the service"


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
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
    assert problems == [], problems


def _open(
    page: Page, service: str, board: str, player: str | None = None, *, rows: bool = True
) -> None:
    game, variant, period = board.split("/")
    address = f"{service}/#game={game}&variant={variant}&period={period}"
    response = page.goto(address + (f"&player={player}" if player else ""))
    assert response is not None
    assert response.ok, f"GET / answered {response.status}: {response.text()[:300]}"
    if player is None and rows:
        wait_for_rows(page)


def _wait_for_text(page: Page, selector: str, text: str) -> None:
    """Until the element's text is ``text`` (the page refreshes every 5 s)."""
    page.wait_for_function(
        "([selector, text]) => document.querySelector(selector).textContent === text",
        arg=[selector, text],
        timeout=REFRESH_TIMEOUT_MS,
    )


def _values(page: Page, select: str) -> list[str]:
    values: list[str] = page.eval_on_selector_all(
        f"{select} option", "options => options.map(o => o.value)"
    )
    return values


def _hash(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(page.url).fragment).items()}


def _rows(page: Page, table: str = "#top") -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = page.evaluate(ROWS_JS, table)
    return rows


def _score(score: int, score_format: str = "integer") -> str:
    """A score as its board's ``scoreFormat`` says it reads: a duration in milliseconds as
    m:ss.fff (h:mm:ss.fff past the hour), anything else as the number."""
    if score_format != "duration_ms":
        return str(score)
    hours, rest = divmod(score, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    lead = f"{hours}:{minutes:02d}" if hours else f"{minutes}"
    return f"{lead}:{seconds:02d}.{millis:03d}"


def _top(percent: float) -> str:
    """A share as the page words it: "top 92%" for 91.67, never "top 100%"."""
    return "last place" if percent >= 100 else f"top {min(99, max(1, math.ceil(percent)))}%"


def _as_shown(entry: dict[str, Any], score_format: str = "integer") -> dict[str, str]:
    """An API entry as the page shows it: the rank (or the range), the name and the id, the
    country, the score as its board says it reads, and when in UTC on a 24-hour clock to the
    second."""
    rank = (
        str(entry["rank"])
        if entry["rank"] is not None
        else f"{entry['rankRange'][0]}{DASH}{entry['rankRange'][1]}"
    )
    name = entry["displayName"] or entry["playerId"]
    if entry["displayName"]:
        name = f"{name} {entry['playerId']}"
    achieved = entry["achievedAt"]
    return {
        "playerId": entry["playerId"],
        "rank": rank,
        "name": name,
        "country": entry["country"] or "",
        "score": _score(entry["score"], score_format),
        "when": f"{achieved[:10]} {achieved[11:19]}",
    }


def _metadata(entry: dict[str, Any]) -> str:
    """An entry's metadata as the page writes it under the name: "key: value" pairs, a value
    that is not a string as its compact JSON; nothing for none."""
    return " · ".join(
        f"{key}: {value if isinstance(value, str) else json.dumps(value, separators=(',', ':'))}"
        for key, value in (entry["metadata"] or {}).items()
    )


def _shown(rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    keys = ("playerId", "rank", "name", "country", "score", "when")
    return [{key: row[key] for key in keys} for row in rows]


def _submit(api: httpx.Client, player: str, score: int, *, variant: str, **extra: Any) -> None:
    response = api.post(
        "/v1/scores",
        json={"playerId": player, "score": score, "game": "trivia", "variant": variant, **extra},
        headers={"Authorization": f"Bearer {KEY}", "Idempotency-Key": uuid.uuid4().hex},
    )
    assert response.status_code == 200, response.text


def test_the_page_shows_the_top_in_the_apis_order(
    page: Page, service: str, api: httpx.Client
) -> None:
    expected = api.get("/v1/leaderboards/trivia/alltopics/alltime").json()
    _open(page, service, "trivia/alltopics/alltime")

    assert _shown(_rows(page)) == [_as_shown(e) for e in expected["entries"]]
    assert len(expected["entries"]) == 25
    assert page.text_content("#board-count") == f"{expected['playerCount']} players"
    assert page.text_content("#page-label") == f"Page 1: ranks 1{DASH}25"
    # The choices are the registry's, as GET /v1/boards lists them.
    listing = api.get("/v1/boards").json()
    (trivia,) = [g for g in listing["games"] if g["game"] == "trivia"]
    variants = page.eval_on_selector_all("#variant option", "options => options.map(o => o.value)")
    assert variants == [v["variant"] for v in trivia["variants"]]
    periods = page.eval_on_selector_all("#period option", "options => options.map(o => o.value)")
    (alltopics,) = [v for v in trivia["variants"] if v["variant"] == "alltopics"]
    assert periods == alltopics["periods"]
    labels = page.eval_on_selector_all("#period option", "options => options.map(o => o.text)")
    day, week, _month = listing["currentPeriods"]  # trivia/alltopics has no month board
    assert labels == ["All time", f"Today ({day[4:]})", f"This week ({week[5:]})"]
    # An undefined variant follows the default definition, and the page says what that is.
    definition = api.get("/v1/games/trivia/variants/alltopics").json()
    assert (definition["defined"], definition["order"], definition["operator"]) == (
        False,
        "desc",
        "best",
    )
    assert page.text_content("#board-rule") == "Higher is better · best score kept"
    assert _score_headings(page) == ["Score"] * 3
    integer = _words(api)["scoreFormat"]["integer"]
    assert _score_titles(page) == [integer] * 3  # what the scores are, in the service's words


def test_an_ascending_board_shows_the_lowest_first_and_says_lower_is_better(
    page: Page, service: str, api: httpx.Client
) -> None:
    definition = api.get("/v1/games/kart/variants/time-trial").json()
    assert (definition["order"], definition["operator"]) == ("asc", "best")  # the API's, first
    board = "/v1/leaderboards/kart/time-trial/alltime"
    read = api.get(board).json()
    assert read["scoreFormat"] == "duration_ms"  # lap times in milliseconds, the API says
    expected = read["entries"]
    times = [e["score"] for e in expected]
    assert times == sorted(times)  # lowest first, as the API orders it
    assert times[0] < times[-1]
    _open(page, service, "kart/time-trial/alltime")

    assert _shown(_rows(page)) == [_as_shown(e, "duration_ms") for e in expected]
    assert re.fullmatch(r"\d+:\d{2}\.\d{3}", _rows(page)[0]["score"])  # 0:54.610, not 54610
    assert page.text_content("#board-rule") == "Lower is better · best score kept"
    assert _score_headings(page) == ["Score"] * 3
    duration = _words(api)["scoreFormat"]["duration_ms"]
    assert _score_titles(page) == [duration] * 3
    assert page.text_content("#board-heading") == "Top of kart / time-trial / All time"
    periods = page.eval_on_selector_all("#period option", "options => options.map(o => o.value)")
    listing = api.get("/v1/boards").json()
    (kart,) = [g for g in listing["games"] if g["game"] == "kart"]
    assert periods == kart["variants"][0]["periods"]  # all-time and this week, no day

    # The fastest player's own view: rank 1 with their time, as the API gives it.
    fastest = expected[0]["playerId"]
    page.fill("#player", fastest)
    page.press("#player", "Enter")
    page.wait_for_selector("#around tbody tr", timeout=REFRESH_TIMEOUT_MS)
    line = page.text_content("#player-rank") or ""
    assert line.startswith("Rank 1")
    assert f" · score {_score(times[0], 'duration_ms')}" in line


def test_a_sum_board_shows_the_apis_totals_and_says_they_add_up(
    page: Page, service: str, api: httpx.Client
) -> None:
    definition = api.get("/v1/games/trivia/variants/season").json()
    assert (definition["order"], definition["operator"]) == ("desc", "sum")
    assert definition["periods"] == ["alltime", "month"]
    month = api.get("/v1/boards").json()["currentPeriods"][2]
    assert month.startswith("month:")
    board = f"/v1/leaderboards/trivia/season/{month}"
    expected = api.get(board).json()["entries"]
    assert expected
    player = expected[2]["playerId"]
    rank = api.get(f"{board}/players/{player}").json()
    around = api.get(f"{board}/players/{player}/around", params={"before": 5, "after": 5}).json()
    _open(page, service, f"trivia/season/{month}", player=player)
    page.wait_for_selector("#around tbody tr", timeout=REFRESH_TIMEOUT_MS)
    wait_for_rows(page)

    assert _shown(_rows(page)) == [_as_shown(e) for e in expected]  # the totals as given
    assert _shown(_rows(page, "#around")) == [_as_shown(e) for e in around["entries"]]
    assert page.text_content("#board-rule") == "Higher is better · scores add up to a total"
    assert _score_headings(page) == ["Total"] * 3
    assert page.text_content("#board-heading") == (
        f"Top of trivia / season / This month ({month[6:]})"
    )
    line = page.text_content("#player-rank") or ""
    assert f" · total {rank['entry']['score']}" in line  # a total, and called one
    if rank["rank"]["kind"] == "exact":  # totals can tie, and ties may be estimated here
        assert line.startswith(f"Rank {rank['rank']['rank']} · top ")


def test_the_definition_is_read_once_per_variant_and_its_failure_costs_only_the_words(
    page: Page, service: str
) -> None:
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/v1/games/" in r.url else None)

    def definition(url: str) -> bool:
        return "/v1/games/" in url

    page.route(
        definition,
        lambda route: route.fulfill(
            status=503,
            body='{"type":"about:blank","title":"Service unavailable","status":503}',
            headers={"Content-Type": "application/problem+json", "Retry-After": "1"},
        ),
    )
    _open(page, service, "kart/time-trial/alltime")
    # The board shows, in the API's order, without the words and with the plain heading.
    assert len(_rows(page)) > 0
    assert page.is_hidden("#board-rule")
    assert _score_headings(page) == ["Score"] * 3
    assert page.text_content("#board-message") == ""

    # Read again at the next refresh once it answers, and not at the refreshes after that.
    page.unroute(definition)
    page.wait_for_function(
        "() => document.querySelector('#board-rule').textContent === "
        "'Lower is better · best score kept'",
        timeout=REFRESH_TIMEOUT_MS,
    )
    assert page.is_visible("#board-rule")
    read = len(asked)
    with page.expect_request(
        lambda r: "/v1/leaderboards/kart/time-trial/alltime?" in r.url, timeout=REFRESH_TIMEOUT_MS
    ):
        pass  # a refresh of the same board
    page.select_option("#period", index=1)  # another period of the same variant
    page.wait_for_function(
        "() => document.querySelector('#board-heading').textContent.includes('This week')"
    )
    assert len(asked) == read
    assert asked[-1].endswith("/v1/games/kart/variants/time-trial")

    page.select_option("#game", "trivia")  # another variant: its own definition, once
    page.wait_for_function(
        "() => document.querySelector('#board-heading').textContent.startsWith('Top of trivia')"
    )
    assert len(asked) == read + 1
    assert page.text_content("#board-rule") == "Higher is better · best score kept"


def test_the_words_are_the_services_and_their_failure_costs_only_the_words(
    page: Page, service: str, api: httpx.Client
) -> None:
    """The page writes no words of its own for how a board ranks: it reads them once from the
    service (/viewer/words.json, made from the domain's enums), and a board shows without them
    until they are read."""
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if r.url.endswith(WORDS) else None)

    def words(url: str) -> bool:
        return url.endswith(WORDS)

    page.route(
        words,
        lambda route: route.fulfill(
            status=503,
            body='{"type":"about:blank","title":"Service unavailable","status":503}',
            headers={"Content-Type": "application/problem+json"},
        ),
    )
    month = api.get("/v1/boards").json()["currentPeriods"][2]
    _open(page, service, f"trivia/season/{month}")  # a sum board: its scores are totals
    # The board shows, in the API's order, without the words and with the plain heading.
    assert len(_rows(page)) > 0
    assert asked
    assert page.is_hidden("#board-rule")
    assert _score_headings(page) == ["Score"] * 3
    assert _score_titles(page) == [None] * 3
    assert page.text_content("#board-message") == ""

    # Read again at the next refresh once they are served, and not at the refreshes after that.
    page.unroute(words)
    _wait_for_text(page, "#board-rule", "Higher is better · scores add up to a total")
    assert page.is_visible("#board-rule")
    assert _score_headings(page) == ["Total"] * 3
    read = len(asked)
    with page.expect_request(
        lambda r: "/v1/leaderboards/trivia/season/month%3A" in r.url, timeout=REFRESH_TIMEOUT_MS
    ):
        pass  # a refresh of the same board (its period's ":" escaped in the path)
    page.select_option("#game", "kart")  # another variant's words come from the same file
    _wait_for_text(page, "#board-rule", "Lower is better · best score kept")
    assert len(asked) == read


def test_the_script_holds_none_of_the_words_it_writes(api: httpx.Client) -> None:
    """The words have one home, the domain: the script served holds none of them (but "Score",
    the heading it writes where it has no words), and the words served are the domain's."""
    served = _words(api)
    assert served == viewer_words()
    script = api.get("/viewer/viewer.js")
    assert script.status_code == 200
    for table, words in served.items():
        for value, text in words.items():
            if text == "Score":
                continue  # also the plain heading, without a definition or the words
            assert text not in script.text, f"viewer.js holds {table}.{value}: {text!r}"
    assert "Higher is better" not in script.text


def test_paging_follows_the_apis_cursor(page: Page, service: str, api: httpx.Client) -> None:
    first = api.get("/v1/leaderboards/trivia/alltopics/alltime").json()
    second = api.get(
        "/v1/leaderboards/trivia/alltopics/alltime", params={"cursor": first["nextCursor"]}
    ).json()
    _open(page, service, "trivia/alltopics/alltime")

    with page.expect_request(lambda r: "cursor=" in r.url) as asked:
        page.click("#next")
    query = parse_qs(urlsplit(asked.value.url).query)
    assert query["cursor"] == [first["nextCursor"]]
    page.wait_for_function(
        "() => document.querySelector('#page-label').textContent.startsWith('Page 2')"
    )
    assert _shown(_rows(page)) == [_as_shown(e) for e in second["entries"]]
    assert page.text_content("#page-label") == f"Page 2: ranks 26{DASH}50"

    page.click("#prev")
    page.wait_for_function(
        "() => document.querySelector('#page-label').textContent.startsWith('Page 1')"
    )
    assert _shown(_rows(page)) == [_as_shown(e) for e in first["entries"]]
    assert page.is_disabled("#prev")


def test_a_player_search_shows_the_rank_the_api_gives_and_the_players_around(
    page: Page, service: str, api: httpx.Client
) -> None:
    board = "/v1/leaderboards/trivia/alltopics/alltime"
    player = api.get(board).json()["entries"][3]["playerId"]
    rank = api.get(f"{board}/players/{player}").json()
    around = api.get(f"{board}/players/{player}/around", params={"before": 5, "after": 5}).json()
    assert rank["rank"]["kind"] == "exact", rank
    _open(page, service, "trivia/alltopics/alltime")

    # By keyboard alone: to the search box, type, Enter.
    for _ in range(20):
        if page.evaluate("document.activeElement && document.activeElement.id") == "player":
            break
        page.keyboard.press("Tab")
    else:
        pytest.fail("Tab never reached the player search")
    page.keyboard.type(player)
    page.keyboard.press("Enter")
    page.wait_for_selector("#around tbody tr", timeout=REFRESH_TIMEOUT_MS)

    line = page.text_content("#player-rank") or ""
    assert line.startswith(f"Rank {rank['rank']['rank']} · {_top(rank['rank']['topPercent'])}")
    assert "estimated" not in line
    rows = _rows(page, "#around")
    assert _shown(rows) == [_as_shown(e) for e in around["entries"]]
    assert [r["playerId"] for r in rows if "open" in r["classes"]] == [player]
    # Highlighted in the top table too, where the player is on the page shown.
    assert [r["playerId"] for r in _rows(page) if "open" in r["classes"]] == [player]
    assert f"player={player}" in page.url  # a link to this view


def test_an_estimated_rank_shows_its_range_never_a_number(
    page: Page, service: str, api: httpx.Client
) -> None:
    variant = f"tied{uuid.uuid4().hex[:6]}"
    achieved = (datetime.now(UTC) - timedelta(seconds=5)).isoformat(timespec="milliseconds")
    for player in ("t1", "t2", "t3", "t4"):  # one score, one instant: one crowded slot
        _submit(api, player, 500, variant=variant, achievedAt=achieved.replace("+00:00", "Z"))
    board = f"/v1/leaderboards/trivia/{variant}/alltime"
    rank = api.get(f"{board}/players/t3").json()["rank"]
    around = api.get(f"{board}/players/t3/around", params={"before": 5, "after": 5}).json()
    assert rank["kind"] == "estimated", rank  # what the API says, first
    assert rank["rank"] is None
    assert around["rankKind"] == "estimated"

    _open(page, service, f"trivia/{variant}/alltime", player="t3")
    page.wait_for_selector("#around tbody tr", timeout=REFRESH_TIMEOUT_MS)

    lo, hi = rank["rankRange"]
    line = page.text_content("#player-rank") or ""
    assert line.startswith(f"Rank {lo} to {hi} estimated · {_top(rank['topPercentRange'][0])}")
    assert f"Rank {rank['rankEstimate']} " not in line  # the estimate is not dressed up as a rank
    assert page.get_attribute("#player-rank", "data-kind") == "estimated"
    rows = _rows(page, "#around")
    assert _shown(rows) == [_as_shown(e) for e in around["entries"]]
    assert all(DASH in r["rank"] for r in rows)
    estimated = page.eval_on_selector_all("#around td.rank.estimated", "cells => cells.length")
    assert estimated == len(rows)


def test_an_unknown_or_malformed_player_is_said_so(page: Page, service: str) -> None:
    _open(page, service, "trivia/alltopics/alltime")
    page.fill("#player", "nobody-of-that-name")
    page.press("#player", "Enter")
    page.wait_for_function(
        "() => document.querySelector('#player-message').textContent !== 'Looking the player up…'"
    )
    message = page.text_content("#player-message") or ""
    assert message.startswith(
        "No player “nobody-of-that-name” on this board (trivia / alltopics / All time)"
    )
    assert page.is_hidden("#player-found")
    assert "error" in (page.get_attribute("#player-message", "class") or "")

    page.fill("#player", "two words")
    page.press("#player", "Enter")
    message = page.text_content("#player-message") or ""
    assert message.startswith("“two words” is not a player id")

    # A link naming a malformed id says so too, and asks the API nothing about it.
    page.goto("about:blank")  # a new document, not a same-page jump to another fragment
    with page.expect_request(lambda r: "/v1/leaderboards/" in r.url) as asked:
        _open(page, service, "trivia/alltopics/alltime", player="two%20words")
    assert "/players/" not in asked.value.url
    page.wait_for_selector("#top tbody tr")
    assert (page.text_content("#player-message") or "").startswith("“two words” is not a player id")


def test_an_earlier_day_is_offered_and_an_empty_board_is_said_so(
    page: Page, service: str, api: httpx.Client
) -> None:
    variant = f"archive{uuid.uuid4().hex[:6]}"
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date()
    period = f"day:{yesterday.isoformat()}"
    rows = "playerId,score,achievedAt,displayName,country\n" + "".join(
        f"old-{i},{1000 + i * 10},{yesterday.isoformat()}T12:00:0{i}.000Z,Old {i},FR\n"
        for i in range(3)
    )
    seeded = api.post(
        f"/v1/leaderboards/trivia/{variant}/{period}/seed",
        params={"graceSeconds": 0},
        content=rows,
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "text/csv"},
    )
    assert seeded.status_code == 200, seeded.text
    listing = api.get("/v1/boards").json()
    (trivia,) = [g for g in listing["games"] if g["game"] == "trivia"]
    assert {"variant": variant, "periods": [period]} in trivia["variants"]
    expected = api.get(f"/v1/leaderboards/trivia/{variant}/{period}").json()

    _open(page, service, f"trivia/{variant}/{period}")
    assert _shown(_rows(page)) == [_as_shown(e) for e in expected["entries"]]
    options = page.eval_on_selector_all("#period option", "options => options.map(o => o.value)")
    today = listing["currentPeriods"][0]
    assert options == [today, period]  # today's board offered beside the earlier day

    page.select_option("#period", today)
    page.wait_for_function("() => document.querySelector('#board-message').textContent !== ''")
    assert (
        page.text_content("#board-message") == "This board is empty: nobody has a score on it yet."
    )
    assert page.text_content("#board-count") == "0 players"
    assert page.is_hidden("#top")


def test_a_link_to_the_current_period_opens_it(page: Page, service: str, api: httpx.Client) -> None:
    """`period=day`, `week` and `month` name the current period, as in the API's paths: the
    link opens today's board (and keeps saying `day`), not all-time."""
    day, week, month = api.get("/v1/boards").json()["currentPeriods"]
    expected = api.get(f"/v1/leaderboards/trivia/alltopics/{day}").json()
    assert expected["entries"]  # the demo plays today
    assert api.get("/v1/leaderboards/trivia/alltopics/day").json() == expected  # the API's word
    _open(page, service, "trivia/alltopics/day")

    assert page.text_content("#board-heading") == f"Top of trivia / alltopics / Today ({day[4:]})"
    assert _shown(_rows(page)) == [_as_shown(e) for e in expected["entries"]]
    assert page.input_value("#period") == day
    assert _hash(page)["period"] == "day"  # a link to "today", whichever day that is

    page.goto("about:blank")
    _open(page, service, "trivia/alltopics/week")
    assert page.text_content("#board-heading") == (
        f"Top of trivia / alltopics / This week ({week[5:]})"
    )
    assert page.input_value("#period") == week
    page.goto("about:blank")
    _open(page, service, "trivia/season/month")
    assert (
        page.text_content("#board-heading") == f"Top of trivia / season / This month ({month[6:]})"
    )
    assert page.input_value("#period") == month


def test_a_link_to_a_board_the_list_does_not_hold_opens_that_board(
    page: Page, service: str, api: httpx.Client
) -> None:
    """A defined variant nobody has played, a game nobody has, an earlier period nobody played:
    not in GET /v1/boards, but the API reads each as an empty board, so the page shows it as
    asked, and never another game in its place."""
    variant = f"fresh{uuid.uuid4().hex[:6]}"
    defined = api.put(
        f"/v1/games/trivia/variants/{variant}",
        # The default's order and operator, so that the service holds no board to define it.
        json={"order": "desc", "operator": "best", "periods": ["alltime", "month"]},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert defined.status_code == 200, defined.text
    listing = api.get("/v1/boards").json()
    (trivia,) = [g for g in listing["games"] if g["game"] == "trivia"]
    assert variant not in [v["variant"] for v in trivia["variants"]]
    read = api.get(f"/v1/leaderboards/trivia/{variant}/alltime")
    assert (read.status_code, read.json()["entries"]) == (200, [])
    month = listing["currentPeriods"][2]

    _open(page, service, f"trivia/{variant}/alltime", rows=False)
    _wait_for_text(page, "#board-message", "This board is empty: nobody has a score on it yet.")
    assert page.text_content("#board-heading") == f"Top of trivia / {variant} / All time"
    assert page.text_content("#board-count") == "0 players"
    assert (page.input_value("#game"), page.input_value("#variant")) == ("trivia", variant)
    assert page.input_value("#period") == "alltime"
    # Its definition says how it ranks and which periods it keeps (no day, no week): offered.
    assert page.text_content("#board-rule") == "Higher is better · best score kept"
    page.wait_for_function(
        "(n) => document.querySelectorAll('#period option').length === n",
        arg=2,
        timeout=REFRESH_TIMEOUT_MS,
    )
    assert _values(page, "#period") == ["alltime", month]
    assert "error" not in (page.get_attribute("#board-message", "class") or "")

    # A game the list does not hold at all.
    game = f"nogame{uuid.uuid4().hex[:6]}"
    page.goto("about:blank")
    _open(page, service, f"{game}/classic/alltime", rows=False)
    _wait_for_text(page, "#board-heading", f"Top of {game} / classic / All time")
    assert page.text_content("#board-message") == (
        "This board is empty: nobody has a score on it yet."
    )
    assert (page.input_value("#game"), page.input_value("#variant")) == (game, "classic")
    assert "trivia" in _values(page, "#game")  # the listed games stay on offer

    # An earlier day of a listed variant that nobody played: offered in its place among the days.
    day = datetime.fromisoformat(listing["currentPeriods"][0][4:]).date()
    earlier = f"day:{(day - timedelta(days=3)).isoformat()}"
    page.goto("about:blank")
    _open(page, service, f"trivia/alltopics/{earlier}", rows=False)
    _wait_for_text(page, "#board-heading", f"Top of trivia / alltopics / {earlier[4:]}")
    assert page.text_content("#board-message") == (
        "This board is empty: nobody has a score on it yet."
    )
    assert page.input_value("#period") == earlier
    (alltopics,) = [v for v in trivia["variants"] if v["variant"] == "alltopics"]
    periods = list(alltopics["periods"])
    periods.insert(periods.index(listing["currentPeriods"][0]) + 1, earlier)
    assert _values(page, "#period") == periods


def test_a_board_the_api_refuses_is_said_so_naming_it(
    page: Page, service: str, api: httpx.Client
) -> None:
    """A board that cannot be shown is not replaced by another: the page names what the link
    asked for and says why, in the API's words."""
    refused = api.get("/v1/leaderboards/trivia/alltopics/yesterday")
    assert refused.status_code == 422  # the API's answer, first
    _open(page, service, "trivia/alltopics/yesterday", rows=False)
    page.wait_for_selector("#board-message.error", timeout=REFRESH_TIMEOUT_MS)
    assert page.text_content("#board-message") == (
        "Cannot show the board trivia / alltopics / yesterday. The service answered 422 "
        f"(Invalid input): {refused.json()['detail']}."
    )
    assert page.is_hidden("#top")
    assert page.text_content("#board-heading") == "Top of trivia / alltopics / yesterday"
    assert (page.input_value("#game"), page.input_value("#variant")) == ("trivia", "alltopics")
    assert page.input_value("#period") == "yesterday"

    # As production answers a variant nobody defined (LEADERBOARD_UNDEFINED_BOARDS=refuse).
    variant = f"undefined{uuid.uuid4().hex[:6]}"
    problem = {
        "type": "/problems/not-found",
        "title": "Not found",
        "status": 404,
        "detail": f"trivia/{variant} is not a defined variant",
    }
    page.route(
        lambda url: f"/v1/leaderboards/trivia/{variant}/" in url,
        lambda route: route.fulfill(
            status=404, json=problem, headers={"Content-Type": "application/problem+json"}
        ),
    )
    page.goto("about:blank")
    _open(page, service, f"trivia/{variant}/alltime", rows=False)
    page.wait_for_selector("#board-message.error", timeout=REFRESH_TIMEOUT_MS)
    assert page.text_content("#board-message") == (
        f"Cannot show the board trivia / {variant} / All time. The service answered 404 "
        f"(Not found): trivia/{variant} is not a defined variant."
    )
    assert page.is_hidden("#top")
    assert page.input_value("#variant") == variant

    # A game the list does not hold, and no variant named: no board to ask for.
    page.goto("about:blank")
    page.goto(f"{service}/#game=nothing-here")
    page.wait_for_selector("#board-message.error", timeout=REFRESH_TIMEOUT_MS)
    assert page.text_content("#board-message") == (
        "No board to show: the board list has no game “nothing-here”, and the link names no "
        "variant of it. Choose a board above."
    )
    assert page.input_value("#game") == "nothing-here"
    assert page.is_hidden("#top")


def test_today_moves_on_at_midnight_and_a_chosen_day_stays(
    context: BrowserContext, page: Page, service: str, api: httpx.Client
) -> None:
    """The browser's clock is set to 5 minutes before midnight UTC, and the board list answers as it
    did the day before; past midnight, it answers as it does. A page following today
    (`period=day`) moves on to the new day's board; one where the reader chose an earlier day
    stays on that day."""
    listing = api.get("/v1/boards").json()
    today = datetime.fromisoformat(listing["currentPeriods"][0][4:]).date()
    new_day, old_day, older_day = (f"day:{today - timedelta(days=n)}" for n in (0, 1, 2))
    (trivia,) = [g for g in listing["games"] if g["game"] == "trivia"]
    (alltopics,) = [v for v in trivia["variants"] if v["variant"] == "alltopics"]
    assert new_day in alltopics["periods"]

    def as_the_day_before(variant: dict[str, Any]) -> dict[str, Any]:
        periods = list(variant["periods"])
        if new_day in periods:
            at = periods.index(new_day)
            periods[at : at + 1] = [old_day, older_day]
        return {**variant, "periods": periods}

    before = {
        **listing,
        "games": [
            {**g, "variants": [as_the_day_before(v) for v in g["variants"]]}
            for g in listing["games"]
        ],
        "currentPeriods": [old_day, *listing["currentPeriods"][1:]],
    }
    midnight = datetime(today.year, today.month, today.day, tzinfo=UTC)
    past_midnight = {"now": False}

    def boards(route: Route) -> None:
        if past_midnight["now"]:
            route.fallback()  # the service's own list
        else:
            route.fulfill(status=200, json=before)

    context.route(lambda url: urlsplit(url).path == "/v1/boards", boards)
    context.clock.install(time=midnight - timedelta(minutes=5))

    _open(page, service, "trivia/alltopics/day", rows=False)
    _wait_for_text(page, "#board-heading", f"Top of trivia / alltopics / Today ({old_day[4:]})")
    assert page.input_value("#period") == old_day
    chooser = context.new_page()
    _open(chooser, service, "trivia/alltopics/day", rows=False)
    _wait_for_text(chooser, "#board-heading", f"Top of trivia / alltopics / Today ({old_day[4:]})")
    chooser.select_option("#period", older_day)  # the reader picks the day before
    _wait_for_text(chooser, "#board-heading", f"Top of trivia / alltopics / {older_day[4:]}")
    assert _hash(chooser)["period"] == older_day
    # And "Today" chosen again is "today", whichever day: the link says so.
    chooser.select_option("#period", old_day)
    _wait_for_text(chooser, "#board-heading", f"Top of trivia / alltopics / Today ({old_day[4:]})")
    assert _hash(chooser)["period"] == "day"
    chooser.select_option("#period", older_day)
    _wait_for_text(chooser, "#board-heading", f"Top of trivia / alltopics / {older_day[4:]}")

    past_midnight["now"] = True
    context.clock.fast_forward("05:10")  # 00:00:10 UTC: the next refresh is due

    expected = api.get(f"/v1/leaderboards/trivia/alltopics/{new_day}").json()
    _wait_for_text(page, "#board-heading", f"Top of trivia / alltopics / Today ({new_day[4:]})")
    wait_for_rows(page)
    assert _shown(_rows(page)) == [_as_shown(e) for e in expected["entries"]]
    assert page.input_value("#period") == new_day
    assert _hash(page)["period"] == "day"
    assert page.text_content("#board-message") == ""

    # The chooser's page has read the new list too ("Today" is the new day) and stays put.
    chooser.wait_for_function(
        "(label) => [...document.querySelectorAll('#period option')].some((o) => o.text === label)",
        arg=f"Today ({new_day[4:]})",
        timeout=REFRESH_TIMEOUT_MS,
    )
    assert chooser.text_content("#board-heading") == (
        f"Top of trivia / alltopics / {older_day[4:]}"
    )
    assert chooser.input_value("#period") == older_day
    assert _hash(chooser)["period"] == older_day


def test_times_are_utc_on_a_24_hour_clock_whatever_the_locale(
    browser: Browser, service: str, api: httpx.Client
) -> None:
    """A reader in Los Angeles with a US English browser (a 12-hour clock, UTC-8) sees the same
    times as anyone: UTC, 24-hour, in the tables and in the "Updated" line."""
    board = "/v1/leaderboards/trivia/alltopics/alltime"
    entries = api.get(board).json()["entries"]
    player = entries[4]["playerId"]
    around = api.get(f"{board}/players/{player}/around", params={"before": 5, "after": 5}).json()
    day = api.get("/v1/boards").json()["currentPeriods"][0][4:]
    context = browser.new_context(
        viewport=DESKTOP, locale="en-US", timezone_id="America/Los_Angeles"
    )
    try:
        context.clock.set_fixed_time(datetime.fromisoformat(f"{day}T21:05:09+00:00"))
        page = context.new_page()
        _open(page, service, "trivia/alltopics/alltime", player=player)
        page.wait_for_selector("#around tbody tr", timeout=REFRESH_TIMEOUT_MS)
        wait_for_rows(page)

        assert page.text_content("#updated") == "Updated 21:05:09 UTC"  # not "1:05:09 PM"
        for table, expected in (("#top", entries), ("#around", around["entries"])):
            shown = _rows(page, table)
            assert [r["when"] for r in shown] == [_as_shown(e)["when"] for e in expected]
            assert all(UTC_TIME.fullmatch(r["when"]) for r in shown), shown
        first = entries[0]["achievedAt"]
        assert page.get_attribute("#top tbody tr time", "title") == (
            f"{first[:10]} {first[11:23]} UTC"
        )
        assert page.text_content("#top th.when") == "Achieved (UTC)"
    finally:
        context.close()


def test_an_entrys_metadata_is_shown_as_text_in_both_tables(
    page: Page, service: str, api: httpx.Client
) -> None:
    variant = f"meta{uuid.uuid4().hex[:6]}"
    _submit(api, "m1", 300, variant=variant, metadata={"car": "mk2", "replay": "r-2931"})
    _submit(
        api,
        "m2",
        200,
        variant=variant,
        displayName="Em Two",
        metadata={"laps": [81234, 80999], "note": "<img src=x>&amp;", "ghost": True},
    )
    _submit(api, "m3", 100, variant=variant)  # none
    board = f"/v1/leaderboards/trivia/{variant}/alltime"
    expected = api.get(board).json()["entries"]
    around = api.get(f"{board}/players/m2/around", params={"before": 5, "after": 5}).json()
    assert [e["metadata"] is not None for e in expected] == [True, True, False]
    assert [e["metadata"] for e in around["entries"]] == [e["metadata"] for e in expected]

    _open(page, service, f"trivia/{variant}/alltime", player="m2")
    page.wait_for_selector("#around tbody tr", timeout=REFRESH_TIMEOUT_MS)
    wait_for_rows(page)

    for table, entries in (("#top", expected), ("#around", around["entries"])):
        rows = _rows(page, table)
        assert [r["meta"] for r in rows] == [_metadata(e) for e in entries]
        assert _shown(rows) == [_as_shown(e) for e in entries]  # the name and id as before
    assert _rows(page)[0]["meta"] == "car: mk2 · replay: r-2931"
    note = _rows(page)[1]["meta"]
    assert "note: <img src=x>&amp;" in note  # as text: never markup
    assert "laps: [81234,80999]" in note
    assert page.eval_on_selector_all("#top img, #around img", "images => images.length") == 0
    assert page.eval_on_selector_all("#top tbody tr:last-child .meta", "lines => lines.length") == 0


def test_the_choices_follow_every_page_of_the_board_list(
    page: Page, service: str, api: httpx.Client
) -> None:
    """GET /v1/boards is paged: a listing whose variants of one game continue on a second page,
    and a game on the second page alone, is offered whole."""
    listing = api.get("/v1/boards").json()
    first = dict(listing, nextCursor="page-two")
    trivia = next(g for g in listing["games"] if g["game"] == "trivia")
    later_variant = dict(trivia["variants"][0], variant="late-variant")
    second = dict(
        listing,
        games=[
            {**trivia, "variants": [later_variant]},
            {**trivia, "game": "later-game"},
        ],
        nextCursor=None,
    )
    asked: list[str] = []

    def boards(route: Route) -> None:
        asked.append(route.request.url)
        answer = second if "cursor=page-two" in route.request.url else first
        route.fulfill(status=200, json=answer)

    page.route(lambda url: urlsplit(url).path == "/v1/boards", boards)
    _open(page, service, "trivia/alltopics/alltime")
    games = page.eval_on_selector_all("#game option", "options => options.map(o => o.value)")
    assert "later-game" in games
    assert games.count("trivia") == 1
    variants = page.eval_on_selector_all("#variant option", "options => options.map(o => o.value)")
    assert "late-variant" in variants
    assert "alltopics" in variants
    assert any("cursor=page-two" in url for url in asked)


def test_an_error_from_the_service_is_said_and_the_page_recovers(page: Page, service: str) -> None:
    _open(page, service, "trivia/alltopics/alltime")
    problem = (
        '{"type":"about:blank","title":"Service unavailable","status":503,'
        '"detail":"DynamoDB is throttling this table"}'
    )

    def unavailable(route: Route) -> None:
        route.fulfill(
            status=503,
            body=problem,
            headers={"Content-Type": "application/problem+json", "Retry-After": "1"},
        )

    def top(url: str) -> bool:  # the top page's requests, not the player's
        return "/v1/leaderboards/trivia/alltopics/alltime?" in url

    page.route(top, unavailable)
    page.wait_for_function(
        "() => document.querySelector('#board-message.error') !== null", timeout=REFRESH_TIMEOUT_MS
    )
    assert page.text_content("#board-message") == (
        "Could not refresh the board; it shows the last answer. The service answered 503 "
        "(Service unavailable): DynamoDB is throttling this table. Trying again in a few seconds."
    )
    assert len(_rows(page)) == 25  # the last answer stays

    page.unroute(top)
    page.route(top, lambda route: route.abort("connectionrefused"))
    page.wait_for_function(
        "() => document.querySelector('#board-message').textContent.includes('does not answer')",
        timeout=REFRESH_TIMEOUT_MS,
    )
    assert "The service does not answer (is it running?)" in (
        page.text_content("#board-message") or ""
    )

    # Paused, nothing is fetched; resumed, the page refreshes at once and the message goes.
    page.uncheck("#auto")
    page.unroute(top)
    with page.expect_response(lambda r: top(r.url) and r.status == 200):
        page.check("#auto")
    page.wait_for_function("() => document.querySelector('#board-message').textContent === ''")
    assert len(_rows(page)) == 25


def test_a_refresh_after_a_submission_shows_the_new_order_keeping_the_place_and_the_player(
    page: Page, service: str, api: httpx.Client
) -> None:
    board = "/v1/leaderboards/trivia/sports/alltime"
    before = api.get(board).json()["entries"]
    watched = before[10]["playerId"]
    page.set_viewport_size({"width": DESKTOP["width"], "height": 600})  # room to scroll
    _open(page, service, "trivia/sports/alltime", player=watched)
    page.wait_for_selector("#around tbody tr", timeout=REFRESH_TIMEOUT_MS)
    wait_for_rows(page)
    page.evaluate("window.scrollTo(0, 300)")
    scrolled = page.evaluate("window.scrollY")
    assert scrolled > 0

    # A newcomer takes the lead: everyone on the page moves down one place.
    newcomer = f"rising-{uuid.uuid4().hex[:6]}"
    _submit(
        api,
        newcomer,
        before[0]["score"] + 1000,
        variant="sports",
        displayName="Rising Star",
        country="IS",
    )
    page.wait_for_function(
        "(id) => document.querySelector('#top tbody tr').dataset.playerId === id",
        arg=newcomer,
        timeout=REFRESH_TIMEOUT_MS,
    )

    after = api.get(board).json()["entries"]
    rows = _rows(page)
    assert _shown(rows) == [_as_shown(e) for e in after]
    assert rows[0]["move"] == "new"
    assert "moved" in rows[0]["classes"]
    assert all(r["move"] == "▼1" and "moved" in r["classes"] for r in rows[1:]), rows
    assert page.evaluate("window.scrollY") == scrolled
    assert page.input_value("#player") == watched  # the open player stays open
    assert [r["playerId"] for r in _rows(page, "#around") if "open" in r["classes"]] == [watched]
    # And the around table marks the move too: the watched player went down one place.
    (mine,) = [r for r in _rows(page, "#around") if r["playerId"] == watched]
    assert mine["move"] == "▼1"


def _page_text(page: Page) -> dict[str, Any]:
    """What the page shows around the tables: headings, rule, count, page label, choices, the
    buttons' state, the player box."""
    return {
        selector: page.text_content(selector)
        for selector in ("#board-heading", "#board-rule", "#board-count", "#page-label")
    } | {
        "choices": [_values(page, select) for select in ("#game", "#variant", "#period")],
        "prev": page.is_disabled("#prev"),
        "next": page.is_disabled("#next"),
        "message": page.text_content("#board-message"),
        "player": page.input_value("#player"),
    }


def test_a_hidden_player_is_gone_and_nothing_else_changes(
    page: Page, service: str, api: httpx.Client
) -> None:
    """A player hidden through the admin API (moderation, DESIGN.md section 14): the viewer,
    reloaded, no longer shows them; the players behind them move up exactly one place, the one
    who was first on the next page ends this one, and every other word and figure stays."""
    board = "/v1/leaderboards/trivia/alltopics/alltime"
    admin = {"Authorization": f"Bearer {KEY}"}
    before = api.get(board, params={"limit": 26}).json()
    assert [e["rank"] for e in before["entries"]] == list(range(1, 27))  # exact: no tie here
    hidden = before["entries"][3]["playerId"]
    _open(page, service, "trivia/alltopics/alltime")
    shown = _rows(page)
    assert _shown(shown) == [_as_shown(e) for e in before["entries"][:25]]
    text = _page_text(page)
    assert text["#board-count"] == f"{before['playerCount']} players"

    moderated = api.put(
        f"/v1/games/trivia/moderation/players/{hidden}",
        json={"action": "hide", "reason": "viewer test"},
        headers=admin,
    )
    assert moderated.status_code == 200, moderated.text
    try:
        # A page's player count is a display figure each task reads at most once a second
        # (LEADERBOARD_PLAYER_COUNT_CACHE_SECONDS): wait until the task's is the new one, then reload.
        for _ in range(50):
            if (
                api.get(board, params={"limit": 1}).json()["playerCount"]
                == before["playerCount"] - 1
            ):
                break
            time.sleep(0.1)
        page.reload()
        wait_for_rows(page)
        rows = _rows(page)
        assert hidden not in [r["playerId"] for r in rows]
        # The others in the same order, each row as it was (name, country, score, when, no
        # move marked on a first view) but the rank, closed up by one behind the hidden player.
        expected = [
            r | {"rank": str(place)}
            for place, r in enumerate((r for r in shown if r["playerId"] != hidden), start=1)
        ]
        assert rows[:24] == expected
        # The first of the next page moves up onto this one, as the API now answers it.
        after = api.get(board).json()
        assert rows[24]["playerId"] == before["entries"][25]["playerId"]
        assert _shown(rows) == [_as_shown(e) for e in after["entries"]]
        assert _shown(rows)[24]["rank"] == "25"
        # Nothing else: the heading, the rule, the page, the choices; the count one fewer.
        assert _page_text(page) == text | {"#board-count": f"{before['playerCount'] - 1} players"}
        # Asked for by name, they are not on the board, as any player who is not.
        page.fill("#player", hidden)
        page.press("#player", "Enter")
        page.wait_for_function(
            "() => document.querySelector('#player-message').textContent"
            " !== 'Looking the player up…'"
        )
        message = page.text_content("#player-message") or ""
        assert message.startswith(f"No player “{hidden}” on this board")
        assert page.is_hidden("#player-found")
    finally:
        restored = api.delete(f"/v1/games/trivia/moderation/players/{hidden}", headers=admin)
        assert restored.status_code == 200, restored.text
    page.goto("about:blank")
    _open(page, service, "trivia/alltopics/alltime")
    assert _rows(page) == shown  # restored: the board as it was


def test_readable_at_phone_width_and_the_screenshots(
    browser: Browser, service: str, api: httpx.Client, tmp_path: Path
) -> None:
    context = browser.new_context(viewport=PHONE, locale="en-GB")
    try:
        page = context.new_page()
        _open(page, service, "trivia/alltopics/alltime")
        # Nothing wider than the screen: no sideways scrolling of the page or of a table.
        widths = page.evaluate(
            "[document.documentElement.scrollWidth, window.innerWidth,"
            " ...[...document.querySelectorAll('.table-wrap')].map(w => w.scrollWidth - w.clientWidth)]"
        )
        assert widths[0] <= widths[1], widths
        assert all(extra <= 0 for extra in widths[2:]), widths
    finally:
        context.close()

    player = api.get("/v1/leaderboards/trivia/alltopics/alltime").json()["entries"][5]["playerId"]
    shots = take_screenshots(browser, service, tmp_path, player=player)
    assert [p.name for p in shots] == ["viewer-desktop.png", "viewer-phone.png"]
    for shot in shots:
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert shot.stat().st_size > 20_000  # a rendered page, not a blank one


def _words(api: httpx.Client) -> dict[str, dict[str, str]]:
    """The words the page reads, as the service serves them."""
    response = api.get(WORDS)
    assert response.status_code == 200, response.text
    words: dict[str, dict[str, str]] = response.json()
    return words


def _score_titles(page: Page) -> list[str | None]:
    """What the score column's headings say the scores are (their title), or None."""
    titles: list[str | None] = page.eval_on_selector_all(
        "th.score", "cells => cells.map(c => c.getAttribute('title'))"
    )
    return titles


def _score_headings(page: Page) -> list[str]:
    """The score column's heading in the top table, the player's and their cohort's."""
    headings: list[str] = page.eval_on_selector_all(
        "th.score", "cells => cells.map(c => c.textContent)"
    )
    return headings
