"""Cohorts, tournaments and leagues (DESIGN.md section 16, decision 0039): players placed on a
period board, first come first placed, into cohorts of a size (``_join``)."""

from __future__ import annotations

from app.domain.definitions import BoardDefinition
from app.services.cohorts._join import (
    JoinAsk,
    JoinOutcome,
    PlaceAsk,
    PlacePolicy,
    join,
    place,
)
from app.services.cohorts._league import LeagueAt, LeagueView, league_view
from app.services.ports import BoardRegistrations
from app.services.ports.entrants import EntrantStore
from app.services.registry import BoardRegistrar


class Cohorts:
    """Joins and placements, over the placements store."""

    def __init__(
        self,
        entrants: EntrantStore,
        policy: PlacePolicy,
        registry: BoardRegistrations | None = None,
    ) -> None:
        self._entrants = entrants
        self._policy = policy
        self._registrar = None if registry is None else BoardRegistrar(registry)

    async def join(self, ask: JoinAsk) -> JoinOutcome:
        """201's placement (``first``) or 200's: see ``_join.join``. The board is registered
        first, as a submission's is, so it closes (and a league's moves are decided) even where
        its players only joined."""
        if self._registrar is not None and ask.definition.gates_entry:
            await self._registrar.ensure(ask.board, definition=ask.definition)
        return await join(self._entrants, self._policy, ask)

    async def league(self, definition: BoardDefinition, at: LeagueAt, player_id: str) -> LeagueView:
        """The player's tier and cohort now (``league_view``)."""
        return await league_view(
            self._entrants, definition, at, player_id, settle=self._policy.settle
        )


__all__ = [
    "Cohorts",
    "JoinAsk",
    "JoinOutcome",
    "LeagueAt",
    "LeagueView",
    "PlaceAsk",
    "PlacePolicy",
    "place",
]
