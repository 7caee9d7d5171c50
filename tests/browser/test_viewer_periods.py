"""The board viewer's period line in headless Chromium, against `leaderboard serve --demo`: when
the board's period runs and when it resets, written in the reader's own time zone (the browser is
put in Tokyo), for a variant in a time zone of its own with a season; the running season as a
choice; and a season asked for where none runs, refused in the API's words.

The expected text is the API's own instants (``period`` in each board read) turned into Tokyo's
local time here with ``zoneinfo``; the browser's clock is fixed, so the countdown is exact.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import pytest
from playwright.sync_api import Browser, BrowserContext, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.browser.harness import DESKTOP, KEY
from tests.browser.test_viewer import (
    DASH,
    REFRESH_TIMEOUT_MS,
    _hash,
    _open,
    _submit,
    _values,
    _wait_for_text,
)

READER_ZONE = "Asia/Tokyo"  # the browser's; the variant's own zone is another


# The browser's clock, fixed a little ahead of the service's real one: the countdown the page
# shows is then from this instant, and the test knows it to the millisecond.
NOW = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=30)
# The variant's own zone: one whose date is not UTC's now (UTC+14 from 10:00 UTC, UTC-11 before
# 11:00), so that following its day cannot pass by reading the board list's UTC day.
VARIANT_ZONE = "Pacific/Kiritimati" if NOW.hour >= 10 else "Pacific/Pago_Pago"


@pytest.fixture
def in_tokyo(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport=DESKTOP, locale="en-GB", timezone_id=READER_ZONE)
    context.clock.set_fixed_time(NOW)
    yield context
    context.close()


@pytest.fixture
def page(in_tokyo: BrowserContext) -> Iterator[Page]:
    page = in_tokyo.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(f"script error: {error}"))
    yield page
    assert problems == [], problems


def _instant(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def _local(iso: str) -> str:
    """An API instant as the page writes it in the reader's zone: "Mon 7 Dec, 00:00"."""
    moment = _instant(iso).astimezone(ZoneInfo(READER_ZONE))
    return f"{moment:%a} {moment.day} {moment:%b}, {moment:%H:%M}"


