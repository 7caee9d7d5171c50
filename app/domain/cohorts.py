"""Cohorts (decision 0039): a period board cut into cohorts of at most ``cohortSize`` players,
placed first come first placed. Seats are handed out densely, one counter per period board, so
the arithmetic is a division: seat ``s`` (0-based) is in cohort ``s // size + 1``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

MAX_COHORT_SIZE = 1000
MAX_ENTRANTS = 10**7
MAX_ATTEMPTS = 10**4


def cohort_of_seat(seat: int, size: int) -> str:
    """The cohort id of the ``seat``-th player placed (0-based) on a board cut into ``size``."""
    if seat < 0 or size < 1:
        raise ValueError(f"no cohort for seat {seat} of cohorts of {size}")
    return str(seat // size + 1)


def cohort_sizes(placed: int, size: int) -> list[int]:
    """How many players each cohort holds once ``placed`` players are placed, cohort 1 first:
    every one full but the last."""
    full, rest = divmod(placed, size)
    return [size] * full + ([rest] if rest else [])


@dataclass(frozen=True)
class Placement:
    """A player's place on one period board of a cohort variant."""

    player_id: str
    board_id: str
    """The period board (the whole board, not the cohort's)."""
    seat: int
    """0-based: how many players were placed on the board before them."""
    cohort_id: str | None
    """Their cohort (``None`` on a variant that gates entry without cutting into cohorts)."""
    tier: str | None = None
    """Their league tier on this board (``None`` on a variant without ``tiers``)."""
    attempts: int = 0
    """Accepted submissions of theirs to the board (``maxAttempts``)."""
    token: str = ""
    """The request that placed them: tells a placement of its own (written, its answer lost) from
    another request's."""


@dataclass(frozen=True)
class Seating:
    """How a period board seats its players: its definition's ``cohortSize`` and
    ``maxEntrants``."""

    cohort_size: int | None
    max_entrants: int | None

    def full(self, placed: int) -> bool:
        return self.max_entrants is not None and placed >= self.max_entrants

    def placement(
        self, player_id: str, board_id: str, seen: int, token: str = "", tier: str | None = None
    ) -> Placement:
        """The place of the player seated after ``seen`` others (of their ``tier``, in a
        league: each tier seats its own cohorts, ``gold-1``, ``gold-2``, ...)."""
        cohort = None if self.cohort_size is None else cohort_of_seat(seen, self.cohort_size)
        if cohort is not None and tier is not None:
            cohort = f"{tier}-{cohort}"
        return Placement(player_id, board_id, seen, cohort, tier=tier, token=token)


MAX_TIERS = 10


@dataclass(frozen=True)
class Tier:
    """One tier of a league (a variant with ``tiers``): at each close, each of its cohorts'
    best ``promote`` move up a tier, its worst ``demote`` down."""

    id: str
    promote: int = 0
    demote: int = 0


@dataclass(frozen=True)
class League:
    """A variant's tiers, lowest first (decision 0040)."""

    tiers: tuple[Tier, ...]

    @property
    def lowest(self) -> str:
        return self.tiers[0].id

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(tier.id for tier in self.tiers)

    def tier(self, tier_id: str) -> Tier:
        for tier in self.tiers:
            if tier.id == tier_id:
                return tier
        raise KeyError(tier_id)

    def known(self, tier_id: str) -> str:
        """``tier_id`` if the league has it, else its lowest (a tier no longer defined)."""
        return tier_id if tier_id in self.ids else self.lowest

    def after(self, tier_id: str, move: Move) -> str:
        """The tier a player of ``tier_id`` plays next after ``move``."""
        at = self.ids.index(self.known(tier_id))
        step = {"up": 1, "down": -1, "stay": 0}[move]
        return self.ids[min(max(at + step, 0), len(self.tiers) - 1)]

    def moves(self, tier_id: str, ranked: list[str]) -> CohortMoves:
        """Who moves of a cohort of ``tier_id`` whose shown players with a score are ``ranked``,
        best first: the best ``promote`` up, then the worst ``demote`` of the rest down (a
        cohort smaller than both together promotes first)."""
        tier = self.tier(tier_id)
        top = tier.promote if tier_id != self.ids[-1] else 0
        bottom = tier.demote if tier_id != self.lowest else 0
        up = ranked[:top]
        rest = ranked[len(up) :]
        down = rest[len(rest) - min(bottom, len(rest)) :]
        return CohortMoves(tier_id, tuple(up), tuple(down))


Move = Literal["up", "down", "stay"]


@dataclass(frozen=True)
class CohortMoves:
    """Who of one cohort moves at its period's close: written once, read by every later
    placement of its players."""

    tier: str
    up: tuple[str, ...]
    down: tuple[str, ...]

    def of(self, player_id: str) -> Move:
        if player_id in self.up:
            return "up"
        if player_id in self.down:
            return "down"
        return "stay"


@dataclass(frozen=True)
class LeagueRecord:
    """A player's league in one variant (``<player>`` / ``league#<game>#<variant>``): the
    period board they were last placed on, in which tier and cohort. It never expires: a
    player's tier persists across the periods they sit out."""

    tier: str
    board_id: str
    """The period board of their last placement."""
    period_start_ms: int
    """That period's start: a placement on an older board (a late score) leaves it."""
    cohort_id: str
