"""Rank arithmetic: which counts a rank needs, and from them an exact rank or an honest range.

Nothing here does I/O. ``plan_rank`` says what to read for a key (the coarse counters, the fine
counters on the nearer side of its slot, a capped COUNT of the index inside its slot or tie chunk,
and a crowded slot's tie counts); ``app.services.ranking.ranks`` reads it all in one round trip; and
``rank_from_reads`` turns what was read into what the API reports, never an estimate as a fact:
where the capped count cannot settle the player's place, ``rank`` is absent and a range that
always holds the true rank is given instead (docs/ranking.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from app.domain.buckets import BucketLayout
from app.domain.keys import Order, RankKey, key_just_below, score_prefix
from app.domain.shards import partition_ids, player_partition
from app.domain.ties import TieCounts, TiePlace


@dataclass(frozen=True)
class ExactRank:
    rank: int
    top_percent: float

    kind = "exact"


@dataclass(frozen=True)
class EstimatedRank:
    rank_range: tuple[int, int]
    top_percent_range: tuple[float, float]
    rank_estimate: int

    kind = "estimated"


Rank = ExactRank | EstimatedRank


def top_percent(rank: int, player_count: int) -> float:
    """The share of the board at or above ``rank``, in percent, to two decimals; never above 100
    (a counter read a moment after the index can make ``rank`` exceed the count briefly)."""
    if player_count <= 0:
        return 100.0
    return round(min(100.0, 100.0 * rank / player_count), 2)


def rank_from_counts(
    *,
    ahead_in_higher_buckets: int,
    ahead_in_bucket: int,
    bucket_capped: bool,
    bucket_size: int,
    player_count: int,
) -> Rank:
    """Combine the counts into a rank.

    ``ahead_in_higher_buckets`` counts the players in buckets entirely ahead of the player's own;
    ``ahead_in_bucket`` is the capped COUNT inside the player's bucket, ``bucket_capped`` whether it
    stopped at its cap; ``bucket_size`` is the bucket's counter (the player included).
    """
    if not bucket_capped:
        rank = ahead_in_higher_buckets + ahead_in_bucket + 1
        return ExactRank(rank, top_percent(rank, max(player_count, rank)))
    # At least ``ahead_in_bucket`` (the cap) are ahead inside the bucket, and at most everyone in it
    # but the player; a counter that lags the index cannot make the range exclude the truth.
    lo = ahead_in_higher_buckets + ahead_in_bucket + 1
    hi = max(lo, ahead_in_higher_buckets + bucket_size)
    count = max(player_count, hi)
    return EstimatedRank(
        rank_range=(lo, hi),
        top_percent_range=(top_percent(lo, count), top_percent(hi, count)),
        rank_estimate=(lo + hi) // 2,
    )


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
    consistent: bool = False
    """The player's own place can have moved back a moment ago (``BoardDefinition.places_fall``):
    the counters are read strongly, so they never count the player at a place they left."""
    shards: int = 1
    """The board's shards (``app.domain.shards``): above 1, ``board_id`` is the whole board's,
    and the rank is read on each of its partitions (``shard_queries``)."""
    elsewhere: bool = False
    """``board_id`` is a partition of a sharded board other than the player's (who is not and
    never will be on it): its counters may be of up to a second ago (``RankReader``'s
    ``recent``), and only the slots ahead of the key are read of them."""


@dataclass(frozen=True)
class RankPlan:
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


FineSpan = tuple[str, int, int, int]
"""A fine read: board, bucket, first and last slot."""


def fine_spans(plans: Sequence[RankPlan]) -> list[FineSpan]:
    """The fine reads the plans need: per bucket, overlapping slot ranges merged into one."""
    spans: list[FineSpan] = []
    for plan in sorted(plans, key=lambda p: (p.query.board_id, p.bucket, p.first)):
        board, bucket = plan.query.board_id, plan.bucket
        if spans and spans[-1][:2] == (board, bucket) and plan.first <= spans[-1][3] + 1:
            spans[-1] = (board, bucket, spans[-1][2], max(spans[-1][3], plan.last))
        else:
            spans.append((board, bucket, plan.first, plan.last))
    return spans


def span_of(plan: RankPlan, spans: Sequence[FineSpan]) -> FineSpan:
    return next(
        span
        for span in spans
        if span[:2] == (plan.query.board_id, plan.bucket) and span[2] <= plan.first <= span[3]
    )


def plan_rank(layout: BucketLayout, query: RankQuery) -> RankPlan:
    key = query.key
    ascending = key.order_by is Order.ASC
    bucket, slot = layout.slot_of(key.score)
    slot_lo, slot_hi = layout.slot_bounds(bucket, slot)
    slots = layout.slots_in(bucket)
    # Read only the fine counters on the nearer side of the player's slot (theirs included): the
    # players in the slots ahead are those read, or the bucket's total less those read. Ahead is
    # the higher slots where higher is better, the lower ones where lower is. The total less the
    # slots behind is right only where the coarse and fine reads agree on the player's own last
    # move, which reads apart agree on only when consistent (``reads_consistently``): a player on
    # the board whose query is not consistent anyway reads behind only where that side is under
    # half the ahead side.
    ahead_slots = slot if ascending else slots - 1 - slot
    behind_slots = slots - 1 - ahead_slots
    if query.elsewhere:
        # Counts of a moment ago, read apart: the total less the slots behind would take the
        # coarse and fine reads' moments as one. (A summary holds the whole bucket anyway.)
        read_ahead = True
    elif query.on_board and not query.consistent:
        read_ahead = ahead_slots <= 2 * behind_slots
    else:
        read_ahead = slot < slots // 2 if ascending else slot >= slots // 2
    reads_up = read_ahead != ascending
    first, last = (slot, slots - 1) if reads_up else (0, slot)
    # The slot's best key comes first on the index: its lowest score where lower is better.
    low = score_prefix(slot_lo if ascending else slot_hi - 1, key.order_by)
    tie = None if query.tie_mark is None else TiePlace.of(key, query.tie_mark)
    if tie is not None:
        low = tie.chunk_start  # the tie counts say how many are ahead of the chunk
    high = key_just_below(key.encode())
    return RankPlan(query, bucket, slot, read_ahead, first, last, low, high, tie)


def reads_consistently(plan: RankPlan) -> bool:
    """Whether the plan's counters must be read strongly: its player's place can have moved back,
    or it takes the slots ahead as the bucket's total less those behind, which counts a player on
    the board ahead of themselves where one read saw their last move and the other did not yet."""
    return plan.query.consistent or (plan.query.on_board and not plan.read_ahead)


def excluded_player(query: RankQuery) -> str | None:
    """The player's own index entry is left out of the count whenever they are on the board: where
    the index has them at ``key``, nothing is ahead of it that is theirs anyway; where it has them
    elsewhere (the rank after a move, asked before it; or RankIndex still showing a score since
    replaced, a ``latest`` score that fell, within its lag), they must not count themselves."""
    return query.key.player_id if query.on_board else None


def _ahead(order: Order, place: tuple[int, int], of: tuple[int, int]) -> bool:
    """Whether bucket/slot ``place`` ranks ahead of ``of`` on a board of ``order``."""
    return place < of if order is Order.ASC else place > of


def rank_from_reads(
    layout: BucketLayout,
    plan: RankPlan,
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
        now = layout.slot_of(query.counted_at.score)
        if _ahead(order, now, (bucket, slot)):
            ahead -= 1
        if now != (bucket, slot):
            slot_size += 1
    # Read eventually, the counters may not show the player's own last move yet, into this slot
    # (and chunk) where they now are: a range reaches one place further, in case they are not in it.
    unseen = int(
        query.on_board and not reads_consistently(plan) and query.counted_at in (None, query.key)
    )
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
    plan: RankPlan,
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
    consistent = (
        ties.sealed
        and sum(ties.a.values()) == slot_count
        and sum(ties.b.values()) == ties.a.get(a_key, 0)
        and (c_key is None or sum(ties.c.values()) == ties.b.get(b_key, 0))
    )
    slot_size = slot_count + unseen
    chunk_size = (ties.b.get(b_key, 0) if c_key is None else ties.c.get(c_key, 0)) + unseen
    was: TiePlace | None = None  # where the player is counted in these tie counts, if elsewhere
    moved = query.on_board and query.counted_at is not None and query.counted_at != query.key
    if (
        moved
        and query.counted_at is not None
        and layout.slot_of(query.counted_at.score) == (plan.bucket, plan.slot)
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
    ahead += sum(n for k, n in ties.b.items() if k < b_key)
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


def shard_queries(query: RankQuery) -> list[RankQuery]:
    """The rank of a key on a sharded board, as one query per partition: on the player's own
    partition, the query itself; on every other, the same key ranked where the player is not and
    never will be (their partition is fixed by their id), so its counts are the players ahead of
    the key there (read as of a moment ago where a summary holds them: ``elsewhere``; never
    strongly, which only the player's own place needs). ``combine_shards`` adds them up. An
    unsharded board's query is itself."""
    if query.shards == 1:
        return [query]
    own = player_partition(query.board_id, query.key.player_id, query.shards)
    return [
        replace(query, board_id=pid, shards=1)
        if pid == own
        else RankQuery(pid, query.key, on_board=False, elsewhere=True)
        for pid in partition_ids(query.board_id, query.shards)
    ]


def combine_shards(parts: Sequence[Rank], player_count: int) -> Rank:
    """One rank from each partition's: 1 plus the players ahead on every partition, exact when
    every part is; otherwise the range from the sums of the parts' lower and upper bounds, which
    holds the true rank because each part's does. ``player_count``: the board's, every
    partition's counters summed (the player included)."""
    if all(isinstance(part, ExactRank) for part in parts):
        rank = 1 + sum(part.rank - 1 for part in parts if isinstance(part, ExactRank))
        return ExactRank(rank, top_percent(rank, max(player_count, rank)))
    lo = 1 + sum(_bounds(part)[0] - 1 for part in parts)
    hi = 1 + sum(_bounds(part)[1] - 1 for part in parts)
    count = max(player_count, hi)
    return EstimatedRank(
        rank_range=(lo, hi),
        top_percent_range=(top_percent(lo, count), top_percent(hi, count)),
        rank_estimate=(lo + hi) // 2,
    )


def _bounds(rank: Rank) -> tuple[int, int]:
    return (rank.rank, rank.rank) if isinstance(rank, ExactRank) else rank.rank_range
