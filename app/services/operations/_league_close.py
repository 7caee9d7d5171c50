"""A league's part of the close (decision 0040): before a board of a variant with ``tiers`` is
marked closed, each of its cohorts' moves are decided from its final standings (shown players
with a score, best first) and put once, so every later placement of its players reads the same
moves, and the ``board.closed`` event lists them."""

from __future__ import annotations

import asyncio
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from app.domain.calendar import board_expiry_s
from app.domain.cohorts import CohortMoves, League, Move
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.errors import Unavailable
from app.services.ports import Stores
from app.services.ranking.pages import top_entries
from app.services.work import persist

EVENT_MOVES = 1000
"""Moves a ``board.closed`` event lists, at most (its counts are whole)."""

_CONCURRENCY = 8
"""Cohorts settled at once."""


@dataclass(frozen=True)
class LeagueClose:
    """Every cohort's moves, by cohort id."""

    moves: dict[str, CohortMoves]
    league: League

    def event_fields(self) -> dict[str, Any]:
        """The event's ``league``: the counts, and who moved (up to ``EVENT_MOVES``)."""
        listed: list[dict[str, str]] = []
        promoted = demoted = 0
        for cohort_id, moves in sorted(self.moves.items(), key=lambda item: _order(item[0])):
            promoted += len(moves.up)
            demoted += len(moves.down)
            sides: tuple[tuple[Move, tuple[str, ...]], ...] = (
                ("up", moves.up),
                ("down", moves.down),
            )
            for move, players in sides:
                to = self.league.after(moves.tier, move)
                listed += [
                    {"playerId": p, "cohortId": cohort_id, "from": moves.tier, "to": to}
                    for p in players
                ]
        return {
            "league": {
                "cohorts": len(self.moves),
                "promoted": promoted,
                "demoted": demoted,
                "moves": listed[:EVENT_MOVES],
                "movesTruncated": len(listed) > EVENT_MOVES,
            }
        }


async def _without_erased(
    stores: Stores, board_id: str, cohort_id: str, moves: CohortMoves
) -> CohortMoves:
    """``moves`` less the players erased since the cohort was read: an erasure deletes the
    placement, then takes the player out of the moves put by then; one that ran between this
    close's read and its put is caught here, by its placement gone."""
    movers = (*moves.up, *moves.down)
    if not movers:
        return moves
    entrants = stores.entrants
    placed = await persist(lambda: entrants.still_placed(board_id, movers))
    for player in (p for p in movers if p not in placed):
        await persist(functools.partial(entrants.scrub_moves, board_id, cohort_id, player))
    return replace(
        moves,
        up=tuple(p for p in moves.up if p in placed),
        down=tuple(p for p in moves.down if p in placed),
    )


def _order(cohort_id: str) -> tuple[str, int]:
    tier, _, number = cohort_id.rpartition("-")
    return tier, int(number)


async def settle_league(
    stores: Stores, board: Board, definition: BoardDefinition
) -> LeagueClose | None:
    """Each cohort's moves, decided and put where none are yet (another closer's, where it put
    first, are the ones kept): ``None`` on a variant that is not a league."""
    league, size = definition.league, definition.cohort_size
    if league is None or size is None:
        return None
    counts = await persist(lambda: stores.entrants.read_counts(board.board_id, league.ids))
    cohorts = [
        (tier, f"{tier}-{number}")
        for tier in league.ids
        for number in range(1, math.ceil(counts.get(tier, 0) / size) + 1)
    ]
    gate = asyncio.Semaphore(_CONCURRENCY)
    expires_at = board_expiry_s(board, definition)

    async def settle(tier: str, cohort_id: str) -> tuple[str, CohortMoves]:
        async with gate:
            cohort = board.in_cohort(cohort_id).board_id
            ranked, counts = await asyncio.gather(
                top_entries(stores.index, cohort, size, 1),
                stores.counters.coarse_counts(cohort, consistent=True),
            )
            counted = sum(counts.values())
            if len(ranked) != counted:
                # RankIndex is eventually consistent: a row written just before the close may
                # not show yet. Moves are put for good, so not on a view the counts contradict.
                raise Unavailable(
                    f"cohort {cohort_id} of board {board.board_id}: its index shows "
                    f"{len(ranked)} players, its counts {counted}; the close waits for the index",
                    retry_after=1,
                )
            decided = league.moves(tier, [entry.player_id for entry in ranked])
            kept = await persist(
                lambda: stores.entrants.put_moves(
                    board.board_id, cohort_id, decided, expires_at=expires_at
                )
            )
            return cohort_id, await _without_erased(stores, board.board_id, cohort_id, kept)

    settled = await asyncio.gather(*(settle(tier, cohort_id) for tier, cohort_id in cohorts))
    return LeagueClose(dict(settled), league)


__all__: Sequence[str] = ["EVENT_MOVES", "LeagueClose", "settle_league"]
