"""Cohorts (decision 0039): a period board cut into cohorts of at most ``cohortSize`` players,
placed first come first placed. Seats are handed out densely, one counter per period board, so
the arithmetic is a division: seat ``s`` (0-based) is in cohort ``s // size + 1``."""

from __future__ import annotations

from dataclasses import dataclass

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

    def placement(self, player_id: str, board_id: str, seen: int, token: str = "") -> Placement:
        """The place of the player seated after ``seen`` others."""
        cohort = None if self.cohort_size is None else cohort_of_seat(seen, self.cohort_size)
        return Placement(player_id, board_id, seen, cohort, token=token)
