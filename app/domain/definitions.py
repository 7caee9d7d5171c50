"""How a board ranks: its order and operator, the periods a score fans out to, how long period
boards live, the scores a submission may carry; and what one submission makes of a player's place
under those rules.

A definition belongs to a ``(game, variant)`` and applies to every period board of it. Ties always
go to whoever reached the value first: the earlier ``achievedAt`` (for ``sum``, the time of the
increment that made the total), then the smaller player id: the rank key carries exactly that.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import cached_property
from typing import assert_never

from app.domain.calendar import UTC_NAME, Calendar, Season
from app.domain.clock import iso_ms
from app.domain.cohorts import (
    MAX_ATTEMPTS,
    MAX_COHORT_SIZE,
    MAX_ENTRANTS,
    MAX_TIERS,
    League,
    Seating,
    Tier,
)
from app.domain.keys import SCORE_CEILING, Order, RankKey, check_score
from app.domain.periods import TIER_ID_PATTERN, PeriodKind
from app.domain.shards import check_shards


class Operator(enum.StrEnum):
    """What a submission does to the player's value on a board."""

    BEST = "best"
    """Keep the best score (by the board's order)."""
    LATEST = "latest"
    """The submission with the latest ``achievedAt`` replaces the value, up or down."""
    SUM = "sum"
    """Each accepted submission adds its score to the player's total."""

    @property
    def words(self) -> str:
        """What this operator makes of a player's scores, as a person reads it (after the order's
        words: "Lower is better · best score kept"): the board viewer's words for it
        (``/viewer/words.json`` serves them), and nowhere else."""
        match self:
            case Operator.BEST:
                return "best score kept"
            case Operator.LATEST:
                return "latest score counts"
            case Operator.SUM:
                return "scores add up to a total"
            case unknown:
                assert_never(unknown)

    @property
    def score_name(self) -> str:
        """What a player's value on a board of this operator is called: the board viewer's score
        column heading."""
        match self:
            case Operator.BEST:
                return "Score"
            case Operator.LATEST:
                return "Latest score"
            case Operator.SUM:
                return "Total"
            case unknown:
                assert_never(unknown)


class ScoreFormat(enum.StrEnum):
    """How a board's scores read to a person; the order and the arithmetic do not change."""

    INTEGER = "integer"
    """A count or points, shown as the number."""
    DURATION_MS = "duration_ms"
    """A time in milliseconds, shown as m:ss.fff (a lap, a speedrun)."""

    @property
    def words(self) -> str:
        """What the scores are, as a person reads it: the board viewer's name for the format
        (``/viewer/words.json`` serves it; how a score is written stays the viewer's own)."""
        match self:
            case ScoreFormat.INTEGER:
                return "Points or a count"
            case ScoreFormat.DURATION_MS:
                return "A time, to the millisecond"
            case unknown:
                assert_never(unknown)


WHAT_CHANGES = (
    "The rank key decides: a submission changes the player's entry on a board when it changes "
    "their rank key (for `best`, a better score, or the same score reached earlier; for "
    "`latest`, a later `achievedAt`, whatever the score; for `sum`, any increment but 0), and "
    "`improved` says whether it did; a submission that changes nothing updates only the row's "
    "`version` and `lastPlayedAt`, which RankIndex does not hold, so it writes no index entry and "
    "the entry keeps its `metadata` and `context`."
)
"""The rule for what a submission changes, stated once: the API's description of ``improved``
says it, and docs/api.md and docs/boards.md quote it (a test holds them to it)."""

DEFAULT_PERIODS = (PeriodKind.ALLTIME, PeriodKind.DAY, PeriodKind.WEEK)
MAX_RETENTION_DAYS = 3650


