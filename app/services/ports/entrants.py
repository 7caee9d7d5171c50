"""The port of placements (decision 0039): a player's place on a period board of a cohort variant
(``<player>`` / ``cohort#<board>``), and the board's count of players placed
(``cohorts#<board>`` / ``cohorts``), both in the Scores table."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from app.domain.cohorts import CohortMoves, LeagueRecord, Placement


@dataclass(frozen=True)
class EntryState:
    """What a placement decides on, read strongly in one BatchGetItem."""

    placement: Placement | None
    """The player's place, if they have one."""
    placed: int
    """Players placed on the board so far (0: none, or no counter yet); in a league, see
    ``counts``."""
    counts: Mapping[str, int] = field(default_factory=dict)
    """In a league (decision 0040): players placed in each tier so far, by tier id."""
    league: LeagueRecord | None = None
    """In a league: the player's league record, if they were ever placed in it."""

    def placed_in(self, tier: str | None) -> int:
        return self.placed if tier is None else self.counts.get(tier, 0)


@dataclass(frozen=True)
class LeagueWrite:
    """The league record a placement in a league puts (decision 0040), and the period start of
    the one it read (``None``: none), on which the put is conditioned."""

    record: LeagueRecord
    read_start_ms: int | None


@dataclass(frozen=True)
class MovesState:
    """Who of a cohort moved at its board's close, if that is written, and whether the board's
    close is (its registry row marked)."""

    moves: CohortMoves | None
    closed: bool


class EntrantStore(Protocol):
    async def read_entry(
        self, player_id: str, board_id: str, tiers: tuple[str, ...] = ()
    ) -> EntryState:
        """The player's placement and the board's count, in one call; in a league (``tiers``),
        each tier's count and the player's league record too."""
        ...

    async def read_entries(
        self, player_id: str, board_ids: list[str], tiers: tuple[str, ...] = ()
    ) -> dict[str, EntryState]:
        """``read_entry`` of each board, by board id, in one call."""
        ...

    async def place(
        self,
        placement: Placement,
        *,
        max_entrants: int | None,
        expires_at: int | None,
        league: LeagueWrite | None = None,
    ) -> None:
        """Place the player at ``placement.seat``, in one transaction: the count goes from the
        seat to one more, and the placement is put where the player has none (and the count is
        under ``max_entrants``). ``TransactionCancelled`` where anything changed since the read;
        ``placement.token`` is the transaction's ``ClientRequestToken``, so a resend after a lost
        answer is applied once. In a league, ``league`` is put in the same transaction."""
        ...

    async def read_counts(self, board_id: str, tiers: tuple[str, ...]) -> dict[str, int]:
        """Players placed in each tier of the board so far, by tier id (one call)."""
        ...

    async def placed_on(self, board_id: str, tiers: tuple[str, ...]) -> int:
        """Players placed on the board so far, in every one of ``tiers`` and outside any (one
        call, strongly)."""
        ...

    async def still_placed(self, board_id: str, player_ids: tuple[str, ...]) -> set[str]:
        """Those of the players whose placement on the board is there (one call, strongly):
        the others were erased."""
        ...

    async def read_moves(self, board_id: str, cohort_id: str) -> MovesState:
        """Who of the cohort moved at the board's close, and whether the board is closed: one
        call."""
        ...

    async def put_moves(
        self, board_id: str, cohort_id: str, moves: CohortMoves, *, expires_at: int | None
    ) -> CohortMoves:
        """Put the cohort's moves where none are: the ones stored (``moves``, or another
        closer's put first)."""
        ...

    async def scrub_moves(self, board_id: str, cohort_id: str, player_id: str) -> None:
        """Take the player out of the cohort's moves (nothing, where none are): erasure."""
        ...

    async def read_league(self, player_id: str, game: str, variant: str) -> LeagueRecord | None:
        """The player's league record in the variant (one call)."""
        ...

    async def erase_league(self, player_id: str, league: str) -> None:
        """Delete the league record ``league#<league>`` (``<game>#<variant>``): erasure."""
        ...

    async def erase_placement(self, player_id: str, board_id: str) -> None:
        """Delete the placement (nothing, if it is gone already): the player's erasure. The seat
        is not given back: the board's count stays."""
        ...
