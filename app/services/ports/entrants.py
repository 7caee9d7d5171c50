"""The port of placements (decision 0039): a player's place on a period board of a cohort variant
(``<player>`` / ``cohort#<board>``), and the board's count of players placed
(``cohorts#<board>`` / ``cohorts``), both in the Scores table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from app.domain.cohorts import Placement


@dataclass(frozen=True)
class EntryState:
    """What a placement decides on, read strongly in one BatchGetItem."""

    placement: Placement | None
    """The player's place, if they have one."""
    placed: int
    """Players placed on the board so far (0: none, or no counter yet)."""


class EntrantStore(Protocol):
    async def read_entry(self, player_id: str, board_id: str) -> EntryState:
        """The player's placement and the board's count, in one call."""
        ...

    async def read_entries(self, player_id: str, board_ids: list[str]) -> dict[str, EntryState]:
        """``read_entry`` of each board, by board id, in one call."""
        ...

    async def place(
        self, placement: Placement, *, max_entrants: int | None, expires_at: int | None
    ) -> None:
        """Place the player at ``placement.seat``, in one transaction: the count goes from the
        seat to one more, and the placement is put where the player has none (and the count is
        under ``max_entrants``). ``TransactionCancelled`` where anything changed since the read;
        ``placement.token`` is the transaction's ``ClientRequestToken``, so a resend after a lost
        answer is applied once."""
        ...

    async def erase_placement(self, player_id: str, board_id: str) -> None:
        """Delete the placement (nothing, if it is gone already): the player's erasure. The seat
        is not given back: the board's count stays."""
        ...
