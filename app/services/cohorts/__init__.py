"""Cohorts, tournaments and leagues (DESIGN.md section 16, decision 0039): players placed on a
period board, first come first placed, into cohorts of a size (``_join``)."""

from __future__ import annotations

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

    async def join(self, ask: JoinAsk) -> JoinOutcome:
        """201's placement (``first``) or 200's: see ``_join.join``."""
        return await join(self._entrants, self._policy, ask)


__all__ = ["Cohorts", "JoinAsk", "JoinOutcome", "PlaceAsk", "PlacePolicy", "place"]
