"""Boards and their periods: all-time, the day, the ISO week, the calendar month (each local to
the variant's time zone: ``app.domain.calendar``), and seasons.

A board id is ``<game>#<variant>#<period>``: ``trivia#alltopics#alltime``,
``trivia#alltopics#day#2026-11-30``, ``trivia#alltopics#week#2026-W48``,
``trivia#alltopics#month#2026-12``, ``trivia#alltopics#season#s1``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import assert_never

from app.domain.keys import is_valid_id


class PeriodKind(enum.StrEnum):
    ALLTIME = "alltime"
    DAY = "day"
    WEEK = "week"
    MONTH = "month"
    SEASON = "season"


_DAY_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")
_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")
_SEASON_RE = re.compile(r"^[A-Za-z0-9_-]{1,32}$")

FIRST_YEAR, LAST_YEAR = 1970, 9899
"""The years a dated period may fall in. Times are kept as milliseconds since 1970, so no score is
older; and a period's end plus the longest retention (3,650 days) and lateness must still be a time
the calendar holds (it ends with 9999): a century of room keeps every sum far from that edge."""
YEAR_PATTERN = r"(?:19[7-9]\d|[2-8]\d{3}|9[0-8]\d{2})"
"""``FIRST_YEAR`` to ``LAST_YEAR`` as a regular expression, for the OpenAPI document."""


@dataclass(frozen=True)
class Period:
    """One period of a board: ``label`` is empty for all-time, a local date, an ISO week, a month
    or a season's id otherwise. When it starts and ends is its variant's calendar's to say
    (``app.domain.calendar``): the same ``day:2026-03-08`` is a different span in each zone."""

    kind: PeriodKind
    label: str = ""

    @classmethod
    def containing(cls, kind: PeriodKind, moment: datetime) -> Period:
        """The dated (or all-time) period holding ``moment`` by ``moment``'s own local date: pass
        it in the variant's zone (``Calendar.containing`` does, and knows seasons)."""
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
            case PeriodKind.SEASON:
                raise ValueError("a season is its calendar's to find (Calendar.containing)")
            case unknown:
                assert_never(unknown)

    @classmethod
    def parse(cls, text: str) -> Period:
        """Parse the URL form: ``alltime``, ``day``, ``week``, ``month``, ``season`` (the current
        ones: no label, which the variant's calendar fills) or ``day:2026-11-30``,
        ``week:2026-W48``, ``month:2026-12``, ``season:s1``. Raises ``ValueError`` with a reason
        the client can act on."""
        kind_text, separator, label = text.partition(":")
        try:
            kind = PeriodKind(kind_text)
        except ValueError:
            raise ValueError(
                f"unknown period {text!r}: use alltime, day, week, month, season, day:YYYY-MM-DD, "
                "week:YYYY-Www, month:YYYY-MM or season:ID"
            ) from None
        if not label:
            if separator:
                raise ValueError(f"period {text!r} has an empty label")
            return cls(kind)
        if kind is PeriodKind.ALLTIME:
            raise ValueError("the alltime period takes no label")
        period = cls(kind, label)
        period.check_label()
        return period

    def check_label(self) -> None:
        """``ValueError`` unless the label is one of its kind's (a date the calendar has, of the
        years a board can have; a season id)."""
        if self.kind is PeriodKind.SEASON:
            if not _SEASON_RE.fullmatch(self.label):
                raise ValueError(
                    f"season {self.label!r} is not a season id ([A-Za-z0-9_-]{{1,32}})"
                )
        elif self.kind is not PeriodKind.ALLTIME:
            self.first_day()

    def first_day(self) -> date:
        """The first local date of a dated period (``ValueError`` for a bad label, and for
        all-time and seasons, which have none)."""
        match self.kind:
            case PeriodKind.DAY:
                return self._day()
            case PeriodKind.WEEK:
                return self._monday()
            case PeriodKind.MONTH:
                return self._first_of_month()
            case PeriodKind.ALLTIME | PeriodKind.SEASON:
                raise ValueError(f"{self.display} has no first day")
            case unknown:
                assert_never(unknown)

    def _day(self) -> date:
        match = _DAY_RE.fullmatch(self.label)
        if match is None:
            raise ValueError(f"day {self.label!r} is not YYYY-MM-DD")
        _check_year(int(match[1]), f"day {self.label!r}")
        try:
            return date(int(match[1]), int(match[2]), int(match[3]))
        except ValueError as exc:
            raise ValueError(f"day {self.label!r} is not a date: {exc}") from None

    def _first_of_month(self) -> date:
        match = _MONTH_RE.fullmatch(self.label)
        if match is None:
            raise ValueError(f"month {self.label!r} is not YYYY-MM")
        _check_year(int(match[1]), f"month {self.label!r}")
        if not 1 <= int(match[2]) <= 12:
            raise ValueError(f"month {self.label!r} is not a month of the year")
        return date(int(match[1]), int(match[2]), 1)

    def _monday(self) -> date:
        match = _WEEK_RE.fullmatch(self.label)
        if match is None:
            raise ValueError(f"week {self.label!r} is not YYYY-Www")
        _check_year(int(match[1]), f"week {self.label!r}")
        try:
            return date.fromisocalendar(int(match[1]), int(match[2]), 1)
        except ValueError as exc:
            raise ValueError(f"week {self.label!r} is not an ISO week: {exc}") from None

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


