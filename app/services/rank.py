"""Where a player stands: the rank of a key on a board, at a cost that does not grow with the board.

The entries ahead of a key are the players in higher coarse buckets, plus those in higher fine
slots of its coarse bucket (both from counter items), plus the entries ahead of it inside its own
fine slot, counted on the index up to the cap. In a crowded slot with tie counters
(``app.domain.ties``), those last are the tie counts of the chunks before the key's, plus a COUNT
inside its own chunk only; where the tie counts do not add up to the slot's counter (being built,
or a row from before), the answer is the slot's honest range. All the reads go out together: one
round trip, and
when several keys are ranked at once (a submission's rank before and after on each board) each
counter is read once. The layout and this read were chosen by simulation: docs/rank-simulation.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from app import telemetry
from app.domain.buckets import BucketLayout
from app.domain.keys import Order, RankKey, key_just_below, score_prefix
from app.domain.ranks import Rank, rank_from_counts
from app.domain.ties import TiePlace
from app.services.ports import RankReader, TieCounts


@dataclass(frozen=True)
class RankQuery:
    """Rank ``key`` on ``board_id``. ``counted_at`` is where the histogram and the index count the
    player now, when that is not ``key`` (the rank before an improvement asked after it, or the rank
    after asked before it); ``on_board`` is false for a player counted nowhere yet (a new player,
    asked before their first write)."""

    board_id: str
    key: RankKey
    counted_at: RankKey | None = None
    on_board: bool = True
    tie_mark: int | None = None
    """Where ``key`` is (or will be) counted in its slot's tie counters, if it is."""
    counted_mark: int | None = None
    """Where ``counted_at`` is counted in its slot's tie counters, if it is."""
    strong: bool = False
    """The player's own place can have moved back a moment ago (``BoardDefinition.places_fall``):
    the counters are read strongly, so they never count the player at a place they left."""


@dataclass(frozen=True)
class _Plan:
    """What one query reads: its slot, the fine slots on the nearer side of it, the COUNT range."""

    query: RankQuery
    bucket: int
    slot: int
    read_ahead: bool
    """The fine slots read are those ahead of the player's (and theirs); else those behind."""
    first: int
    last: int
    low: str
    high: str
    tie: TiePlace | None = None


async def rank_of(reader: RankReader, layout: BucketLayout, query: RankQuery, *, cap: int) -> Rank:
    (rank,) = await rank_many(reader, layout, [query], cap=cap)
    return rank


async def rank_many(
    reader: RankReader, layout: BucketLayout, queries: Sequence[RankQuery], *, cap: int
) -> list[Rank]:
    """The rank of every query, with each board's coarse counters read once, and each bucket's
    fine counters once over the slots the queries on it need (two reads where those are apart)."""
    plans = [_plan(layout, query) for query in queries]
    boards = sorted({p.query.board_id for p in plans})
    spans = _fine_spans(plans)
    strong = {p.query.board_id for p in plans if _strong(p)}
    coarse_reads = [reader.coarse_counts(board, strong=board in strong) for board in boards]
    fine_reads = [
        reader.fine_counts(board, bucket, lo, hi, strong=board in strong)
        for board, bucket, lo, hi in spans
    ]
    count_reads = [
        _nothing_between()
        if p.low > p.high  # the player's key starts their chunk (a cut by player id)
        else reader.count_keys(
            p.query.board_id, p.low, p.high, limit=cap, exclude_player=_excluded(p.query)
        )
        for p in plans
    ]
    tie_reads = [
        _no_ties()
        if p.tie is None
        else reader.tie_counts(
            p.query.board_id,
            p.bucket,
            p.slot,
            p.tie.b_prefix,
            c_prefix=None if p.tie.cut is None else p.tie.c_prefix,
            strong=p.query.board_id in strong,
        )
        for p in plans
    ]
    coarse_found, fine_found, counted, ties = await asyncio.gather(
        asyncio.gather(*coarse_reads),
        asyncio.gather(*fine_reads),
        asyncio.gather(*count_reads),
        asyncio.gather(*tie_reads),
    )
    coarse = dict(zip(boards, coarse_found, strict=True))
    fine = dict(zip(spans, fine_found, strict=True))
    ranks = [
        _rank(layout, p, coarse[p.query.board_id], fine[_span_of(p, spans)], count, tie)
        for p, count, tie in zip(plans, counted, ties, strict=True)
    ]
    for rank in ranks:
        telemetry.rank_answered(rank.kind)
    return ranks