@dataclass(frozen=True)
class BoardDefinition:
    order: Order = Order.DESC
    operator: Operator = Operator.BEST
    periods: tuple[PeriodKind, ...] = DEFAULT_PERIODS
    retention_days: int = 30
    score_format: ScoreFormat = ScoreFormat.INTEGER
    """How the scores read (display only: changing it reorders nothing)."""
    shards: int = 1
    """How many index partitions each period board is spread over (``app.domain.shards``)."""
    score_min: int | None = None
    """The lowest score a submission may carry, inclusive (``None``: 0, the score range's)."""
    score_max: int | None = None
    """The highest, inclusive (``None``: the score range's, ``SCORE_CEILING - 1``)."""
    time_zone: str = UTC_NAME
    """The IANA zone whose local midnight starts its day, week and month boards."""
    seasons: tuple[Season, ...] = ()
    """Its fixed seasons, the spans of its ``season`` boards, in time order."""
    cohort_size: int | None = None
    """Each period board is cut into cohorts of at most this many players (decision 0039)."""
    join_required: bool = False
    """A submission from a player who has not joined the period board is refused."""
    max_entrants: int | None = None
    """Most players placed (joined, or placed by a first submission) on a period board."""
    max_attempts: int | None = None
    """Most accepted submissions per player per period board."""
    tiers: tuple[Tier, ...] = ()
    """A league's tiers, lowest first (decision 0040): cohorts form within a tier."""

    def __post_init__(self) -> None:
        check_shards(self.shards)
        for name, value, most, least in (
            ("cohortSize", self.cohort_size, MAX_COHORT_SIZE, 2),
            ("maxEntrants", self.max_entrants, MAX_ENTRANTS, 1),
            ("maxAttempts", self.max_attempts, MAX_ATTEMPTS, 1),
        ):
            if value is not None and not least <= value <= most:
                raise ValueError(f"{name} must be in {least}..{most}, got {value}")
        _check_tiers(self)
        # Checks the zone and the seasons (ValueError), and orders the seasons.
        object.__setattr__(self, "seasons", Calendar(self.time_zone, self.seasons).seasons)
        if PeriodKind.SEASON in self.periods and not self.seasons:
            raise ValueError("the season period needs seasons: list them in seasons")
        for name, bound in (("scoreMin", self.score_min), ("scoreMax", self.score_max)):
            if bound is not None and not _a_score(bound):
                raise ValueError(f"{name} must be an integer in [0, {SCORE_CEILING}), got {bound}")
        low, high = self.score_min, self.score_max
        if low is not None and high is not None and low > high:
            raise ValueError(f"scoreMin ({low}) must not be above scoreMax ({high})")
        if not self.periods:
            raise ValueError("a definition needs at least one period")
        if len(set(self.periods)) != len(self.periods):
            raise ValueError("each period may be named once")
        if not 1 <= self.retention_days <= MAX_RETENTION_DAYS:
            raise ValueError(f"retentionDays must be in 1..{MAX_RETENTION_DAYS}")

    @property
    def gates_entry(self) -> bool:
        """Whether its period boards place their players (cohorts, joins, a cap on entrants or
        on attempts): a join means something only here."""
        return (
            self.cohort_size is not None
            or self.join_required
            or self.max_entrants is not None
            or self.max_attempts is not None
        )

    @property
    def league(self) -> League | None:
        """Its tiers, where it is a league."""
        return League(self.tiers) if self.tiers else None

    @property
    def seating(self) -> Seating:
        return Seating(self.cohort_size, self.max_entrants)

    @property
    def retention(self) -> timedelta:
        return timedelta(days=self.retention_days)

    @cached_property
    def calendar(self) -> Calendar:
        """When its period boards begin and end."""
        return Calendar(self.time_zone, self.seasons)

    @property
    def bounded(self) -> bool:
        """Whether the definition narrows the scores a submission may carry."""
        return self.score_min is not None or self.score_max is not None

    def within_bounds(self, score: int) -> bool:
        """Whether a submission may carry ``score``: inside ``score_min``..``score_max``, each
        inclusive (for ``sum``, the score submitted, not the total it makes)."""
        return (self.score_min is None or score >= self.score_min) and (
            self.score_max is None or score <= self.score_max
        )

    def may_hold(self, value: int) -> bool:
        """Whether a player's value on these boards may be ``value`` (what a seed row sets): a
        score within the bounds; for ``sum``, a total of such scores, which is at least
        ``score_min`` and may pass ``score_max``."""
        if self.operator is Operator.SUM:
            return self.score_min is None or value >= self.score_min
        return self.within_bounds(value)

    @property
    def bounds_words(self) -> str:
        """The bounds as a person reads them: "from 10 to 5000", "at least 10", "at most 5000"
        (or the score range, where there are none)."""
        low, high = self.score_min, self.score_max
        if low is not None and high is not None:
            return f"from {low} to {high}"
        if low is not None:
            return f"at least {low}"
        if high is not None:
            return f"at most {high}"
        return f"any score in [0, {SCORE_CEILING})"

    @property
    def bounds_named(self) -> str:
        """The bounds set, as the contract names them: "scoreMin 10, scoreMax 5000"."""
        named = (("scoreMin", self.score_min), ("scoreMax", self.score_max))
        return ", ".join(f"{name} {bound}" for name, bound in named if bound is not None)

    @property
    def places_fall(self) -> bool:
        """Whether a player's place on these boards can move back: a ``latest`` score lower than
        the one before, or a ``sum`` where lower is better. Where it cannot, counters read a moment
        late can only count the player behind where they stand, never ahead of themselves."""
        match self.operator:
            case Operator.BEST:
                return False
            case Operator.LATEST:
                return True
            case Operator.SUM:
                return self.order is Order.ASC
            case unknown:
                assert_never(unknown)

    def fixed_changes(self, other: BoardDefinition) -> tuple[str, ...]:
        """The fields, as the contract names them, in which this definition differs from
        ``other``'s and which boards holding entries cannot take: ``order`` and ``operator`` (they
        would reorder the boards' history) and ``shards`` (each entry would be left on a partition
        the boards no longer read), and ``timeZone`` (a closed day would open again in a zone
        further west). Empty: the boards may take this definition as they are."""
        fixed = (
            ("order", self.order is other.order),
            ("operator", self.operator is other.operator),
            ("shards", self.shards == other.shards),
            ("timeZone", self.time_zone == other.time_zone),
        )
        return tuple(name for name, same in fixed if not same)

    def entry_changes(self, other: BoardDefinition) -> tuple[str, ...]:
        """The fields of entry (decision 0039) in which this definition differs from ``other``'s
        and which boards holding entries cannot take: ``cohortSize`` (it would re-cut cohorts
        already filled), ``joinRequired`` and ``maxEntrants`` (they would gate players already in);
        ``maxAttempts`` only where it falls (it may rise: no attempt made becomes too many)."""
        rises = self.max_attempts is None or (
            other.max_attempts is not None and self.max_attempts >= other.max_attempts
        )
        fixed = (
            ("cohortSize", self.cohort_size == other.cohort_size),
            ("joinRequired", self.join_required == other.join_required),
            ("maxEntrants", self.max_entrants == other.max_entrants),
            ("maxAttempts", rises),
            # Promotion and relegation places may change; the tiers players are in may not.
            ("tiers", [tier.id for tier in self.tiers] == [tier.id for tier in other.tiers]),
        )
        return tuple(name for name, same in fixed if not same)