def _until(iso: str) -> str:
    """How long from the browser's clock until the instant, as the page words it."""
    minutes = int((_instant(iso) - NOW).total_seconds() // 60)
    days, hours, rest = minutes // 1440, minutes % 1440 // 60, minutes % 60
    if days:
        return f"{days} d {hours} h"
    return f"{hours} h {rest} min" if hours else f"{rest} min"


def _wait_for_line(page: Page, expected: str) -> None:
    """Until the period line reads ``expected``; else a failure showing what it reads."""
    try:
        _wait_for_text(page, "#board-period", expected)
    except PlaywrightTimeoutError:
        assert page.text_content("#board-period") == expected


def _span(period: dict[str, Any]) -> str:
    return f"{_local(period['startsAt'])} {DASH} {_local(period['endsAt'])}"


def _define(api: httpx.Client, variant: str, body: dict[str, Any]) -> None:
    defined = api.put(
        f"/v1/games/trivia/variants/{variant}",
        json=body,
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert defined.status_code == 200, defined.text


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_the_reset_is_said_in_the_readers_zone_and_a_past_day_has_ended(
    page: Page, service: str, api: httpx.Client
) -> None:
    variant = f"zoned{uuid.uuid4().hex[:6]}"
    season = {
        "id": "s1",
        "startsAt": _iso(NOW - timedelta(days=2)),
        "endsAt": _iso(NOW + timedelta(days=9, hours=5)),
    }
    _define(api, variant, {"timeZone": VARIANT_ZONE, "seasons": [season]})
    _submit(api, "tz-1", 700, variant=variant)
    board = f"/v1/leaderboards/trivia/{variant}"
    today = api.get(f"{board}/day").json()["period"]
    assert today["nextResetAt"] == today["endsAt"]  # the API's word, first
    assert today["id"] not in api.get("/v1/boards").json()["currentPeriods"]  # not UTC's day

    # Today, followed: the variant's own day, its reset in Tokyo's time.
    _open(page, service, f"trivia/{variant}/day")
    expected = (
        f"{_span(today)} · Resets {_local(today['nextResetAt'])} ({READER_ZONE})"
        f" · in {_until(today['nextResetAt'])}"
    )
    _wait_for_line(page, expected)
    assert re.fullmatch(rf"\w{{3}} \d{{1,2}} \w{{3}}, \d{{2}}:\d{{2}} {DASH} .*", expected)
    assert page.text_content("#board-heading") == (
        f"Top of trivia / {variant} / Today ({today['id'][4:]})"
    )
    assert page.input_value("#period") == today["id"]
    assert _hash(page)["period"] == "day"
    # Not the variant's zone's midnight: its midnight is 19:00 or 20:00 in Tokyo.
    assert f"Resets {_local(today['nextResetAt'])}" in expected
    assert ", 00:00 (" not in expected

    # The day before has ended, and says so: no reset, no countdown.
    local_day = datetime.fromisoformat(today["id"][4:]).date()
    yesterday = f"day:{local_day - timedelta(days=1)}"
    past = api.get(f"{board}/{yesterday}").json()["period"]
    assert past["endsAt"] == today["startsAt"]
    page.goto("about:blank")
    _open(page, service, f"trivia/{variant}/{yesterday}", rows=False)
    _wait_for_line(page, f"{_span(past)} · Ended {_local(past['endsAt'])} ({READER_ZONE})")

    # The running season, offered and followed: "This season (s1)", reset at its end.
    running = api.get(f"{board}/season").json()["period"]
    assert running["id"] == "season:s1"
    page.goto("about:blank")
    _open(page, service, f"trivia/{variant}/season")
    _wait_for_line(
        page,
        f"{_span(running)} · Resets {_local(season['endsAt'])} ({READER_ZONE}) · in 9 d 5 h",
    )
    assert _until(season["endsAt"]) == "9 d 5 h"  # the countdown is from the browser's clock
    assert page.text_content("#board-heading") == f"Top of trivia / {variant} / This season (s1)"
    assert page.input_value("#period") == "season:s1"
    assert _hash(page)["period"] == "season"
    assert "season:s1" in _values(page, "#period")

    # All time resets never: no line at all.
    page.goto("about:blank")
    _open(page, service, f"trivia/{variant}/alltime")
    assert page.is_hidden("#board-period")
    assert page.text_content("#board-period") == ""


def test_the_running_season_is_a_choice_and_none_running_is_the_apis_reason(
    page: Page, service: str, api: httpx.Client
) -> None:
    variant = f"seasons{uuid.uuid4().hex[:6]}"
    later = {
        "id": "next",
        "startsAt": _iso(NOW + timedelta(days=3)),
        "endsAt": _iso(NOW + timedelta(days=30)),
    }
    _define(api, variant, {"periods": ["alltime", "season"], "seasons": [later]})
    refused = api.get(f"/v1/leaderboards/trivia/{variant}/season")
    assert refused.status_code == 404, refused.text
    problem = refused.json()
    assert "no season is running" in problem["detail"]

    _open(page, service, f"trivia/{variant}/alltime", rows=False)
    _wait_for_text(page, "#board-message", "This board is empty: nobody has a score on it yet.")
    page.wait_for_function(
        "() => [...document.querySelectorAll('#period option')].some((o) => o.value === 'season')",
        timeout=REFRESH_TIMEOUT_MS,
    )
    assert _values(page, "#period") == ["alltime", "season"]
    page.select_option("#period", "season")
    page.wait_for_selector("#board-message.error", timeout=REFRESH_TIMEOUT_MS)
    message = page.text_content("#board-message") or ""
    # The API's reason, as for any refused board (its "at" is the moment of the page's read).
    assert message.startswith(
        f"Cannot show the board trivia / {variant} / This season. The service answered 404 "
        f"({problem['title']}): no season is running at "
    ), message
    assert page.is_hidden("#board-period")
    assert _hash(page)["period"] == "season"