_Span = tuple[str, int, int, int]
"""A fine read: board, bucket, first and last slot."""


def _fine_spans(plans: Sequence[_Plan]) -> list[_Span]:
    """The fine reads the plans need: per bucket, overlapping slot ranges merged into one."""
    spans: list[_Span] = []
    for plan in sorted(plans, key=lambda p: (p.query.board_id, p.bucket, p.first)):
        board, bucket = plan.query.board_id, plan.bucket
        if spans and spans[-1][:2] == (board, bucket) and plan.first <= spans[-1][3] + 1:
            spans[-1] = (board, bucket, spans[-1][2], max(spans[-1][3], plan.last))
        else:
            spans.append((board, bucket, plan.first, plan.last))
    return spans


def _span_of(plan: _Plan, spans: Sequence[_Span]) -> _Span:
    return next(
        span
        for span in spans
        if span[:2] == (plan.query.board_id, plan.bucket) and span[2] <= plan.first <= span[3]
    )


async def _nothing_between() -> tuple[int, bool]:
    return 0, False


async def _no_ties() -> TieCounts | None:
    return None


def _plan(layout: BucketLayout, query: RankQuery) -> _Plan:
    key = query.key
    ascending = key.order_by is Order.ASC
    bucket, slot = layout.fine_of(key.score)
    slot_lo, slot_hi = layout.fine_bounds(bucket, slot)
    slices = layout.slices(bucket)
    # Read only the fine counters on the nearer side of the player's slot (theirs included): the
    # players in the slots ahead are those read, or the bucket's total less those read. Ahead is
    # the higher slots where higher is better, the lower ones where lower is. The total less the
    # slots behind is right only where the coarse and fine reads agree on the player's own last
    # move, which reads apart agree on only when strong (``_strong``): a player on the board whose
    # query is not strong anyway reads behind only where that side is under half the ahead side.
    ahead_slots = slot if ascending else slices - 1 - slot
    behind_slots = slices - 1 - ahead_slots
    if query.on_board and not query.strong:
        read_ahead = ahead_slots <= 2 * behind_slots
    else:
        read_ahead = slot < slices // 2 if ascending else slot >= slices // 2
    reads_up = read_ahead != ascending
    first, last = (slot, slices - 1) if reads_up else (0, slot)
    # The slot's best key comes first on the index: its lowest score where lower is better.
    low = score_prefix(slot_lo if ascending else slot_hi - 1, key.order_by)
    tie = None if query.tie_mark is None else TiePlace.of(key, query.tie_mark)
    if tie is not None:
        low = tie.chunk_start  # the tie counts say how many are ahead of the chunk
    high = key_just_below(key.encode())
    return _Plan(query, bucket, slot, read_ahead, first, last, low, high, tie)


def _strong(plan: _Plan) -> bool:
    """Whether the plan's counters must be read strongly: its player's place can have moved back,
    or it takes the slots ahead as the bucket's total less those behind, which counts a player on
    the board ahead of themselves where one read saw their last move and the other did not yet."""
    return plan.query.strong or (plan.query.on_board and not plan.read_ahead)


def _excluded(query: RankQuery) -> str | None:
    """The player's own index entry is left out of the count whenever they are on the board: where
    the index has them at ``key``, nothing is ahead of it that is theirs anyway; where it has them
    elsewhere (the rank after a move, asked before it; or RankIndex still showing a score since
    replaced, a ``latest`` score that fell, within its lag), they must not count themselves."""
    return query.key.player_id if query.on_board else None


def _ahead(order: Order, place: tuple[int, int], of: tuple[int, int]) -> bool:
    """Whether bucket/slot ``place`` ranks ahead of ``of`` on a board of ``order``."""
    return place < of if order is Order.ASC else place > of


