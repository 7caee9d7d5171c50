"""Cohorts, tournaments and leagues (DESIGN.md section 16, decision 0039): players placed on a
period board, first come first placed, into cohorts of a size (``_join``)."""

from __future__ import annotations

from app.domain.cohorts import Placement
from app.domain.periods import Board
from app.services.cohorts._join import (
    JoinAsk,
    JoinOutcome,
    PlaceAsk,
    PlacePolicy,
    join,
    place,
)
from app.services.ports.entrants import EntrantStore


class Cohorts:
    """Joins and placements, over the placements store."""

    def __init__(self, entrants: EntrantStore, policy: PlacePolicy) -> None:
        self._entrants = entrants
        self._policy = policy

    async def placement(self, board: Board, player_id: str) -> Placement | None:
        """The player's place on the period board, if they have one (one call)."""
        return (await self._entrants.read_entry(player_id, board.board_id)).placement

    async def join(self, ask: JoinAsk) -> JoinOutcome:
        """201's placement (``first``) or 200's: see ``_join.join``."""
        return await join(self._entrants, self._policy, ask)


__all__ = ["Cohorts", "JoinAsk", "JoinOutcome", "PlaceAsk", "PlacePolicy", "place"]
