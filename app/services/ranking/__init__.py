"""What submissions, reads and operations all use to know where players stand: rank reads, the
hot boards' summary, pages in rank order, counting a board, and crowded slots' tie counters.

``Ranking`` is the per-task part of it that submissions and reads share: the summary of hot
boards a rank is read through, the player counts pages show, and the tie builds a range asks for.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from app.domain.ranks import EstimatedRank, Rank, RankQuery
from app.services.memory import SharedLoads
from app.services.policies import RankingPolicy
from app.services.ports import Stores
from app.services.ranking.pages import player_count
from app.services.ranking.ranks import rank_many
from app.services.ranking.slot_builds import SlotBuilds
from app.services.ranking.summary import HotBoards

MAX_COUNTED_BOARDS = 10_000
"""Boards whose player count a task remembers for their pages."""


class Ranking:
    """A task's ranks: read through its summary of hot boards (``summary``, at most
    ``summary_s`` old), exact or an honest range; a range in a crowded slot asks ``builds`` for
    that slot's tie counters."""

    def __init__(self, stores: Stores, policy: RankingPolicy) -> None:
        self._stores = stores
        self.policy = policy
        self.summary = HotBoards(
            stores.ranks, policy.layout, ttl_s=policy.summary_s, ties=stores.counters
        )
        self.builds = SlotBuilds(stores, policy)
        self._counts: SharedLoads[str, int] = SharedLoads(
            max_entries=MAX_COUNTED_BOARDS, ttl_s=policy.player_count_s, clock=time.monotonic
        )

    async def rank_many(self, queries: Sequence[RankQuery]) -> list[Rank]:
        return await rank_many(self.summary, self.policy.layout, queries, cap=self.policy.cap)

    async def rank_of(self, query: RankQuery) -> Rank:
        (rank,) = await self.rank_many([query])
        return rank

    def build_if_crowded(
        self, partition: str, query: RankQuery, rank: Rank, *, expires_at: int | None
    ) -> None:
        """A range: have the task build (or repair) the slot's tie counters, in the background
        (``SlotBuilds``, which first makes sure there is something to do). ``partition``: where
        the player's row is (a sharded board's partition: its slot is built there)."""
        if isinstance(rank, EstimatedRank):
            self.builds.wanted(partition, query.key, expires_at=expires_at)

    async def player_count(self, board_id: str, shards: int) -> int:
        """A board's players for its pages: a sharded board's from the summary, another's from its
        counters, read at most once every ``player_count_s`` per task (a display figure)."""
        if shards > 1:
            return await self.summary.player_count(board_id, shards)
        return await self._counts.get(
            board_id, lambda: player_count(self._stores.counters, board_id, shards)
        )

    async def close(self) -> None:
        """Stop the tie builds under way."""
        await self.builds.close()
