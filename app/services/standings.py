"""Where am I: a player's entry and rank on a board, the players around them, and their standings
on every live board."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from app.domain.models import Entry, Standing
from app.domain.periods import Board
from app.domain.ranks import EstimatedRank, ExactRank, Rank
from app.errors import NotFound
from app.services.boards import board_is_expired
from app.services.policies import ReadPolicy
from app.services.ports import BoardIndex, RankReader, StandingStore
from app.services.rank import RankQuery, rank_of


@dataclass(frozen=True)
class PlayerRank:
    board: Board
    entry: Entry
    rank: Rank


@dataclass(frozen=True)
class Neighbour:
    entry: Entry
    offset: int
    """Places from the player: -2 is two ahead, 0 is the player, 1 is just behind."""


@dataclass(frozen=True)
class Around:
    player: PlayerRank
    neighbours: list[Neighbour]

    def rank_of(self, neighbour: Neighbour) -> int | None:
        if isinstance(self.player.rank, ExactRank):
            return self.player.rank.rank + neighbour.offset
        return None

    def range_of(self, neighbour: Neighbour) -> tuple[int, int] | None:
        if isinstance(self.player.rank, EstimatedRank):
            lo, hi = self.player.rank.rank_range
            return max(1, lo + neighbour.offset), max(1, hi + neighbour.offset)
        return None


async def player_rank(
    *,
    standings: StandingStore,
    ranks: RankReader,
    policy: ReadPolicy,
    board: Board,
    player_id: str,
    now: datetime,
) -> PlayerRank:
    """The player's entry (read strongly from their row) and rank: one round trip for the row,
    one for the rank's reads."""
    standing = await _standing(standings, policy, board, player_id, now)
    rank = await rank_of(
        ranks, policy.layout, RankQuery(board.board_id, standing.entry.key), cap=policy.cap
    )
    return PlayerRank(board, standing.entry, rank)


async def _standing(
    standings: StandingStore, policy: ReadPolicy, board: Board, player_id: str, now: datetime
) -> Standing:
    standing = None
    if not board_is_expired(board, now=now, retention=policy.retention):
        standing = await standings.read_standing(board.board_id, player_id)
    if standing is None:
        raise NotFound(f"player {player_id!r} is not on board {board.board_id}")
    return standing


async def around_player(
    *,
    standings: StandingStore,
    index: BoardIndex,
    ranks: RankReader,
    policy: ReadPolicy,
    board: Board,
    player_id: str,
    before: int,
    after: int,
    now: datetime,
) -> Around:
    """The ``before`` entries just ahead, the player, the ``after`` just behind, in board order:
    one round trip for the player's row, one for their rank and the neighbours together."""
    standing = await _standing(standings, policy, board, player_id, now)
    key = standing.entry.key.encode()
    rank, ahead, behind = await asyncio.gather(
        rank_of(
            ranks, policy.layout, RankQuery(board.board_id, standing.entry.key), cap=policy.cap
        ),
        index.query_neighbours(board.board_id, key, ahead=True, limit=before),
        index.query_neighbours(board.board_id, key, ahead=False, limit=after),
    )
    found = PlayerRank(board, standing.entry, rank)
    neighbours = [Neighbour(e, -(i + 1)) for i, e in enumerate(ahead)][::-1]
    neighbours.append(Neighbour(found.entry, 0))
    neighbours += [Neighbour(e, i + 1) for i, e in enumerate(behind)]
    return Around(found, neighbours)


@dataclass(frozen=True)
class BoardStanding:
    board: Board
    standing: Standing
    rank: Rank


async def player_standings(
    *,
    standings: StandingStore,
    ranks: RankReader,
    policy: ReadPolicy,
    player_id: str,
    now: datetime,
) -> list[BoardStanding]:
    """Every live board the player is on: one base-table query, then the ranks together."""
    rows = await standings.standings_of(player_id)
    live = [
        (Board.from_id(row.board_id), row)
        for row in rows
        if not board_is_expired(Board.from_id(row.board_id), now=now, retention=policy.retention)
        and (row.expires_at is None or row.expires_at > now.timestamp())
    ]
    found = await asyncio.gather(
        *(
            rank_of(ranks, policy.layout, RankQuery(board.board_id, row.entry.key), cap=policy.cap)
            for board, row in live
        )
    )
    return [BoardStanding(board, row, rank) for (board, row), rank in zip(live, found, strict=True)]
