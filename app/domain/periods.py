"""Boards and their periods: all-time, the UTC day, the ISO week, the UTC calendar month.

A board id is ``<game>#<variant>#<period>``: ``trivia#alltopics#alltime``,
``trivia#alltopics#day#2026-11-30``, ``trivia#alltopics#week#2026-W48``,
``trivia#alltopics#month#2026-12``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import assert_never

from app.domain.keys import is_valid_id


class PeriodKind(enum.StrEnum):
    ALLTIME = "alltime"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"


_DAY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")
_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")

FIRST_YEAR, LAST_YEAR = 1970, 9899
"""The years a dated period may fall in. Times are kept as milliseconds since 1970, so no score is
older; and a period's end plus the longest retention (3,650 days) and lateness must still be a time
the calendar holds (it ends with 9999): a century of room keeps every sum far from that edge."""
YEAR_PATTERN = r"(?:19[7-9]\d|[2-8]\d{3}|9[0-8]\d{2})"
"""``FIRST_YEAR`` to ``LAST_YEAR`` as a regular expression, for the OpenAPI document."""


@dataclass(frozen=True)
class Period:
    """One period of a board: ``label`` is empty for all-time, a date or an ISO week otherwise."""

    kind: PeriodKind
    label: str = ""

    @classmethod
    def containing(cls, kind: PeriodKind, moment: datetime) -> Period:
        moment = moment.astimezone(UTC)
        match kind:
            case PeriodKind.ALLTIME:
                return cls(kind)
            case PeriodKind.DAY:
                return cls(kind, moment.date().isoformat())
            case PeriodKind.WEEK:
                year, week, _ = moment.isocalendar()
                return cls(kind, f"{year:04d}-W{week:02d}")
            case PeriodKind.MONTH:
                return cls(kind, f"{moment.year:04d}-{moment.month:02d}")
            case unknown:
                assert_never(unknown)

    @classmethod
    def parse(cls, text: str, *, now: datetime) -> Period:
        """Parse the URL form: ``alltime``, ``day``, ``week``, ``month`` (current) or
        ``day:2026-11-30``, ``week:2026-W48``, ``month:2026-12``. Raises ``ValueError`` with a
        reason the client can act on."""
        kind_text, separator, label = text.partition(":")
        try:
            kind = PeriodKind(kind_text)
        except ValueError:
            raise ValueError(
                f"unknown period {text!r}: use alltime, day, week, month, day:YYYY-MM-DD, "
                "week:YYYY-Www or month:YYYY-MM"
            ) from None
        if not label:
            if separator:
                raise ValueError(f"period {text!r} has an empty label")
            return cls.containing(kind, now)
        if kind is PeriodKind.ALLTIME:
            raise ValueError("the alltime period takes no label")
        period = cls(kind, label)
        period.start()  # validates the label
        return period

    def start(self) -> datetime:
        """The first instant of the period (UTC); ``datetime.min`` for all-time."""
        match self.kind:
            case PeriodKind.ALLTIME:
                return datetime.min.replace(tzinfo=UTC)
            case PeriodKind.DAY:
                return self._day_start()
            case PeriodKind.WEEK:
                return self._week_start()
            case PeriodKind.MONTH:
                return self._month_start()
            case unknown:
                assert_never(unknown)

    def _day_start(self) -> datetime:
        match = _DAY_RE.fullmatch(self.label)
        if match is None:
            raise ValueError(f"day {self.label!r} is not YYYY-MM-DD")
        _check_year(int(match[1]), f"day {self.label!r}")
        try:
            day = date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError as exc:
            raise ValueError(f"day {self.label!r} is not a date: {exc}") from None
        return datetime(day.year, day.month, day.day, tzinfo=UTC)

    def _month_start(self) -> datetime:
        match = _MONTH_RE.fullmatch(self.label)
        if match is None:
            raise ValueError(f"month {self.label!r} is not YYYY-MM")
        _check_year(int(match[1]), f"month {self.label!r}")
        if not 1 <= int(match[2]) <= 12:
            raise ValueError(f"month {self.label!r} is not a month of the year")
        return datetime(int(match[1]), int(match[2]), 1, tzinfo=UTC)

    def _week_start(self) -> datetime:
        match = _WEEK_RE.fullmatch(self.label)
        if match is None:
            raise ValueError(f"week {self.label!r} is not YYYY-Www")
        _check_year(int(match[1]), f"week {self.label!r}")
        try:
            monday = date.fromisocalendar(int(match[1]), int(match[2]), 1)
        except ValueError as exc:
            raise ValueError(f"week {self.label!r} is not an ISO week: {exc}") from None
        return datetime(monday.year, monday.month, monday.day, tzinfo=UTC)

    def end(self) -> datetime | None:
        """The first instant after the period, or ``None`` for all-time."""
        match self.kind:
            case PeriodKind.ALLTIME:
                return None
            case PeriodKind.DAY:
                return self.start() + timedelta(days=1)
            case PeriodKind.WEEK:
                return self.start() + timedelta(weeks=1)
            case PeriodKind.MONTH:
                start = self.start()
                following = start.month % 12 + 1
                return start.replace(year=start.year + (start.month == 12), month=following)
            case unknown:
                assert_never(unknown)

    def expires_at(self, retention: timedelta) -> datetime | None:
        """When the period's rows may be deleted: its end plus the retention; never for all-time."""
        end = self.end()
        return None if end is None else end + retention

    @property
    def suffix(self) -> str:
        return self.kind.value if not self.label else f"{self.kind.value}#{self.label}"

    @property
    def display(self) -> str:
        """The URL form of this period with its label: ``alltime``, ``day:2026-11-30``."""
        return self.kind.value if not self.label else f"{self.kind.value}:{self.label}"