COHORT_MARK = "#~"
"""What joins a period board's id and a cohort's number in the cohort's board id (decision 0039):
``~`` is in no id, no period label and no key prefix or suffix of the scheme."""
TIER_ID_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"
"""A league tier's id (``bronze``, ``gold_2``): no ``-``, which joins it to a cohort's number."""
COHORT_ID_PATTERN = r"^(?:[a-z][a-z0-9_]{0,31}-)?[1-9]\d{0,8}$"
"""A cohort's id: its number, 1-based, decimal, no leading zero; in a league (``tiers``) its
tier's id first, joined by ``-`` (``gold-3``: cohort 3 of tier ``gold``)."""
_COHORT_RE = re.compile(COHORT_ID_PATTERN)


def check_cohort_id(cohort_id: str) -> str:
    """``cohort_id`` if it is a cohort's number (1-based, decimal, no leading zero), else
    ``ValueError``."""
    if not _COHORT_RE.fullmatch(cohort_id):
        raise ValueError(
            f"cohort {cohort_id!r} is not a cohort id (1, 2, 3, ..., or in a league gold-1, ...)"
        )
    return cohort_id


def tier_of_cohort(cohort_id: str) -> str | None:
    """The league tier a cohort id names (``gold`` of ``gold-3``); ``None`` outside a league."""
    tier, joined, _ = cohort_id.rpartition("-")
    return tier if joined else None


@dataclass(frozen=True)
class Board:
    game: str
    variant: str
    period: Period
    cohort: str | None = None
    """The cohort of the period board this board is (decision 0039); ``None``: the whole board."""

    @property
    def board_id(self) -> str:
        whole = f"{self.game}#{self.variant}#{self.period.suffix}"
        return whole if self.cohort is None else f"{whole}{COHORT_MARK}{self.cohort}"

    @property
    def whole(self) -> Board:
        """The period board this board is a cohort of (itself, where it is the whole board)."""
        return Board(self.game, self.variant, self.period)

    def in_cohort(self, cohort_id: str) -> Board:
        """One cohort of this period board."""
        return Board(self.game, self.variant, self.period, check_cohort_id(cohort_id))

    @staticmethod
    def named(text: str) -> tuple[str, str, str]:
        """A board as an operator names it, in any of the forms the service shows, cut into its
        game, variant and period in the API's form (for its variant's calendar to resolve: the
        current ``day`` is a local day): the board id (``trivia#alltopics#day#2026-11-30``), the
        id with the API's period (``trivia#alltopics#day:2026-11-30``, ``trivia#alltopics#day``
        for the current day), or the API's path (``trivia/alltopics/week:2026-W48``).
        ``ValueError`` says the forms."""
        separator = "/" if "/" in text and "#" not in text else "#"
        game, _, rest = text.partition(separator)
        variant, _, period_text = rest.partition(separator)
        if separator == "#" and "#" in period_text:
            period_text = period_text.replace("#", ":", 1)  # the board id's own form
        if not (is_valid_id(game) and is_valid_id(variant) and period_text):
            raise ValueError(
                f"{text!r} is not a board: use GAME#VARIANT#PERIOD, where PERIOD is alltime, day, "
                "week, month or season (the current ones), day#YYYY-MM-DD, week#YYYY-Www, "
                "month#YYYY-MM or season#ID (trivia#alltopics#day#2026-11-30; the API's "
                "day:2026-11-30 and trivia/alltopics/day:2026-11-30 work too)"
            )
        Period.parse(period_text)
        return game, variant, period_text

    @classmethod
    def from_id(cls, board_id: str) -> Board:
        """Parse a board id back (``trivia#alltopics#day#2026-11-30``, a cohort's
        ``trivia#alltopics#day#2026-11-30#~3``); ``ValueError`` if malformed."""
        whole_id, mark, cohort = board_id.partition(COHORT_MARK)
        if mark:
            return cls.from_id(whole_id).in_cohort(cohort)
        game, variant, *rest = board_id.split("#")
        if not rest or len(rest) > 2:
            raise ValueError(f"not a board id: {board_id!r}")
        period = Period(PeriodKind(rest[0]), rest[1] if len(rest) == 2 else "")
        if period.kind is not PeriodKind.ALLTIME:
            period.check_label()
        elif period.label:
            raise ValueError(f"not a board id: {board_id!r}")
        return cls(game, variant, period)
