"""Periods and board ids, and the page cursor."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.periods import Board, Period, PeriodKind

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
    ],
)
def test_parse(text: str, expected: Period) -> None:
    assert Period.parse(text, now=NOW) == expected


@pytest.mark.parametrize(
    "text",
    [
        "month",
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
        Period.parse(text, now=NOW)


@given(st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1)))  # noqa: DTZ001
def test_a_moment_lies_inside_its_day_and_week(moment: datetime) -> None:
    moment = moment.replace(tzinfo=UTC)
    for kind in (PeriodKind.DAY, PeriodKind.WEEK):
        period = Period.containing(kind, moment)
        end = period.end()
        assert end is not None
        assert period.start() <= moment < end
        assert Period.parse(period.display, now=NOW) == period


def test_expiry_is_period_end_plus_retention() -> None:
    day = Period(PeriodKind.DAY, "2026-11-30")
    assert day.expires_at(timedelta(days=30)) == datetime(2026, 12, 31, tzinfo=UTC)
    assert Period(PeriodKind.ALLTIME).expires_at(timedelta(days=30)) is None


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
