"""When a variant's periods begin and end: day, ISO week and calendar month boards start at local
midnight in the variant's time zone (so a day lasts 23 or 25 hours across a daylight-saving
change), and seasons are the fixed spans its definition lists.

A period's id stays its local date (``day:2026-03-08`` in ``America/New_York`` runs from
05:00Z to 04:00Z the next day: 23 hours) or its season's id (``season:s1``). The arithmetic is
the standard library's ``zoneinfo``, on the IANA database the ``tzdata`` package carries.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from functools import cached_property
from itertools import pairwise
from typing import Protocol, assert_never
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.domain.clock import from_ms, iso_ms, to_ms
from app.domain.periods import Board, Period, PeriodKind

SEASON_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
SEASON_ID_PATTERN = SEASON_ID_RE.pattern
MAX_SEASONS = 100
"""The most seasons one definition lists (the definition is one item; 100 are about 8 KB)."""
UTC_NAME = "UTC"


def time_zone(name: str) -> ZoneInfo:
    """The IANA zone ``name``; ``ValueError`` for a name the database does not hold."""
    if not name or name != name.strip() or name.startswith(("/", ".")) or ".." in name:
        raise ValueError(f"unknown time zone {name!r}: use an IANA name like Europe/Paris")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(
            f"unknown time zone {name!r}: use an IANA name like Europe/Paris or America/New_York"
        ) from None


@dataclass(frozen=True)
class Season:
    """A season: from ``starts_at_ms`` (inclusive) to ``ends_at_ms`` (exclusive), epoch ms."""

    id: str
    starts_at_ms: int
    ends_at_ms: int

    def __post_init__(self) -> None:
        if not SEASON_ID_RE.fullmatch(self.id):
            raise ValueError(f"season id {self.id!r} must match {SEASON_ID_PATTERN}")
        if self.starts_at_ms >= self.ends_at_ms:
            raise ValueError(
                f"season {self.id} must end after it starts "
                f"({iso_ms(self.starts_at_ms)} to {iso_ms(self.ends_at_ms)})"
            )

    def holds(self, moment_ms: int) -> bool:
        return self.starts_at_ms <= moment_ms < self.ends_at_ms

    @property
    def words(self) -> str:
        return f"season {self.id} ({iso_ms(self.starts_at_ms)} to {iso_ms(self.ends_at_ms)})"


@dataclass(frozen=True)
class Span:
    """When a period starts and ends (``None`` for all-time, which does neither)."""

    starts_at: datetime | None
    ends_at: datetime | None


@dataclass(frozen=True)
class Calendar:
    """A variant's time zone and seasons, and the periods they make."""

    time_zone: str = UTC_NAME
    seasons: tuple[Season, ...] = field(default=())

    def __post_init__(self) -> None:
        time_zone(self.time_zone)
        if len(self.seasons) > MAX_SEASONS:
            raise ValueError(f"a definition lists at most {MAX_SEASONS} seasons")
        ids = [season.id for season in self.seasons]
        if len(set(ids)) != len(ids):
            raise ValueError("each season id may be used once")
        ordered = sorted(self.seasons, key=lambda season: season.starts_at_ms)
        for earlier, later in pairwise(ordered):
            if later.starts_at_ms < earlier.ends_at_ms:
                raise ValueError(f"{earlier.words} and {later.words} overlap")
        object.__setattr__(self, "seasons", tuple(ordered))

    @cached_property
    def zone(self) -> ZoneInfo:
        return time_zone(self.time_zone)

    @cached_property
    def _starts(self) -> list[int]:
        """Each season's start, in order: what ``season_at`` bisects (once per calendar, not
        once per submission)."""
        return [season.starts_at_ms for season in self.seasons]

    def season(self, season_id: str) -> Season | None:
        return next((s for s in self.seasons if s.id == season_id), None)

    def season_at(self, moment: datetime) -> Season | None:
        """The season holding ``moment``, if any."""
        moment_ms = to_ms(moment)
        at = bisect_right(self._starts, moment_ms) - 1
        return self.seasons[at] if at >= 0 and self.seasons[at].holds(moment_ms) else None

    def containing(self, kind: PeriodKind, moment: datetime) -> Period | None:
        """The period of ``kind`` that holds ``moment``: ``None`` only for a season, where no
        season holds it."""
        if kind is PeriodKind.SEASON:
            season = self.season_at(moment)
            return None if season is None else Period(kind, season.id)
        return Period.containing(kind, moment.astimezone(self.zone))

    def span(self, period: Period) -> Span:
        """When ``period`` starts and ends; ``ValueError`` for a season this calendar lacks."""
        match period.kind:
            case PeriodKind.ALLTIME:
                return Span(None, None)
            case PeriodKind.SEASON:
                season = self.season(period.label)
                if season is None:
                    raise ValueError(f"there is no season {period.label!r}")
                return Span(from_ms(season.starts_at_ms), from_ms(season.ends_at_ms))
            case PeriodKind.DAY | PeriodKind.WEEK | PeriodKind.MONTH:
                first = period.first_day()
                return Span(self._midnight(first), self._midnight(_next_first_day(period, first)))
            case unknown:
                assert_never(unknown)

    def end(self, period: Period) -> datetime | None:
        """When ``period`` ends; ``None`` for all-time and for a season this calendar lacks (a
        board of it is kept, never closed: seasons that have begun cannot be removed)."""
        try:
            return self.span(period).ends_at
        except ValueError:
            return None

    def next_reset(self, kind: PeriodKind, now: datetime) -> datetime | None:
        """When the next board of ``kind`` begins after ``now``: the current one's end; for
        seasons, the current season's end or else the next season's start; ``None`` for all-time
        and after the last season."""
        if kind is PeriodKind.ALLTIME:
            return None
        if kind is PeriodKind.SEASON:
            now_ms = to_ms(now)
            upcoming = (s for s in self.seasons if s.ends_at_ms > now_ms)
            following = next(upcoming, None)
            if following is None:
                return None
            edge = following.ends_at_ms if following.holds(now_ms) else following.starts_at_ms
            return from_ms(edge)
        current = self.containing(kind, now)
        return None if current is None else self.span(current).ends_at

    def parse(self, text: str, *, now: datetime) -> Period:
        """The URL form of a period, the current ones resolved in this calendar: ``day`` is the
        local day holding ``now``. ``ValueError`` says what is wrong; ``NoSuchSeason`` where
        the form is right and the season is not there."""
        asked = Period.parse(text)
        if asked.label or asked.kind is PeriodKind.ALLTIME:
            if asked.kind is PeriodKind.SEASON and self.season(asked.label) is None:
                raise NoSuchSeason(f"there is no season {asked.label!r} in this variant")
            return asked
        found = self.containing(asked.kind, now)
        if found is None:
            raise NoSuchSeason(f"no season is running at {iso_ms(to_ms(now))}")
        return found

    def _midnight(self, day: date) -> datetime:
        """The first instant of the local ``day``: local midnight, or where a daylight-saving
        change skips midnight, the change."""
        candidates = (
            datetime(day.year, day.month, day.day, tzinfo=self.zone, fold=fold).astimezone(UTC)
            for fold in (0, 1)
        )
        return min(c for c in candidates if c.astimezone(self.zone).date() == day)


