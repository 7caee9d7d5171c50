"""A variant's calendar (app/domain/calendar.py): day, week and month boards in local time across
both daylight-saving changes, in several zones, held against the standard library's zoneinfo;
seasons; when the next board begins; which season changes a definition may make."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.calendar import Calendar, NoSuchSeason, Season, time_zone
from app.domain.clock import to_ms
from app.domain.definitions import BoardDefinition, season_changes
from app.domain.periods import Period, PeriodKind

HOUR = timedelta(hours=1)
ZONES = (
    "UTC",
    "America/New_York",
    "Europe/London",
    "Europe/Paris",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Pacific/Chatham",
    "America/Santiago",
    "America/Havana",
    "Asia/Tokyo",
)


def day(zone: str, label: str) -> tuple[datetime, datetime]:
    span = Calendar(zone).span(Period(PeriodKind.DAY, label))
    assert span.starts_at is not None
    assert span.ends_at is not None
    return span.starts_at, span.ends_at


@pytest.mark.parametrize(
    ("zone", "label", "hours", "starts"),
    [
        # The issue's own: New York springs forward on 2026-03-08.
        ("America/New_York", "2026-03-08", 23, "2026-03-08T05:00:00+00:00"),
        ("America/New_York", "2026-11-01", 25, "2026-11-01T04:00:00+00:00"),
        ("America/New_York", "2026-07-04", 24, "2026-07-04T04:00:00+00:00"),
        ("Europe/London", "2026-03-29", 23, "2026-03-29T00:00:00+00:00"),
        ("Europe/London", "2026-10-25", 25, "2026-10-24T23:00:00+00:00"),
        ("Europe/Paris", "2026-03-29", 23, "2026-03-28T23:00:00+00:00"),
        # The southern hemisphere changes the other way round.
        ("Australia/Sydney", "2026-04-05", 25, "2026-04-04T13:00:00+00:00"),
        ("Australia/Sydney", "2026-10-04", 23, "2026-10-03T14:00:00+00:00"),
        # Half an hour, at Lord Howe Island.
        ("Australia/Lord_Howe", "2026-04-05", 24.5, "2026-04-04T13:00:00+00:00"),
        ("Asia/Kolkata", "2026-12-06", 24, "2026-12-05T18:30:00+00:00"),
        ("Pacific/Chatham", "2026-12-06", 24, "2026-12-05T10:15:00+00:00"),
        ("UTC", "2026-03-08", 24, "2026-03-08T00:00:00+00:00"),
    ],
)
def test_a_day_starts_at_local_midnight_and_lasts_what_the_zone_makes_it(
    zone: str, label: str, hours: float, starts: str
) -> None:
    start, end = day(zone, label)
    assert start == datetime.fromisoformat(starts)
    assert end - start == timedelta(hours=hours)
    local = start.astimezone(ZoneInfo(zone))
    assert (local.date().isoformat(), local.hour, local.minute) == (label, 0, 0)


def test_where_a_change_skips_midnight_the_day_starts_at_the_change() -> None:
    # Santiago springs forward at 24:00 on the first Saturday of September: 2026-09-06 has no
    # midnight; its first instant is 01:00 local (04:00Z), and it lasts 23 hours.
    start, end = day("America/Santiago", "2026-09-06")
    local = start.astimezone(ZoneInfo("America/Santiago"))
    assert (local.date().isoformat(), local.hour) == ("2026-09-06", 1)
    assert end - start == 23 * HOUR
    assert (start - timedelta(microseconds=1)).astimezone(ZoneInfo("America/Santiago")).day == 5


@given(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 1)),  # noqa: DTZ001
    st.sampled_from(ZONES),
    st.sampled_from((PeriodKind.DAY, PeriodKind.WEEK, PeriodKind.MONTH)),
)
def test_every_moment_lies_in_the_local_period_zoneinfo_says(
    naive: datetime, zone: str, kind: PeriodKind
) -> None:
    moment = naive.replace(tzinfo=UTC)
    calendar = Calendar(zone)
    period = calendar.containing(kind, moment)
    assert period is not None
    local = moment.astimezone(ZoneInfo(zone))
    if kind is PeriodKind.DAY:
        assert period.label == local.date().isoformat()
    span = calendar.span(period)
    assert span.starts_at is not None
    assert span.ends_at is not None
    assert span.starts_at <= moment < span.ends_at
    # The instant before the start is in the period before: periods tile time.
    before = calendar.containing(kind, span.starts_at - timedelta(microseconds=1))
    assert before is not None
    assert before != period
    assert calendar.containing(kind, span.ends_at) != period
    assert calendar.next_reset(kind, moment) == span.ends_at


def test_a_week_is_the_local_iso_week_from_monday() -> None:
    calendar = Calendar("Asia/Tokyo")
    # Sunday 2026-12-06 20:00Z is Monday 05:00 in Tokyo: week 50 there, 49 in UTC.
    moment = datetime(2026, 12, 6, 20, tzinfo=UTC)
    assert calendar.containing(PeriodKind.WEEK, moment) == Period(PeriodKind.WEEK, "2026-W50")
    assert Calendar().containing(PeriodKind.WEEK, moment) == Period(PeriodKind.WEEK, "2026-W49")
    span = calendar.span(Period(PeriodKind.WEEK, "2026-W50"))
    assert span.starts_at == datetime(2026, 12, 6, 15, tzinfo=UTC)
    assert span.ends_at == datetime(2026, 12, 13, 15, tzinfo=UTC)


def test_a_month_in_new_york_spans_the_change_and_ends_at_local_midnight() -> None:
    span = Calendar("America/New_York").span(Period(PeriodKind.MONTH, "2026-03"))
    assert span.starts_at == datetime(2026, 3, 1, 5, tzinfo=UTC)
    assert span.ends_at == datetime(2026, 4, 1, 4, tzinfo=UTC)


def test_current_periods_are_resolved_in_the_zone() -> None:
    late_evening_in_new_york = datetime(2026, 12, 7, 3, tzinfo=UTC)
    assert Calendar("America/New_York").parse("day", now=late_evening_in_new_york) == Period(
        PeriodKind.DAY, "2026-12-06"
    )
    assert Calendar().parse("day", now=late_evening_in_new_york) == Period(
        PeriodKind.DAY, "2026-12-07"
    )


@pytest.mark.parametrize("name", ["Mars/Olympus", "", " UTC", "../etc/passwd", "/etc/localtime"])
def test_an_unknown_zone_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match="unknown time zone"):
        time_zone(name)
    with pytest.raises(ValueError, match="unknown time zone"):
        BoardDefinition(time_zone=name)


def at(text: str) -> int:
    return to_ms(datetime.fromisoformat(text))


S1 = Season("s1", at("2027-01-01T00:00:00+00:00"), at("2027-02-01T00:00:00+00:00"))
S2 = Season("s2", at("2027-03-01T00:00:00+00:00"), at("2027-04-01T00:00:00+00:00"))


def test_a_moment_goes_to_the_season_holding_it_or_to_none() -> None:
    calendar = Calendar(seasons=(S2, S1))
    assert calendar.seasons == (S1, S2)
    inside = datetime(2027, 1, 31, 23, 59, 59, tzinfo=UTC)
    assert calendar.containing(PeriodKind.SEASON, inside) == Period(PeriodKind.SEASON, "s1")
    assert calendar.containing(PeriodKind.SEASON, datetime(2027, 2, 1, tzinfo=UTC)) is None
    assert calendar.containing(PeriodKind.SEASON, datetime(2026, 12, 31, tzinfo=UTC)) is None
    between = datetime(2027, 2, 10, tzinfo=UTC)
    assert calendar.next_reset(PeriodKind.SEASON, inside) == datetime(2027, 2, 1, tzinfo=UTC)
    assert calendar.next_reset(PeriodKind.SEASON, between) == datetime(2027, 3, 1, tzinfo=UTC)
    assert calendar.next_reset(PeriodKind.SEASON, datetime(2027, 5, 1, tzinfo=UTC)) is None
    with pytest.raises(NoSuchSeason):
        calendar.parse("season", now=between)
    with pytest.raises(NoSuchSeason):
        calendar.parse("season:s3", now=between)
    assert calendar.parse("season:s2", now=between) == Period(PeriodKind.SEASON, "s2")


@pytest.mark.parametrize(
    ("seasons", "message"),
    [
        ((S1, Season("s1", S2.starts_at_ms, S2.ends_at_ms)), "once"),
        ((S1, Season("s3", S1.ends_at_ms - 1, S2.starts_at_ms)), "overlap"),
    ],
)
def test_seasons_must_be_distinct_and_apart(seasons: tuple[Season, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Calendar(seasons=seasons)


@pytest.mark.parametrize(
    ("season_id", "starts", "ends"), [("bad id", 0, 1), ("x" * 33, 0, 1), ("s", 5, 5)]
)
def test_a_season_is_refused_with_a_bad_id_or_no_length(
    season_id: str, starts: int, ends: int
) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        Season(season_id, starts, ends)


def test_the_season_period_needs_seasons() -> None:
    with pytest.raises(ValueError, match="needs seasons"):
        BoardDefinition(periods=(PeriodKind.SEASON,))


def test_ended_and_running_seasons_change_only_as_allowed() -> None:
    current = BoardDefinition(seasons=(S1, S2))
    during_s1 = at("2027-01-15T00:00:00+00:00")
    after_s1 = at("2027-02-15T00:00:00+00:00")
    moved_end = Season("s1", S1.starts_at_ms, S1.ends_at_ms + 86_400_000)
    # While s1 runs, its end may move (not into the past); s2 may change freely.
    assert season_changes(current, BoardDefinition(seasons=(moved_end,)), now_ms=during_s1) == []
    early_end = Season("s1", S1.starts_at_ms, during_s1 - 1)
    assert season_changes(current, BoardDefinition(seasons=(early_end, S2)), now_ms=during_s1)
    moved_start = Season("s1", S1.starts_at_ms + 1, S1.ends_at_ms)
    assert season_changes(current, BoardDefinition(seasons=(moved_start, S2)), now_ms=during_s1)
    assert season_changes(current, BoardDefinition(seasons=(S2,)), now_ms=during_s1)
    # Once s1 has ended it stays as it is, and no season may be added wholly in the past.
    assert season_changes(current, BoardDefinition(seasons=(S2,)), now_ms=after_s1)
    assert season_changes(current, BoardDefinition(seasons=(moved_end, S2)), now_ms=after_s1)
    assert season_changes(current, BoardDefinition(seasons=(S1, S2)), now_ms=after_s1) == []
    past = Season("s0", S1.starts_at_ms - 10, S1.starts_at_ms)
    assert season_changes(current, BoardDefinition(seasons=(past, S1, S2)), now_ms=after_s1)


def test_the_time_zone_cannot_change_under_entries() -> None:
    assert "timeZone" in BoardDefinition(time_zone="Europe/Paris").fixed_changes(BoardDefinition())