def _rank(
    layout: BucketLayout,
    plan: _Plan,
    coarse: Mapping[int, int],
    fine: Mapping[int, int],
    counted: tuple[int, bool],
    ties: TieCounts | None = None,
) -> Rank:
    query, bucket, slot = plan.query, plan.bucket, plan.slot
    order = query.key.order_by
    ahead_in_slot, capped = counted
    ahead = sum(n for b, n in coarse.items() if _ahead(order, (b, 0), (bucket, 0)))
    in_bucket = [(s, n) for s, n in fine.items() if plan.first <= s <= plan.last]
    if plan.read_ahead:
        ahead += sum(n for s, n in in_bucket if _ahead(order, (bucket, s), (bucket, slot)))
    else:
        ahead += coarse.get(bucket, 0) - sum(n for _, n in in_bucket)
    slot_size = fine.get(slot, 0)
    player_count = sum(coarse.values())
    if not query.on_board:
        # Counted nowhere yet: the player will be in this slot, and on the board.
        slot_size += 1
        player_count += 1
    elif query.counted_at is not None and query.counted_at != query.key:
        # The histogram counts the player where they are now, not at ``key``.
        now = layout.fine_of(query.counted_at.score)
        if _ahead(order, now, (bucket, slot)):
            ahead -= 1
        if now != (bucket, slot):
            slot_size += 1
    # Read eventually, the counters may not show the player's own last move yet, into this slot
    # (and chunk) where they now are: a range reaches one place further, in case they are not in it.
    unseen = int(query.on_board and not _strong(plan) and query.counted_at in (None, query.key))
    slot_size += unseen
    if plan.tie is not None and ties is not None:
        return _rank_in_chunk(
            layout,
            plan,
            plan.tie,
            ties,
            fine.get(slot, 0),
            max(0, ahead),
            counted,
            player_count,
            unseen=unseen,
        )
    return rank_from_counts(
        ahead_in_higher_buckets=max(0, ahead),
        ahead_in_bucket=ahead_in_slot,
        bucket_capped=capped,
        bucket_size=slot_size,
        player_count=player_count,
    )


def _rank_in_chunk(
    layout: BucketLayout,
    plan: _Plan,
    tie: TiePlace,
    ties: TieCounts,
    slot_count: int,
    ahead: int,
    counted: tuple[int, bool],
    player_count: int,
    *,
    unseen: int,
) -> Rank:
    """The rank of a key in a crowded slot: the tie counts of the chunks ahead of its own, then
    the COUNT inside its chunk. Where the slot's last build did not seal them, or they do not add
    up to the slot's counter (and the A chunk's level-B counts to its level-A count), the slot's
    honest range instead. ``unseen`` is
    1 where the counts, read eventually, may not show the player in their own chunk yet."""
    query = plan.query
    a_key, b_key, c_key = tie.a_sort_key, tie.b_sort_key, tie.c_sort_key
    b_items = ties.b
    consistent = (
        ties.sealed
        and sum(ties.a.values()) == slot_count
        and sum(b_items.values()) == ties.a.get(a_key, 0)
        and (c_key is None or sum(ties.c.values()) == b_items.get(b_key, 0))
    )
    slot_size = slot_count + unseen
    chunk_size = (b_items.get(b_key, 0) if c_key is None else ties.c.get(c_key, 0)) + unseen
    was: TiePlace | None = None  # where the player is counted in these tie counts, if elsewhere
    moved = query.on_board and query.counted_at is not None and query.counted_at != query.key
    if (
        moved
        and query.counted_at is not None
        and layout.fine_of(query.counted_at.score) == (plan.bucket, plan.slot)
    ):
        mark = query.counted_mark
        was = TiePlace.of(query.counted_at, tie.grain if mark is None else mark)
    if not query.on_board or (moved and was is None):
        slot_size += 1  # the player is counted elsewhere now, or nowhere: not in these counts
        chunk_size += 1
    if not consistent:
        return rank_from_counts(
            ahead_in_higher_buckets=ahead,
            ahead_in_bucket=0,
            bucket_capped=True,
            bucket_size=slot_size,
            player_count=player_count,
        )
    ahead += sum(n for k, n in ties.a.items() if k < a_key)
    ahead += sum(n for k, n in b_items.items() if k < b_key)
    if c_key is not None:
        ahead += sum(n for k, n in ties.c.items() if k < c_key)
    if was is not None:
        # Counted at ``counted_at`` in this slot's tie counts: ahead of the player's finest chunk,
        # or in it (where the COUNT leaves them out) and so in its size.
        same = was.b_sort_key == b_key and (c_key is None or was.c_sort_key == c_key)
        if not same:
            if (was.a_sort_key, was.b_sort_key, was.c_sort_key or "") < (a_key, b_key, c_key or ""):
                ahead -= 1
            chunk_size += 1
    ahead_in_chunk, capped = counted
    return rank_from_counts(
        ahead_in_higher_buckets=max(0, ahead),
        ahead_in_bucket=ahead_in_chunk,
        bucket_capped=capped,
        bucket_size=chunk_size,
        player_count=player_count,
    )
