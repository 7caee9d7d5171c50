"""The rank code against brute force on small boards, where higher is better and where lower is:
exact when it says so, and every range contains the truth, including the rank before an
improvement asked for after it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.buckets import BucketLayout
from app.domain.definitions import BoardDefinition, Operator
from app.domain.keys import Order, RankKey
from app.domain.ranks import EstimatedRank, ExactRank, RankQuery, rank_from_counts
from app.domain.ties import TieCounts
from app.services.ports import SlotAddress, StoredTies
from app.services.ranking.ranks import rank_many, rank_of
from tests.fakes import MemoryIndex

LAYOUT = BucketLayout(coarse=8, fine=3)  # coarse enough that small boards crowd the buckets

boards = st.tuples(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 5)), min_size=1, max_size=40),
    st.sampled_from(Order),
).map(
    lambda drawn: [
        RankKey(score, t, f"p{i:02d}", drawn[1]) for i, (score, t) in enumerate(drawn[0])
    ]
)


@settings(max_examples=200, deadline=None)
@given(keys=boards, cap=st.integers(1, 6), data=st.data())
async def test_rank_matches_brute_force(keys: list[RankKey], cap: int, data: st.DataObject) -> None:
    index = MemoryIndex(LAYOUT, keys)
    key = data.draw(st.sampled_from(keys))
    truth = index.true_rank(key)
    rank = await rank_of(index, LAYOUT, RankQuery("b", key), cap=cap)
    if isinstance(rank, ExactRank):
        assert rank.rank == truth
    else:
        lo, hi = rank.rank_range
        assert lo <= truth <= hi
        assert lo <= rank.rank_estimate <= hi


def _improved(old: RankKey, step: int) -> RankKey:
    """``old``'s player ``step`` better (higher where higher is better, lower where lower is),
    reached a moment earlier."""
    score = old.score + step if old.order_by is Order.DESC else max(0, old.score - step)
    return RankKey(score, max(0, old.achieved_at_ms - 1), old.player_id, old.order_by)


@settings(max_examples=200, deadline=None)
@given(keys=boards, cap=st.integers(1, 6), data=st.data())
async def test_rank_before_an_improvement(
    keys: list[RankKey], cap: int, data: st.DataObject
) -> None:
    old = data.draw(st.sampled_from(keys))
    better = _improved(old, data.draw(st.integers(1, 30)))
    before_board = MemoryIndex(LAYOUT, keys)
    after_board = MemoryIndex(LAYOUT, [better if k == old else k for k in keys])
    truth = before_board.true_rank(old)
    rank = await rank_of(after_board, LAYOUT, RankQuery("b", old, counted_at=better), cap=cap)
    if isinstance(rank, ExactRank):
        assert rank.rank == truth
    else:
        assert rank.rank_range[0] <= truth <= rank.rank_range[1]


@pytest.mark.parametrize("order", list(Order))
def test_a_big_cap_gives_exact_ranks_everywhere(order: Order) -> None:
    keys = [RankKey(score % 7, score, f"p{score}", order) for score in range(50)]
    index = MemoryIndex(LAYOUT, keys)

    async def all_ranks() -> list[int]:
        out = []
        for key in keys:
            rank = await rank_of(index, LAYOUT, RankQuery("b", key), cap=1000)
            assert isinstance(rank, ExactRank)
            out.append(rank.rank)
        return out

    ranks = asyncio.run(all_ranks())
    assert sorted(ranks) == list(range(1, 51))
    assert [k.player_id for _, k in sorted(zip(ranks, keys, strict=True))] == [
        k.player_id for k in sorted(keys, key=lambda k: k.order)
    ]


def test_estimates_never_claim_a_rank() -> None:
    rank = rank_from_counts(
        ahead_in_higher_buckets=10,
        ahead_in_bucket=5,
        bucket_capped=True,
        bucket_size=20,
        player_count=100,
    )
    assert isinstance(rank, EstimatedRank)
    assert rank.rank_range == (16, 30)
    assert rank.top_percent_range == (16.0, 30.0)


@pytest.mark.parametrize(
    ("operator", "order", "falls"),
    [
        (Operator.BEST, Order.DESC, False),
        (Operator.BEST, Order.ASC, False),
        (Operator.SUM, Order.DESC, False),
        (Operator.SUM, Order.ASC, True),
        (Operator.LATEST, Order.DESC, True),
        (Operator.LATEST, Order.ASC, True),
    ],
)
def test_a_place_falls_only_where_a_later_submission_can_put_the_player_behind(
    operator: Operator, order: Order, falls: bool
) -> None:
    assert BoardDefinition(order=order, operator=operator).places_fall is falls


async def test_only_the_boards_of_strong_queries_read_their_counters_strongly() -> None:
    keys = [RankKey(score, score, f"p{score}", Order.DESC) for score in range(30)]
    top = keys[-1]  # nothing ahead in its bucket: a best board's query reads the slots ahead
    index = MemoryIndex(LAYOUT, keys, grains={LAYOUT.slot_of(7): 0, LAYOUT.slot_of(top.score): 0})
    await rank_many(
        index,
        LAYOUT,
        [
            RankQuery("latest-board", keys[7], tie_mark=0, consistent=True),
            RankQuery("best-board", top, tie_mark=0),
        ],
        cap=3,
    )
    by_board = {
        board: {(what, consistent) for what, b, consistent in index.counter_reads if b == board}
        for board in ("latest-board", "best-board")
    }
    assert by_board["latest-board"] == {("coarse", True), ("fine", True), ("tie", True)}
    assert by_board["best-board"] == {("coarse", False), ("fine", False), ("tie", False)}


class _ReadsApart:
    """A board just after the asking player's own move, read as separate eventually consistent
    reads can see it: ``fresh`` reads show the move, the others do not yet. Strong reads show it."""

    def __init__(self, before: MemoryIndex, after: MemoryIndex, fresh: set[str]) -> None:
        self.before, self.after, self.fresh = before, after, fresh

    def _seen(self, what: str, consistent: bool) -> MemoryIndex:
        return self.after if consistent or what in self.fresh else self.before

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        return await self._seen("coarse", consistent).coarse_counts(board_id)

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
        return await self._seen("fine", consistent).fine_counts(board_id, bucket, first, last)

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        return await self.after.count_keys(
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
        return await self.after.tie_counts(slot, b_prefix, c_prefix=c_prefix)

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None


@settings(max_examples=300, deadline=None)
@given(
    keys=boards, cap=st.integers(1, 6), fresh=st.sampled_from(["coarse", "fine"]), data=st.data()
)
async def test_a_best_board_read_apart_just_after_the_player_s_move_is_right(
    keys: list[RankKey], cap: int, fresh: str, data: st.DataObject
) -> None:
    old = data.draw(st.sampled_from(keys))
    better = _improved(old, data.draw(st.integers(1, 30)))
    before = MemoryIndex(LAYOUT, keys)
    after = MemoryIndex(LAYOUT, [better if k == old else k for k in keys])
    truth = after.true_rank(better)
    reader = _ReadsApart(before, after, {fresh})
    rank = await rank_of(reader, LAYOUT, RankQuery("b", better), cap=cap)
    if isinstance(rank, ExactRank):
        assert rank.rank == truth
    else:
        assert rank.rank_range[0] <= truth <= rank.rank_range[1]
