"""The board viewer at ``/`` in headless Chromium, against `leaderboard serve --demo` on its embedded
backend: every figure the page shows is checked against what the API answers for the same
question, the API asked by the test itself.

The service runs with ``LEADERBOARD_RANK_COUNT_CAP=1``, so that a handful of players tied on one
score get an estimated rank from the API itself (the demo's players, whose scores rarely tie, keep
exact ranks), and with the board list read afresh on each request, so a board a test makes is
listed at once. About 30 s; the page polls every 5 s and one test waits for a refresh.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route

from tests.browser.harness import (
    CHROMIUM_MISSING,
    DESKTOP,
    PHONE,
    chromium,
    demo_service,
    take_screenshots,
    wait_for_rows,
)
from tests.served import ServiceExited

KEY = "browser-test-key"
SETTINGS = {
    "LEADERBOARD_DEV_API_KEY": KEY,
    "LEADERBOARD_RANK_COUNT_CAP": "1",
    "LEADERBOARD_BOARD_LIST_CACHE_SECONDS": "0",
    # The test and the page poll from one address: no 429 unless a test injects one.
    "LEADERBOARD_READ_RATE_PER_SECOND": "10000",
    "LEADERBOARD_READ_BURST": "10000",
}
DASH = "\u2013"  # the en dash the page writes between a range's two ends
REFRESH_TIMEOUT_MS = 15_000  # the page refreshes every 5 s

# The visible text of each row's cells, as a sighted reader sees it: without the text kept for
# screen readers (.visually-hidden).
ROWS_JS = """(selector) => [...document.querySelectorAll(selector + " tbody tr")].map((row) => {
  const text = (cell) => {
    const copy = cell.cloneNode(true);
    copy.querySelectorAll(".visually-hidden").forEach((hidden) => hidden.remove());
    return copy.textContent.trim();
  };
  const cells = Object.fromEntries([...row.cells].map((cell) => [cell.className.split(" ")[0], text(cell)]));
  return { ...cells, playerId: row.dataset.playerId, classes: [...row.classList] };
})"""


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        with demo_service(tmp_path_factory.mktemp("viewer"), SETTINGS) as base_url:
            yield base_url
    except ServiceExited as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    try:
        with chromium() as (_, launched):
            yield launched
    except FileNotFoundError:
        pytest.fail(CHROMIUM_MISSING)


@pytest.fixture
def api(service: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service, timeout=10.0, trust_env=False) as client:
        yield client


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


def _open(page: Page, service: str, board: str, player: str | None = None) -> None:
    game, variant, period = board.split("/")
    address = f"{service}/#game={game}&variant={variant}&period={period}"
    response = page.goto(address + (f"&player={player}" if player else ""))
    assert response is not None
    assert response.ok, f"GET / answered {response.status}: {response.text()[:300]}"
    if player is None:
        wait_for_rows(page)


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
    country, the score as its board says it reads, and when in UTC to the minute."""
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
        "when": f"{achieved[:10]} {achieved[11:16]}",
    }


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
    assert _score_headings(page) == ["Score", "Score"]


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
    assert _score_headings(page) == ["Score", "Score"]
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
    assert _score_headings(page) == ["Total", "Total"]
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
    assert _score_headings(page) == ["Score", "Score"]
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


def _score_headings(page: Page) -> list[str]:
    """The score column's heading in the top table and in the player's table."""
    headings: list[str] = page.eval_on_selector_all(
        "th.score", "cells => cells.map(c => c.textContent)"
    )
    return headings
