"""Tie counters against brute force on small, crowded boards (scores from a handful of values,
many players per score, some on the same millisecond): with a slot's tie counters, a rank is exact
where the COUNT alone would stop at the cap; every range still holds the truth; and where the tie
counts do not add up (a row from before the build) the answer is the slot's honest range."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.buckets import BucketLayout
from app.domain.keys import Order, RankKey
from app.domain.ranks import EstimatedRank, ExactRank, RankQuery
from app.domain.ties import (
    MAX_GRAIN,
    TiePlace,
    choose_cut,
    choose_cuts,
    choose_grain,
    mark_of,
    tie_counts,
)
from app.services.ranking.ranks import rank_of
from tests.fakes import MemoryIndex

LAYOUT = BucketLayout(coarse=8, fine=3)
CAP = 3

crowded = st.tuples(
    st.lists(
        st.tuples(st.sampled_from([0, 7, 7, 7, 30]), st.integers(0, 4000), st.booleans()),
        min_size=1,
        max_size=40,
    ),
    st.sampled_from(Order),
).map(
    lambda drawn: [
        # A third of the rounds end on one moment (the same millisecond).
        RankKey(score, 5000 if same else t, f"p{i:02d}", drawn[1])
        for i, (score, t, same) in enumerate(drawn[0])
    ]
)


Slot = tuple[int, int]


def _grains(keys: list[RankKey], group: int) -> dict[Slot, int]:
    slots: dict[Slot, list[RankKey]] = {}
    for key in keys:
        slots.setdefault(LAYOUT.slot_of(key.score), []).append(key)
    return {slot: choose_grain(ks, group=group) for slot, ks in slots.items() if len(ks) > group}


def _cuts(keys: list[RankKey], grains: dict[Slot, int], group: int) -> dict[Slot, dict[str, int]]:
    """Every crowded slot's cuts, as a build gives them: each chunk still over ``group``."""
    return {
        slot: choose_cuts(
            [k for k in keys if LAYOUT.slot_of(k.score) == slot], grain, group=group, cuts={}
        )
        for slot, grain in grains.items()
    }


def _mark(key: RankKey, grains: dict[Slot, int], cuts: dict[Slot, dict[str, int]]) -> int | None:
    slot = LAYOUT.slot_of(key.score)
    grain = grains.get(slot)
    return None if grain is None else mark_of(key, grain, cuts[slot])