def _check_year(year: int, what: str) -> None:
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValueError(
            f"{what} is outside the years {FIRST_YEAR} to {LAST_YEAR} a board can have"
        )


@dataclass(frozen=True)
class Board:
    game: str
    variant: str
    period: Period

    @property
    def board_id(self) -> str:
        return f"{self.game}#{self.variant}#{self.period.suffix}"

    @classmethod
    def parse(cls, text: str, *, now: datetime) -> Board:
        """A board as an operator names it, in any of the forms the service shows: the board id
        (``trivia#alltopics#day#2026-11-30``), the id with the API's period
        (``trivia#alltopics#day:2026-11-30``, ``trivia#alltopics#day`` for the current day), or
        the API's path (``trivia/alltopics/week:2026-W48``). ``ValueError`` says the forms."""
        separator = "/" if "/" in text and "#" not in text else "#"
        game, _, rest = text.partition(separator)
        variant, _, period_text = rest.partition(separator)
        if separator == "#" and "#" in period_text:
            period_text = period_text.replace("#", ":", 1)  # the board id's own form
        if not (is_valid_id(game) and is_valid_id(variant) and period_text):
            raise ValueError(
                f"{text!r} is not a board: use GAME#VARIANT#PERIOD, where PERIOD is alltime, day, "
                "week or month (the current ones), day#YYYY-MM-DD, week#YYYY-Www or month#YYYY-MM "
                "(trivia#alltopics#day#2026-11-30; the API's day:2026-11-30 and "
                "trivia/alltopics/day:2026-11-30 work too)"
            )
        return cls(game, variant, Period.parse(period_text, now=now))

    @classmethod
    def from_id(cls, board_id: str) -> Board:
        """Parse a board id back (``trivia#alltopics#day#2026-11-30``); ``ValueError`` if malformed."""
        game, variant, *rest = board_id.split("#")
        if not rest or len(rest) > 2:
            raise ValueError(f"not a board id: {board_id!r}")
        period = Period(PeriodKind(rest[0]), rest[1] if len(rest) == 2 else "")
        if period.kind is not PeriodKind.ALLTIME:
            period.start()
        elif period.label:
            raise ValueError(f"not a board id: {board_id!r}")
        return cls(game, variant, period)


def board_expiry_s(board: Board, retention: timedelta) -> int | None:
    """When a board's rows, counters and registry row expire (epoch seconds, as DynamoDB's TTL
    reads them): a retention after its period ends; never for all-time."""
    expires = board.period.expires_at(retention)
    return None if expires is None else int(expires.timestamp())


def board_is_expired(board: Board, *, now: datetime, retention: timedelta) -> bool:
    """Day and week rows expire together, a retention after their period ends; DynamoDB deletes
    them late (and the embedded backend never), so reads decide by the period, not by the rows."""
    expires = board.period.expires_at(retention)
    return expires is not None and expires <= now
