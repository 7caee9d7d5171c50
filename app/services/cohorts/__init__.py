"""Cohorts, tournaments and leagues (DESIGN.md section 16, decision 0039): players placed on a
period board, first come first placed, into cohorts of a size (``_join``)."""

from __future__ import annotations

from app.domain.cohorts import Placement
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey, key_just_below
from app.domain.periods import Board
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
from app.services.ports.ranking import RankReader
from app.services.registry import BoardRegistrar

_EVERY_KEY = 2**31 - 1
"""A COUNT's cap no cohort reaches (a cohort holds at most 1,000): the count is exact."""


class Cohorts:
    """Joins and placements, over the placements store."""

    def __init__(
        self,
        entrants: EntrantStore,
        ranks: RankReader,
        policy: PlacePolicy,
        registry: BoardRegistrations | None = None,
    ) -> None:
        self._entrants = entrants
        self._ranks = ranks
        self._policy = policy
        self._registrar = None if registry is None else BoardRegistrar(registry)

    async def placement(self, board: Board, player_id: str) -> Placement | None:
        """The player's place on the period board, if they have one (one call)."""
        return (await self._entrants.read_entry(player_id, board.board_id)).placement

    async def rank_in_cohort(self, board: Board, cohort_id: str, key: RankKey) -> int:
        """The exact rank in their cohort of the player at ``key`` on the period board (their
        cohort row holds the same key: every submission writes both): one COUNT of the cohort's
        one small index partition, whatever its size (at most ``cohortSize`` entries)."""
        cohort = board.in_cohort(cohort_id).board_id
        ahead, _ = await self._ranks.count_keys(
            cohort,
            "0",
            key_just_below(key.encode()),
            limit=_EVERY_KEY,
            exclude_player=key.player_id,
        )
        return ahead + 1

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
