"""A task's summary of a hot board (``HotBoards``) in memory: what it reads once and what every
rank still reads live, that its answers are exact as of its moment, and its top page."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Coroutine, Mapping
from datetime import UTC, datetime, timedelta

from app.domain.keys import Order, RankKey
from app.domain.models import Page
from app.domain.ranks import EstimatedRank, ExactRank, RankQuery
from app.domain.shards import partition_ids, player_partition
from app.domain.ties import TieCounts, choose_grain, mark_of, tie_counts, tie_group
from app.services.ports import SlotAddress, StoredTies
from app.services.ranking.pages import merged_page
from app.services.ranking.ranks import rank_many, rank_of
from app.services.ranking.summary import HotBoards
from tests.fakes import MemoryIndex
from tests.unit.test_shards import BOARD, LAYOUT, ShardedIndex

SHARDS = 16


class Counted:
    """The live reads under a summary: a ``ShardedIndex`` (swapped for another to move players),
    each call counted by what it read and of which partition."""

    def __init__(self, index: ShardedIndex) -> None:
        self.index = index
        self.calls: Counter[tuple[str, str]] = Counter()

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        self.calls["coarse", board_id] += 1
        return await self.index.coarse_counts(board_id)

    async def fine_counts(
        self,
        board_id: str,
        bucket: int,
        first: int,
        last: int,
        *,
        consistent: bool = False,
        recent: bool = False,
    ) -> Mapping[int, int]:
        self.calls["fine", board_id] += 1
        return await self.index.fine_counts(board_id, bucket, first, last)

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        self.calls["count", board_id] += 1
        return await self.index.count_keys(
            board_id, low, high, limit=limit, exclude_player=exclude_player
        )

    async def tie_counts(
        self,
        slot: SlotAddress,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
        recent: bool = False,
    ) -> TieCounts:
        self.calls["tie", slot[0]] += 1
        return await self.index.tie_counts(slot, b_prefix, c_prefix=c_prefix)

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def of(self, kind: str) -> int:
        return sum(n for (k, _), n in self.calls.items() if k == kind)


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def board(n: int = 200) -> list[RankKey]:
    return [RankKey((i * 37) % 500, i, f"p{i:03d}", Order.DESC) for i in range(n)]


def query(key: RankKey) -> RankQuery:
    return RankQuery(BOARD, key, shards=SHARDS)


async def test_ranks_on_a_warm_summary_are_exact_and_read_one_count_on_every_other_shard() -> None:
    keys = board()
    live = Counted(ShardedIndex(keys, SHARDS))
    hot = HotBoards(live, LAYOUT, ttl_s=1.0, clock=Clock())
    asked = keys[:50]
    ranks = await asyncio.gather(*(rank_of(hot, LAYOUT, query(k), cap=1000) for k in asked))
    for key, rank in zip(asked, ranks, strict=True):
        assert isinstance(rank, ExactRank)
        assert rank.rank == live.index.true_rank(key)
    # Every partition's coarse counts loaded once for the summary (every one is another
    # player's), and once more for each rank on the asking player's own partition, live.
    assert live.of("coarse") == SHARDS + len(asked)
    # A COUNT of the index on every partition for every rank: those are never summarized.
    assert live.of("count") == SHARDS * len(asked)

    live.calls.clear()
    (again,) = await rank_many(hot, LAYOUT, [query(asked[0])], cap=1000)
    assert again == ranks[0]
    own = player_partition(BOARD, asked[0].player_id, SHARDS)
    assert live.calls["coarse", own] == 1
    assert live.of("coarse") == 1, "the other shards' counts come from the summary"
    assert live.of("count") == SHARDS


async def test_an_answer_is_exact_as_of_the_summary_s_moment_and_the_player_s_own_move_is_in_it() -> (
    None
):
    keys = board()
    me = sorted(keys, key=lambda k: k.order)[20]
    mine = player_partition(BOARD, me.player_id, SHARDS)
    # Another player, on another shard, far behind the asking player.
    other = next(
        k
        for k in keys
        if k.score < me.score - 50 and player_partition(BOARD, k.player_id, SHARDS) != mine
    )
    live = Counted(ShardedIndex(keys, SHARDS))
    clock = Clock()
    hot = HotBoards(live, LAYOUT, ttl_s=1.0, clock=clock)
    before = await rank_of(hot, LAYOUT, query(me), cap=1000)
    assert isinstance(before, ExactRank)

    # They jump past the asking player a moment later, into another bucket: the summary does
    # not show it yet (the answer is as it was, exact as of the summary's moment) ...
    jumped = RankKey(10**6, other.achieved_at_ms, other.player_id, Order.DESC)
    assert LAYOUT.slot_of(jumped.score) != LAYOUT.slot_of(me.score)
    live.index = ShardedIndex([jumped if k == other else k for k in keys], SHARDS)
    clock.t = 0.5
    assert await rank_of(hot, LAYOUT, query(me), cap=1000) == before
    # ... while the asking player's own shard is read live: their own move is in every answer.
    improved = RankKey(2 * 10**6, me.achieved_at_ms, me.player_id, Order.DESC)
    live.index = ShardedIndex(
        [improved if k == me else jumped if k == other else k for k in keys], SHARDS
    )
    mine_now = await rank_of(hot, LAYOUT, query(improved), cap=1000)
    assert isinstance(mine_now, ExactRank)
    assert mine_now.rank == live.index.true_rank(improved)

    # A second on, the summary is read again and shows the other player's move.
    live.index = ShardedIndex([jumped if k == other else k for k in keys], SHARDS)
    clock.t = 1.0
    after = await rank_of(hot, LAYOUT, query(me), cap=1000)
    assert isinstance(after, ExactRank)
    assert after.rank == before.rank + 1 == live.index.true_rank(me)


async def test_with_no_summary_every_rank_reads_every_shard_s_counters() -> None:
    keys = board()
    live = Counted(ShardedIndex(keys, SHARDS))
    hot = HotBoards(live, LAYOUT, ttl_s=0, clock=Clock())
    ranks = await asyncio.gather(*(rank_of(hot, LAYOUT, query(k), cap=1000) for k in keys[:10]))
    assert [r.rank for r in ranks if isinstance(r, ExactRank)] == [
        live.index.true_rank(k) for k in keys[:10]
    ]
    assert live.of("coarse") == SHARDS * 10


async def test_the_player_count_is_every_shard_s_summed_and_read_once_a_second() -> None:
    keys = board()
    live = Counted(ShardedIndex(keys, SHARDS))
    clock = Clock()
    hot = HotBoards(live, LAYOUT, ttl_s=1.0, clock=clock)
    counts = await asyncio.gather(*(hot.player_count(BOARD, SHARDS) for _ in range(20)))
    assert counts == [len(keys)] * 20
    assert live.of("coarse") == SHARDS
    clock.t = 1.0
    assert await hot.player_count(BOARD, SHARDS) == len(keys)
    assert live.of("coarse") == 2 * SHARDS


async def test_the_top_is_read_once_a_second_and_any_page_of_it_is_cut_from_it() -> None:
    keys = board()
    index = ShardedIndex(keys, SHARDS)
    clock = Clock()
    moments = iter(datetime(2026, 12, 3, 20, 0, s, tzinfo=UTC) for s in range(10))
    hot = HotBoards(index, LAYOUT, ttl_s=1.0, clock=clock, wall=lambda: next(moments))

    def read() -> Coroutine[object, object, Page]:
        return merged_page(index, BOARD, shards=SHARDS, limit=100, start=None)

    tops = await asyncio.gather(*(hot.top(BOARD, SHARDS, read) for _ in range(5)))
    assert len({id(t) for t in tops}) == 1, "one read, shared"
    assert len(index.queries) == SHARDS
    top = tops[0]
    best = [k.player_id for k in index.keys]
    for limit in (1, 25, 100):
        page = top.first(limit)
        assert [e.player_id for e in page.entries] == best[:limit]
        last = index.keys[limit - 1]
        assert page.next_start == (last.encode(), last.player_id)
    clock.t = 1.0
    later = await hot.top(BOARD, SHARDS, read)
    assert later.read_at - top.read_at == timedelta(seconds=1)
    assert len(index.queries) == 2 * SHARDS


async def test_the_first_page_of_a_short_board_says_there_is_no_more() -> None:
    keys = board(30)
    index = ShardedIndex(keys, SHARDS)
    hot = HotBoards(index, LAYOUT, ttl_s=1.0, clock=Clock())
    top = await hot.top(
        BOARD, SHARDS, lambda: merged_page(index, BOARD, shards=SHARDS, limit=100, start=None)
    )
    assert [e.player_id for e in top.first(30).entries] == [k.player_id for k in index.keys]
    assert top.first(30).next_start is None
    assert top.first(29).next_start is not None


CAP = 6


def crowded_board(players: int) -> tuple[list[RankKey], dict[str, MemoryIndex]]:
    """``players`` on one score, a millisecond apart: one slot crowded on every shard, each
    shard's slot with the tie grain a build would give it for a cap of ``CAP``."""
    keys = [RankKey(50, 1_000 + i, f"c{i:04d}", Order.DESC) for i in range(players)]
    slot = LAYOUT.slot_of(50)
    parts = {}
    for pid in partition_ids(BOARD, SHARDS):
        mine = [k for k in keys if player_partition(BOARD, k.player_id, SHARDS) == pid]
        grain = choose_grain(mine, group=tie_group(CAP))
        parts[pid] = MemoryIndex(LAYOUT, mine, pid, grains={slot: grain})
    return keys, parts


