"""The public reads as the service holds them: which boards there are, a board's top, a player's
rank and the players around them, a group's board, a player's standings, and a board's
snapshots, over their ports, the read policy and the process's memory of counts and boards."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.services.policies import ReadPolicy
from app.services.ports import (
    BoardIndex,
    BoardRegistry,
    CounterStore,
    RankReader,
    Snapshot,
    SnapshotStore,
    SnapshotSummary,
    StandingStore,
)
from app.services.ranking.pages import BoardPage, PlayerCounts, read_board
from app.services.ranking.slot_builds import SlotBuilds
from app.services.ranking.summary import HotBoards
from app.services.reads._listing import MAX_LISTED_VARIANTS, BoardListing, live_boards
from app.services.reads._players import (
    MAX_GROUP,
    MAX_GROUP_RANKED,
    MAX_STANDINGS,
    STANDINGS_QUERIES_PER_PAGE,
    STANDINGS_ROWS_PER_QUERY,
    Around,
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
from app.services.registry import RegisteredBoards
from app.services.rules.held import Definitions


class BoardReads:
    """Every read takes the board and the ``definition`` it follows (``BoardRules.for_reading``:
    the caller resolves it first, so an undefined variant is refused before anything is read)."""

    def __init__(
        self,
        *,
        index: BoardIndex,
        counters: CounterStore,
        standings: StandingStore,
        ranks: RankReader,
        hot: HotBoards | None = None,
        registry: BoardRegistry,
        snapshots: SnapshotStore,
        definitions: Definitions,
        player_counts: PlayerCounts,
        registered: RegisteredBoards,
        slot_builds: SlotBuilds,
        policy: ReadPolicy,
    ) -> None:
        self._index = index
        self._counters = counters
        self._standings = standings
        self._ranks = ranks
        self._hot = hot
        self._registry = registry
        self._snapshots = snapshots
        self._definitions = definitions
        self._player_counts = player_counts
        self._registered = registered
        self._slot_builds = slot_builds
        self._policy = policy

    async def boards(
        self, *, now: datetime, limit: int = MAX_LISTED_VARIANTS, cursor: str | None = None
    ) -> BoardListing:
        """A page of the games and variants that have boards, and each one's live periods."""
        return await live_boards(
            registry=self._registry,
            cache=self._registered,
            now=now,
            definitions=self._definitions,
            cursor_secret=self._policy.cursor_secret,
            limit=limit,
            cursor=cursor,
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
        return await read_board(
            index=self._index,
            counters=self._counters,
            player_counts=self._player_counts,
            policy=self._policy,
            board=board,
            retention=definition.retention,
            limit=limit,
            cursor=cursor,
            now=now,
            shards=definition.shards,
            hot=self._hot,
        )

    async def rank(
        self, board: Board, definition: BoardDefinition, player_id: str, *, now: datetime
    ) -> PlayerRank:
        return await player_rank(
            standings=self._standings,
            ranks=self._ranks,
            policy=self._policy,
            board=board,
            definition=definition,
            player_id=player_id,
            now=now,
            builds=self._slot_builds,
        )

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
        return await around_player(
            standings=self._standings,
            index=self._index,
            ranks=self._ranks,
            policy=self._policy,
            board=board,
            definition=definition,
            player_id=player_id,
            before=before,
            after=after,
            now=now,
            builds=self._slot_builds,
        )

    async def group(
        self,
        board: Board,
        definition: BoardDefinition,
        player_ids: Sequence[str],
        *,
        with_rank: bool,
        now: datetime,
    ) -> list[GroupMember]:
        return await group_board(
            standings=self._standings,
            ranks=self._ranks,
            policy=self._policy,
            board=board,
            definition=definition,
            player_ids=player_ids,
            with_rank=with_rank,
            now=now,
        )

    async def standings(
        self,
        player_id: str,
        *,
        now: datetime,
        limit: int = MAX_STANDINGS,
        cursor: str | None = None,
    ) -> StandingsPage:
        return await player_standings(
            standings=self._standings,
            ranks=self._ranks,
            policy=self._policy,
            definitions=self._definitions,
            player_id=player_id,
            now=now,
            limit=limit,
            cursor=cursor,
        )

    async def snapshots(self, board: Board) -> list[SnapshotSummary]:
        return await list_snapshots(snapshots=self._snapshots, board=board)

    async def snapshot(self, board: Board, taken_at: str) -> Snapshot:
        return await get_snapshot(snapshots=self._snapshots, board=board, taken_at=taken_at)


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
    "GroupMember",
    "Neighbour",
    "PlayerRank",
    "StandingsPage",
]
