"""Sharded boards in memory: the partition ids, a rank summed over partitions against brute force,
and a page merged from partitions against the board sorted whole."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.buckets import BucketLayout
from app.domain.keys import Order, RankKey
from app.domain.models import Entry, Page
from app.domain.periods import Board, Period, PeriodKind
from app.domain.ranks import ExactRank, RankQuery
from app.domain.shards import (
    SHARD_COUNTS,
    board_of_partition,
    check_shards,
    is_shard_partition,
    partition_ids,
    player_partition,
    shard_of,
)
from app.domain.ties import TieCounts
from app.services.ports import IndexedKey, SlotAddress, StoredTies
from app.services.ranking.pages import merged_page, shard_page_limit
from app.services.ranking.ranks import rank_many
from tests.fakes import MemoryIndex
from tests.support import utc_board

LAYOUT = BucketLayout(coarse=8, fine=3)
BOARD = "trivia#live#alltime"


def test_a_player_always_lands_on_the_same_shard_and_the_shards_share_the_players() -> None:
    players = [f"player-{i}" for i in range(16_000)]
    first = [shard_of(p, 16) for p in players]
    assert first == [shard_of(p, 16) for p in players]
    spread = Counter(first)
    assert set(spread) == set(range(16))
    assert max(spread.values()) < 1.15 * 1000
    assert min(spread.values()) > 0.85 * 1000
    assert {shard_of(p, 1) for p in players} == {0}


@pytest.mark.parametrize(
    "period",
    [
        Period(PeriodKind.ALLTIME),
        Period(PeriodKind.DAY, "2026-12-03"),
        Period(PeriodKind.WEEK, "2026-W49"),
        Period(PeriodKind.MONTH, "2026-12"),
    ],
)
def test_a_partition_id_names_its_board_and_no_board_id_is_one(period: Period) -> None:
    board_id = Board("trivia", "live", period).board_id
    assert not is_shard_partition(board_id)
    assert board_of_partition(board_id) == board_id
    assert partition_ids(board_id, 1) == [board_id]
    ids = partition_ids(board_id, 8)
    assert len(set(ids)) == 8
    assert all(is_shard_partition(p) and board_of_partition(p) == board_id for p in ids)
    assert player_partition(board_id, "ana", 8) == ids[shard_of("ana", 8)]


@pytest.mark.parametrize("shards", [0, 3, 128, -2])
def test_only_powers_of_two_up_to_64_are_shard_counts(shards: int) -> None:
    with pytest.raises(ValueError, match="shards must be"):
        check_shards(shards)
    assert [check_shards(k) for k in SHARD_COUNTS] == list(SHARD_COUNTS)


class ShardedIndex:
    """A sharded board in memory: one ``MemoryIndex`` per partition, each read by its id."""

    def __init__(self, keys: list[RankKey], shards: int) -> None:
        self.parts = {
            pid: MemoryIndex(
                LAYOUT, [k for k in keys if player_partition(BOARD, k.player_id, shards) == pid]
            )
            for pid in partition_ids(BOARD, shards)
        }
        self.keys = sorted(keys, key=lambda k: k.order)
        self.queries: list[str] = []

    def true_rank(self, key: RankKey) -> int:
        return 1 + sum(1 for k in self.keys if k.order < key.order and k.player_id != key.player_id)

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        return await self.parts[board_id].coarse_counts(board_id)

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
        return await self.parts[board_id].fine_counts(board_id, bucket, first, last)

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        return await self.parts[board_id].count_keys(
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
        return await self.parts[slot[0]].tie_counts(slot, b_prefix, c_prefix=c_prefix)

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None

    # ---- the index's page reads (``BoardIndex``) ----------------------------------------------

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page:
        self.queries.append(board_id)
        found = [k for k in self.parts[board_id].keys if start is None or k.encode() > start[0]][
            : limit + 1
        ]
        entries = [Entry(k) for k in found[:limit]]
        more = len(found) > limit
        last = entries[-1].key if entries else None
        return Page(entries, (last.encode(), last.player_id) if more and last else None)

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        raise NotImplementedError

    def board_keys(
        self, board_id: str, *, page_size: int, between: tuple[str, str] | None = None
    ) -> AsyncIterator[list[IndexedKey]]:
        raise NotImplementedError


boards = st.tuples(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 5)), min_size=1, max_size=60),
    st.sampled_from(Order),
    st.sampled_from([2, 4, 16]),
).map(
    lambda drawn: (
        [RankKey(score, t, f"p{i:02d}", drawn[1]) for i, (score, t) in enumerate(drawn[0])],
        drawn[2],
    )
)


@settings(max_examples=150, deadline=None)
@given(board=boards, cap=st.integers(1, 6), data=st.data())
async def test_a_rank_summed_over_shards_is_exact_when_it_says_so_and_its_range_holds_the_truth(
    board: tuple[list[RankKey], int], cap: int, data: st.DataObject
) -> None:
    keys, shards = board
    index = ShardedIndex(keys, shards)
    key = data.draw(st.sampled_from(keys))
    (rank,) = await rank_many(index, LAYOUT, [RankQuery(BOARD, key, shards=shards)], cap=cap)
    truth = index.true_rank(key)
    if isinstance(rank, ExactRank):
        assert rank.rank == truth
        assert rank.top_percent == round(min(100.0, 100.0 * truth / len(keys)), 2)
    else:
        lo, hi = rank.rank_range
        assert lo <= truth <= hi
        assert lo <= rank.rank_estimate <= hi


async def test_a_big_cap_ranks_every_player_of_a_sharded_board_exactly_in_board_order() -> None:
    keys = [RankKey(score % 9, score, f"p{score}", Order.DESC) for score in range(80)]
    index = ShardedIndex(keys, 8)
    ranks = await rank_many(index, LAYOUT, [RankQuery(BOARD, k, shards=8) for k in keys], cap=1000)
    assert all(isinstance(r, ExactRank) for r in ranks)
    by_rank = sorted(zip((r.rank for r in ranks if isinstance(r, ExactRank)), keys, strict=True))
    assert [k.player_id for _, k in by_rank] == [k.player_id for k in index.keys]


async def test_a_new_player_s_rank_on_a_sharded_board_counts_them_in() -> None:
    keys = [RankKey(10 * i, i, f"p{i}", Order.DESC) for i in range(20)]
    index = ShardedIndex(keys, 4)
    newcomer = RankKey(95, 0, "newcomer", Order.DESC)
    (rank,) = await rank_many(
        index, LAYOUT, [RankQuery(BOARD, newcomer, on_board=False, shards=4)], cap=1000
    )
    assert isinstance(rank, ExactRank)
    assert rank.rank == 1 + sum(1 for k in keys if k.score > 95)
    assert rank.top_percent == round(100.0 * rank.rank / 21, 2)


ONE_SHARD = [p for p in (f"q{i:04d}" for i in range(8000)) if shard_of(p, 64) == 0]
"""Player ids that all land on shard 0 of a board of any shards up to 64."""


@settings(max_examples=150, deadline=None)
@given(board=boards, limit=st.integers(1, 12), crowded=st.integers(0, 60))
async def test_pages_merged_from_shards_walk_the_board_in_order(
    board: tuple[list[RankKey], int], limit: int, crowded: int
) -> None:
    keys, shards = board
    # The first ``crowded`` players all on one shard: more of a page on it than it is asked for.
    keys = [
        RankKey(k.score, k.achieved_at_ms, ONE_SHARD[i], k.order_by) if i < crowded else k
        for i, k in enumerate(keys)
    ]
    index = ShardedIndex(keys, shards)
    walked: list[str] = []
    start: tuple[str, str] | None = None
    for _ in range(len(keys) + 1):
        page = await merged_page(index, BOARD, shards=shards, limit=limit, start=start)
        walked += [e.player_id for e in page.entries]
        start = page.next_start
        if start is None:
            assert len(page.entries) <= limit
            break
        assert len(page.entries) == limit, "every page but the last is full"
    assert walked == [k.player_id for k in index.keys]
    assert len(walked) == len(keys)


def test_a_page_of_a_sharded_board_asks_each_shard_for_a_share_of_it() -> None:
    assert shard_page_limit(25, 1) == 25
    for shards in (2, 4, 16, 64):
        per = shard_page_limit(25, shards)
        assert 25 / shards < per < 25
    assert shard_page_limit(100, 16) <= shard_page_limit(100, 8)


async def test_a_page_held_by_one_shard_reads_it_on_in_a_second_round_trip() -> None:
    keys = [RankKey(100 - i, 0, p, Order.DESC) for i, p in enumerate(ONE_SHARD[:30])]
    keys += [RankKey(1, i, f"p{i:03d}", Order.DESC) for i in range(100)]
    index = ShardedIndex(keys, 16)
    page = await merged_page(index, BOARD, shards=16, limit=25, start=None)
    assert [e.player_id for e in page.entries] == ONE_SHARD[:25]
    # 8 entries asked of each shard, then the 17 the page still lacked of the one that held it.
    assert len(index.queries) == 16 + 1
    assert index.queries[16:] == [partition_ids(BOARD, 16)[0]]


async def test_a_sharded_board_s_first_page_is_one_round_trip_of_one_query_a_shard() -> None:
    keys = [RankKey(1000 - i, i, f"p{i:03d}", Order.DESC) for i in range(400)]
    index = ShardedIndex(keys, 16)
    page = await merged_page(index, BOARD, shards=16, limit=25, start=None)
    assert [e.player_id for e in page.entries] == [k.player_id for k in index.keys[:25]]
    assert sorted(index.queries) == sorted(partition_ids(BOARD, 16))
    assert page.next_start is not None


def test_the_fixtures_board_is_a_real_board_id() -> None:
    assert utc_board(BOARD, now=datetime(2026, 12, 3, tzinfo=UTC)).board_id == BOARD
