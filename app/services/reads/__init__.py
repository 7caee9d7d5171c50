"""The public reads: which boards there are, a board's top, a player's rank and the players
around them, a group's board, a player's standings, and a board's snapshots."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.services.policies import ReadPolicy
from app.services.ports import Snapshot, SnapshotSummary, Stores
from app.services.ranking import Ranking
from app.services.reads._asks import BoardAsk, PageAsk
from app.services.reads._cohorts import rank_with_cohort
from app.services.reads._listing import MAX_LISTED_VARIANTS, BoardListing, live_boards
from app.services.reads._players import (
    MAX_GROUP,
    MAX_GROUP_RANKED,
    MAX_STANDINGS,
    STANDINGS_QUERIES_PER_PAGE,
    STANDINGS_ROWS_PER_QUERY,
    Around,
    CohortRank,
    GroupMember,
    Neighbour,
    PlayerRank,
    StandingsPage,
    around_player,
    group_board,
    player_rank,
    player_standings,
)
from app.services.reads._snapshots import get_snapshot, list_snapshots
from app.services.reads._top import BoardPage, RankedEntry, read_page
from app.services.registry import RegisteredBoards
from app.services.rules.held import Definitions


class BoardReads:
    """Every read of a board takes it and the ``definition`` it follows (``BoardRules``: the
    caller resolves it first, so an undefined variant is refused before anything is read)."""

    def __init__(
        self,
        stores: Stores,
        policy: ReadPolicy,
        definitions: Definitions,
        ranking: Ranking,
        registered: RegisteredBoards,
    ) -> None:
        self._stores = stores
        self._policy = policy
        self._definitions = definitions
        self._ranking = ranking
        self._registered = registered

    async def boards(
        self, *, now: datetime, limit: int = MAX_LISTED_VARIANTS, cursor: str | None = None
    ) -> BoardListing:
        """A page of the games and variants that have boards, and each one's live periods."""
        return await live_boards(
            self._stores,
            self._policy,
            self._definitions,
            self._registered,
            PageAsk(limit, cursor, now),
        )

    async def top(
        self,
        board: Board,
        definition: BoardDefinition,
        *,
        limit: int,
        cursor: str | None,
        now: datetime,
    ) -> BoardPage:
        asked = BoardAsk(board, definition, now)
        page = PageAsk(limit, cursor, now)
        return await read_page(self._stores, self._policy, self._ranking, asked, page)

    async def rank(
        self, board: Board, definition: BoardDefinition, player_id: str, *, now: datetime
    ) -> PlayerRank:
        """The player's entry and rank; on a period board of a variant with ``cohortSize``,
        their rank in their cohort too, read at the same time (``rank_with_cohort``)."""
        asked = BoardAsk(board, definition, now)
        if definition.cohort_size is not None and board.cohort is None:
            return await rank_with_cohort(self._stores, self._ranking, asked, player_id)
        return await player_rank(self._stores, self._ranking, asked, player_id)

    async def around(
        self,
        board: Board,
        definition: BoardDefinition,
        player_id: str,
        *,
        before: int,
        after: int,
        now: datetime,
    ) -> Around:
        asked = BoardAsk(board, definition, now)
        return await around_player(self._stores, self._ranking, asked, player_id, before, after)

    async def group(
        self,
        board: Board,
        definition: BoardDefinition,
        player_ids: Sequence[str],
        *,
        with_rank: bool,
        now: datetime,
    ) -> list[GroupMember]:
        asked = BoardAsk(board, definition, now)
        return await group_board(self._stores, self._ranking, asked, player_ids, with_rank)

    async def standings(
        self,
        player_id: str,
        *,
        now: datetime,
        limit: int = MAX_STANDINGS,
        cursor: str | None = None,
    ) -> StandingsPage:
        return await player_standings(
            self._stores,
            self._policy,
            self._ranking,
            self._definitions,
            player_id,
            PageAsk(limit, cursor, now),
        )

    async def snapshots(self, board: Board) -> list[SnapshotSummary]:
        return await list_snapshots(snapshots=self._stores.snapshots, board=board)

    async def snapshot(self, board: Board, taken_at: str) -> Snapshot:
        return await get_snapshot(stores=self._stores, board=board, taken_at=taken_at)


__all__ = [
    "MAX_GROUP",
    "MAX_GROUP_RANKED",
    "MAX_LISTED_VARIANTS",
    "MAX_STANDINGS",
    "STANDINGS_QUERIES_PER_PAGE",
    "STANDINGS_ROWS_PER_QUERY",
    "Around",
    "BoardListing",
    "BoardPage",
    "BoardReads",
    "CohortRank",
    "GroupMember",
    "Neighbour",
    "PlayerRank",
    "RankedEntry",
    "StandingsPage",
]