class CrowdedShards(Counted):
    """Counted reads of shards whose crowded slot has tie counters, and those counters read whole
    (``read_ties``), as the summary reads them."""

    def __init__(self, keys: list[RankKey], parts: dict[str, MemoryIndex]) -> None:
        super().__init__(ShardedIndex(keys, SHARDS))
        self.index.parts = parts

    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        self.calls["read_ties", board_id] += 1
        part = self.index.parts[board_id]
        grain = part.grains[(bucket, slot)]
        in_slot = [k for k in part.keys if LAYOUT.slot_of(k.score) == (bucket, slot)]
        marks = [mark_of(k, grain, {}) for k in in_slot]
        return StoredTies(grain, tie_counts(in_slot, marks), sealed=True)


def crowded_query(key: RankKey, parts: dict[str, MemoryIndex]) -> RankQuery:
    own = parts[player_partition(BOARD, key.player_id, SHARDS)]
    grain = own.grains[LAYOUT.slot_of(key.score)]
    return RankQuery(BOARD, key, tie_mark=mark_of(key, grain, {}), shards=SHARDS)


async def test_a_rank_in_a_slot_crowded_on_every_shard_is_exact_through_their_tie_counters() -> (
    None
):
    keys, parts = crowded_board(400)
    live = CrowdedShards(keys, parts)
    hot = HotBoards(live, LAYOUT, ttl_s=1.0, clock=Clock(), ties=live)
    without = HotBoards(live, LAYOUT, ttl_s=1.0, clock=Clock())
    for key in keys[150:160]:
        truth = live.index.true_rank(key)
        blind = await rank_of(without, LAYOUT, crowded_query(key, parts), cap=CAP)
        assert isinstance(blind, EstimatedRank), "each other shard's slot is past the cap"
        assert blind.rank_range[0] <= truth <= blind.rank_range[1]
        rank = await rank_of(hot, LAYOUT, crowded_query(key, parts), cap=CAP)
        assert isinstance(rank, ExactRank)
        assert rank.rank == truth
    # Each other shard's slot is read whole once, into the summary; later ranks find it there.
    assert 0 < live.of("read_ties") <= SHARDS
    assert all(n == 1 for (kind, _), n in live.calls.items() if kind == "read_ties")