class NoSuchSeason(ValueError):
    """A season period named well that the variant does not have (or none running now)."""


def _next_first_day(period: Period, first: date) -> date:
    match period.kind:
        case PeriodKind.DAY:
            return first + timedelta(days=1)
        case PeriodKind.WEEK:
            return first + timedelta(weeks=1)
        case PeriodKind.MONTH:
            return date(first.year + (first.month == 12), first.month % 12 + 1, 1)
        case _:
            raise ValueError(f"{period.display} is not a dated period")


UTC_CALENDAR = Calendar()


class Lasting(Protocol):
    """What decides when a board's rows go: a definition's calendar and retention."""

    @property
    def calendar(self) -> Calendar: ...

    @property
    def retention(self) -> timedelta: ...


def board_expires_at(board: Board, definition: Lasting) -> datetime | None:
    """When a board's rows may be deleted: its period's end plus the retention; never for
    all-time (nor for a season the calendar lacks)."""
    end = definition.calendar.end(board.period)
    return None if end is None else end + definition.retention


def board_expiry_s(board: Board, definition: Lasting) -> int | None:
    """When a board's rows, counters and registry row expire (epoch seconds, as DynamoDB's TTL
    reads them): a retention after its period ends; never for all-time."""
    expires = board_expires_at(board, definition)
    return None if expires is None else int(expires.timestamp())


def board_is_expired(board: Board, *, now: datetime, definition: Lasting) -> bool:
    """Dated boards' rows expire together, a retention after their period ends; DynamoDB deletes
    them late (and the embedded backend never), so reads decide by the period, not by the rows."""
    expires = board_expires_at(board, definition)
    return expires is not None and expires <= now


def period_closes_at(board: Board, definition: Lasting, *, settle: timedelta) -> datetime | None:
    """When a board's period is over for good: its end plus ``settle`` (the submission lateness
    allowed, since a score achieved just before the end may arrive after it); ``None`` for
    all-time, which never closes."""
    end = definition.calendar.end(board.period)
    return None if end is None else end + settle
