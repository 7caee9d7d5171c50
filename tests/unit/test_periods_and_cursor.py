"""Periods and board ids, and the page cursor."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.calendar import UTC_CALENDAR, board_expires_at
from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.definitions import BoardDefinition
from app.domain.periods import LAST_YEAR, YEAR_PATTERN, Board, Period, PeriodKind
from app.settings import Settings
from tests.support import utc_board

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def test_board_ids() -> None:
    assert Board("trivia", "alltopics", Period(PeriodKind.ALLTIME)).board_id == (
        "trivia#alltopics#alltime"
    )
    assert Board("trivia", "alltopics", Period.containing(PeriodKind.DAY, NOW)).board_id == (
        "trivia#alltopics#day#2026-11-30"
    )
    assert Board("trivia", "alltopics", Period.containing(PeriodKind.WEEK, NOW)).board_id == (
        "trivia#alltopics#week#2026-W49"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("alltime", Period(PeriodKind.ALLTIME)),
        ("day", Period(PeriodKind.DAY, "2026-11-30")),
        ("week", Period(PeriodKind.WEEK, "2026-W49")),
        ("day:2026-02-28", Period(PeriodKind.DAY, "2026-02-28")),
        ("week:2026-W48", Period(PeriodKind.WEEK, "2026-W48")),
        ("week:2020-W53", Period(PeriodKind.WEEK, "2020-W53")),
        ("month", Period(PeriodKind.MONTH, "2026-11")),
        ("month:2026-02", Period(PeriodKind.MONTH, "2026-02")),
    ],
)
def test_parse(text: str, expected: Period) -> None:
    assert UTC_CALENDAR.parse(text, now=NOW) == expected


@pytest.mark.parametrize(
    "text",
    [
        "year",
        "month:2026-13",
        "month:2026-00",
        "month:2026-1",
        "month:9999-01",
        "day:",
        "day:2026-2-28",
        "day:2026-02-30",
        "week:2026-W54",
        "week:2026-48",
        "alltime:x",
    ],
)
def test_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        UTC_CALENDAR.parse(text, now=NOW)


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)))  # noqa: DTZ001
def test_a_moment_lies_inside_its_day_and_week(moment: datetime) -> None:
    moment = moment.replace(tzinfo=UTC)
    for kind in (PeriodKind.DAY, PeriodKind.WEEK, PeriodKind.MONTH):
        period = Period.containing(kind, moment)
        span = UTC_CALENDAR.span(period)
        assert span.starts_at is not None
        assert span.ends_at is not None
        assert span.starts_at <= moment < span.ends_at
        assert UTC_CALENDAR.parse(period.display, now=NOW) == period


@pytest.mark.parametrize(
    ("label", "end"),
    [("2026-11", datetime(2026, 12, 1, tzinfo=UTC)), ("2026-12", datetime(2027, 1, 1, tzinfo=UTC))],
)
def test_a_month_ends_where_the_next_begins(label: str, end: datetime) -> None:
    assert UTC_CALENDAR.end(Period(PeriodKind.MONTH, label)) == end


def test_expiry_is_period_end_plus_retention() -> None:
    day = Board("trivia", "classic", Period(PeriodKind.DAY, "2026-11-30"))
    kept = BoardDefinition(retention_days=30)
    assert board_expires_at(day, kept) == datetime(2026, 12, 31, tzinfo=UTC)
    alltime = Board("trivia", "classic", Period(PeriodKind.ALLTIME))
    assert board_expires_at(alltime, kept) is None


def _most(setting: str) -> int:
    """The largest value a setting accepts."""
    (bound,) = [m.le for m in Settings.model_fields[setting].metadata if hasattr(m, "le")]
    return int(bound)


# The longest retention and lateness the settings allow, added to a period's end.
LONGEST_WAIT = timedelta(days=_most("retention_days"), seconds=_most("max_lateness_seconds"))


@pytest.mark.parametrize(
    "text",
    ["day:9999-12-31", "week:9999-W52", "day:0001-01-01", "week:0001-W01", "day:1969-12-31"],
)
def test_periods_at_the_calendar_s_edges_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="outside the years 1970 to 9899"):
        UTC_CALENDAR.parse(text, now=NOW)
    with pytest.raises(ValueError, match="outside the years"):
        Board.from_id("trivia#classic#" + text.replace(":", "#"))


@given(
    st.integers(min_value=0, max_value=9999),
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=31),
    st.integers(min_value=1, max_value=53),
)
def test_every_period_that_parses_has_an_end_and_an_expiry_the_calendar_holds(
    year: int, month: int, day: int, week: int
) -> None:
    for text in (
        f"day:{year:04d}-{month:02d}-{day:02d}",
        f"week:{year:04d}-W{week:02d}",
        f"month:{year:04d}-{month:02d}",
    ):
        try:
            period = UTC_CALENDAR.parse(text, now=NOW)
        except ValueError:
            continue
        assert 1970 <= year <= LAST_YEAR
        span = UTC_CALENDAR.span(period)
        assert span.starts_at is not None
        assert span.ends_at is not None
        assert span.ends_at + LONGEST_WAIT > span.starts_at  # no OverflowError on the way


@given(st.integers(min_value=0, max_value=9999))
def test_the_documented_year_pattern_is_the_years_a_period_may_have(year: int) -> None:
    assert (re.fullmatch(YEAR_PATTERN, f"{year:04d}") is not None) == (1970 <= year <= LAST_YEAR)


SECRET = b"k" * 32


def test_cursor_round_trip_and_refusals() -> None:
    cursor = Cursor("b#1", "0999#1#p", "p", 26)
    text = encode_cursor(cursor, SECRET)
    assert decode_cursor(text, SECRET, board_id="b#1") == cursor
    with pytest.raises(CursorError, match="another board"):
        decode_cursor(text, SECRET, board_id="b#2")
    with pytest.raises(CursorError, match="not one this service issued"):
        decode_cursor(text, b"x" * 32, board_id="b#1")
    for forged in ["", "abc", text + "x", "." + text.split(".")[1], "%%%.%%%"]:
        with pytest.raises(CursorError):
            decode_cursor(forged, SECRET, board_id="b#1")


@pytest.mark.parametrize(
    ("text", "board_id"),
    [
        ("trivia#alltopics#alltime", "trivia#alltopics#alltime"),
        ("trivia#alltopics#day", "trivia#alltopics#day#2026-11-30"),
        ("trivia#alltopics#week", "trivia#alltopics#week#2026-W49"),
        ("trivia#alltopics#day#2026-11-29", "trivia#alltopics#day#2026-11-29"),
        ("trivia#alltopics#week#2026-W48", "trivia#alltopics#week#2026-W48"),
        ("trivia#alltopics#day:2026-11-29", "trivia#alltopics#day#2026-11-29"),
        ("trivia/alltopics/week:2026-W48", "trivia#alltopics#week#2026-W48"),
        ("trivia/alltopics/alltime", "trivia#alltopics#alltime"),
    ],
)
def test_an_operator_may_name_a_board_in_every_form_the_service_shows(
    text: str, board_id: str
) -> None:
    assert utc_board(text, now=NOW).board_id == board_id


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("trivia", "GAME#VARIANT#PERIOD"),
        ("tri via#x#alltime", "GAME#VARIANT#PERIOD"),
        ("trivia#x#year", "unknown period"),
        ("trivia#x#month#2026-13", "not a month"),
        ("trivia#x#day#2026-02-30", "not a date"),
        ("trivia#x#day#9999-12-31", "outside the years"),
    ],
)
def test_a_board_not_in_any_form_is_refused_with_the_forms(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        utc_board(text, now=NOW)