TIER_RE = re.compile(TIER_ID_PATTERN)


def _check_tiers(definition: BoardDefinition) -> None:
    """A league (decision 0040): 2..10 tiers of distinct ids over cohorts of one period that
    closes; no promotion out of the top tier, no relegation out of the lowest, and no cohort
    asked to move more players than it holds."""
    tiers = definition.tiers
    if not tiers:
        return
    if not 2 <= len(tiers) <= MAX_TIERS:
        raise ValueError(f"a league has 2 to {MAX_TIERS} tiers, got {len(tiers)}")
    ids = _tier_ids(tiers)
    size = definition.cohort_size
    if size is None:
        raise ValueError("tiers need cohortSize: a league's cohorts form within a tier")
    if len(definition.periods) != 1 or definition.periods[0] is PeriodKind.ALLTIME:
        raise ValueError(
            "a league moves its players at a period's close: its periods must be exactly one "
            "of day, week, month or season"
        )
    if definition.max_entrants is not None:
        raise ValueError("a league's tiers take every player: leave maxEntrants out")
    if tiers[-1].promote:
        raise ValueError(f"the top tier {ids[-1]!r} has no tier above: its promote must be 0")
    if tiers[0].demote:
        raise ValueError(f"the lowest tier {ids[0]!r} has no tier below: its demote must be 0")
    for tier in tiers:
        if tier.promote + tier.demote > size:
            raise ValueError(
                f"tier {tier.id!r} moves {tier.promote} up and {tier.demote} down, more than "
                f"its cohorts' {size} players"
            )