@settings(max_examples=300, deadline=None)
@given(keys=crowded, data=st.data())
async def test_ranks_with_tie_counters_match_brute_force(
    keys: list[RankKey], data: st.DataObject
) -> None:
    group = max(1, CAP // 2)
    grains = _grains(keys, group=group)
    cut = data.draw(st.booleans())  # chunks of one moment cut (by player), or not
    cuts = _cuts(keys, grains, group) if cut else {slot: {} for slot in grains}
    index = MemoryIndex(LAYOUT, keys, grains=grains, cuts=cuts)
    key = data.draw(st.sampled_from(keys))
    mark = _mark(key, grains, cuts)
    rank = await rank_of(index, LAYOUT, RankQuery("b", key, tie_mark=mark), cap=CAP)
    truth = index.true_rank(key)
    if isinstance(rank, ExactRank):
        assert rank.rank == truth
    else:
        lo, hi = rank.rank_range
        assert lo <= truth <= hi
    # Exact whenever the key's own finest chunk holds no more than the cap ahead of it: always,
    # where the chunks are cut.
    if mark is not None:
        low = TiePlace.of(key, mark).chunk_start
        in_chunk = [k for k in keys if low <= k.encode() < key.encode()]
        if len(in_chunk) < CAP:
            assert isinstance(rank, ExactRank)
        if cut:
            assert isinstance(rank, ExactRank)


@settings(max_examples=200, deadline=None)
@given(keys=crowded, data=st.data())
async def test_a_row_left_out_of_the_tie_counts_gives_the_slot_s_range(
    keys: list[RankKey], data: st.DataObject
) -> None:
    grains = _grains(keys, group=1)
    if not grains:
        return
    (slot, grain), *_ = grains.items()
    in_slot = [k for k in keys if LAYOUT.slot_of(k.score) == slot]
    left_out = data.draw(st.sampled_from(in_slot))
    index = MemoryIndex(LAYOUT, keys, grains=grains, uncounted=frozenset({left_out.player_id}))
    key = data.draw(st.sampled_from(in_slot))
    rank = await rank_of(index, LAYOUT, RankQuery("b", key, tie_mark=grain), cap=CAP)
    assert isinstance(rank, EstimatedRank)
    lo, hi = rank.rank_range
    assert lo <= index.true_rank(key) <= hi
    # The whole slot: nothing better is known; read eventually, one place more, in case the
    # counters do not show the player's own move into it yet.
    assert len(in_slot) <= hi - lo + 1 <= len(in_slot) + 1


@settings(max_examples=200, deadline=None)
@given(keys=crowded, data=st.data())
async def test_the_rank_before_and_after_a_move_inside_a_crowded_slot(
    keys: list[RankKey], data: st.DataObject
) -> None:
    """A submission asks for its rank after the move while the counters still hold the player at
    the old key (``counted_at``), and for the rank before at the old key."""
    grains = _grains(keys, group=1)
    cuts = _cuts(keys, grains, 1) if data.draw(st.booleans()) else {slot: {} for slot in grains}
    old = data.draw(st.sampled_from(keys))
    moved = RankKey(old.score, data.draw(st.integers(0, 4000)), old.player_id, old.order_by)
    before_board = MemoryIndex(LAYOUT, keys, grains=grains, cuts=cuts)
    after_board = MemoryIndex(
        LAYOUT, [moved if k == old else k for k in keys], grains=grains, cuts=cuts
    )
    grain = _mark(old, grains, cuts)
    after = await rank_of(
        before_board,
        LAYOUT,
        RankQuery(
            "b", moved, counted_at=old, tie_mark=_mark(moved, grains, cuts), counted_mark=grain
        ),
        cap=CAP,
    )
    truth = after_board.true_rank(moved)
    if isinstance(after, ExactRank):
        assert after.rank == truth
    else:
        assert after.rank_range[0] <= truth <= after.rank_range[1]
    before = await rank_of(before_board, LAYOUT, RankQuery("b", old, tie_mark=grain), cap=CAP)
    if isinstance(before, ExactRank):
        assert before.rank == before_board.true_rank(old)


def test_the_grain_is_the_largest_that_keeps_every_group_small() -> None:
    keys = [RankKey(7, t, f"p{t}") for t in range(0, 64_000, 1000)]  # 64 players, 1 s apart
    grain = choose_grain(keys, group=4)
    sizes: dict[int, int] = {}
    for key in keys:
        sizes[key.achieved_at_ms >> grain] = sizes.get(key.achieved_at_ms >> grain, 0) + 1
    assert max(sizes.values()) <= 4
    coarser: dict[int, int] = {}
    for key in keys:
        coarser[key.achieved_at_ms >> (grain + 1)] = (
            coarser.get(key.achieved_at_ms >> (grain + 1), 0) + 1
        )
    assert max(coarser.values()) > 4
    same_moment = [RankKey(7, 5000, f"p{i}") for i in range(10)]
    assert choose_grain(same_moment, group=4) == 0  # nothing splits one millisecond
    assert choose_grain(keys[:3], group=4) == MAX_GRAIN


def test_counts_follow_board_order_in_either_order() -> None:
    for order in Order:
        keys = [RankKey(s, t, f"p{s}{t}", order) for s in (3, 9) for t in (10, 5000, 90_000)]
        counts = tie_counts(keys, [10] * len(keys))
        a = {k: n for k, n in counts.items() if k.startswith("A#")}
        b = {k: n for k, n in counts.items() if k.startswith("B#")}
        assert sum(a.values()) == sum(b.values()) == len(keys)
        ranked = sorted(keys, key=lambda k: k.order)
        places = [TiePlace.of(k, 10) for k in ranked]
        assert [p.b_sort_key for p in places] == sorted(p.b_sort_key for p in places)
        assert [p.a_sort_key for p in places] == sorted(p.a_sort_key for p in places)


def test_a_crowded_moment_is_cut_by_player_in_board_order() -> None:
    """Twenty players on one score and one millisecond, ids sharing a long prefix: the cut is the
    least length that leaves no group over the limit, and its groups follow board order."""
    for order in Order:
        keys = [RankKey(500, 5000, f"player-{i:04d}", order) for i in range(20)]
        length = choose_cut(keys, group=2)
        groups: dict[str, int] = {}
        for key in keys:
            place = TiePlace.of(key, mark_of(key, 0, {TiePlace.of(key, 0).b_sort_key: length}))
            assert place.c_sort_key is not None
            groups[place.c_sort_key] = groups.get(place.c_sort_key, 0) + 1
        assert max(groups.values()) <= 2
        shorter = {f"{k.achieved_at_ms:013d}#{k.player_id}"[: length - 1] for k in keys}
        assert len(shorter) < len(keys) / 2  # one character less leaves a group over 2
        ranked = sorted(keys, key=lambda k: k.order)
        places = [
            TiePlace.of(k, mark_of(k, 0, choose_cuts(keys, 0, group=2, cuts={}))) for k in ranked
        ]
        assert [p.c_sort_key for p in places] == sorted(str(p.c_sort_key) for p in places)
        assert all(p.chunk_start <= k.encode() for p, k in zip(places, ranked, strict=True))