def _tier_ids(tiers: tuple[Tier, ...]) -> list[str]:
    ids = [tier.id for tier in tiers]
    if len(set(ids)) != len(ids):
        raise ValueError("each tier's id may be named once")
    for tier in tiers:
        if not TIER_RE.fullmatch(tier.id):
            raise ValueError(
                f"tier id {tier.id!r} must be a lowercase letter then up to 31 lowercase letters, "
                "digits or underscores"
            )
        if tier.promote < 0 or tier.demote < 0:
            raise ValueError(f"tier {tier.id!r}: promote and demote are counts, 0 or more")
    return ids


def season_changes(current: BoardDefinition, wanted: BoardDefinition, *, now_ms: int) -> list[str]:
    """What ``wanted`` would change of ``current``'s seasons that may no longer change, as a
    person reads it: a season that has ended stays as it is; one running keeps its start and
    may end no earlier than now; a new season may not lie wholly in the past."""
    problems: list[str] = []
    kept = {season.id: season for season in wanted.seasons}
    for season in current.seasons:
        after = kept.get(season.id)
        if season.ends_at_ms <= now_ms and after != season:
            problems.append(f"{season.words} has ended and cannot change")
        elif season.starts_at_ms <= now_ms < season.ends_at_ms:
            if after is None or after.starts_at_ms != season.starts_at_ms:
                problems.append(f"{season.words} is running: it keeps its id and start")
            elif after.ends_at_ms <= now_ms:
                problems.append(
                    f"{season.words} is running: it may end no earlier than now ({iso_ms(now_ms)})"
                )
    known = {season.id for season in current.seasons}
    problems.extend(
        f"{season.words} would be a new season already over"
        for season in wanted.seasons
        if season.id not in known and season.ends_at_ms <= now_ms
    )
    return problems


def _a_score(value: int) -> bool:
    try:
        check_score(value)
    except (TypeError, ValueError):
        return False
    return True


class TotalTooLarge(ValueError):
    """A ``sum`` total would reach the score ceiling."""


@dataclass(frozen=True)
class Move:
    """What a submission does to a player's place on one board."""

    key: RankKey
    """Where the player stands after it."""
    previous: RankKey | None
    """Where they stood before it (``None``: not on the board)."""
    changed: bool
    """The board's value for the player is this submission's doing: a better score (``best``),
    a later one (``latest``), an added one (``sum``), or the player's first."""


def move(
    definition: BoardDefinition,
    previous: RankKey | None,
    *,
    score: int,
    achieved_at_ms: int,
    player_id: str,
) -> Move:
    """The player's place after a submission of ``score`` at ``achieved_at_ms``, by the board's
    rules. Raises ``TotalTooLarge`` where a ``sum`` total would reach the ceiling."""
    order = definition.order
    submitted = RankKey(score, achieved_at_ms, player_id, order)
    if previous is None:
        return Move(submitted, None, changed=True)
    match definition.operator:
        case Operator.BEST:
            better = submitted.better_than(previous)
            return Move(submitted if better else previous, previous, changed=better)
        case Operator.LATEST:
            later = achieved_at_ms > previous.achieved_at_ms
            return Move(submitted if later else previous, previous, changed=later)
        case Operator.SUM:
            return _added(previous, submitted)
        case unknown:
            assert_never(unknown)


def _added(previous: RankKey, submitted: RankKey) -> Move:
    """A ``sum`` board's move: the ``submitted`` score added to the total ``previous`` holds."""
    if submitted.score == 0:
        return Move(previous, previous, changed=False)
    total = previous.score + submitted.score
    if total >= SCORE_CEILING:
        raise TotalTooLarge(
            f"the total would be {total}, past the largest a board can hold ({SCORE_CEILING - 1})"
        )
    # The total was reached by this increment: its time breaks ties, but never moves a total's
    # time back (an increment achieved earlier, arriving late, did not make this total first).
    reached = max(previous.achieved_at_ms, submitted.achieved_at_ms)
    return Move(replace(submitted, score=total, achieved_at_ms=reached), previous, changed=True)
