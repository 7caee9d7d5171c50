"""Where a player stands: the rank of a key on a board, at a cost that does not grow with the board.

The entries ahead of a key are the players in higher coarse buckets, plus those in higher fine
slots of its coarse bucket (both from counter items), plus the entries ahead of it inside its own
fine slot, counted on the index up to the cap. All three reads go out together: one round trip.
The layout and this read were chosen by simulation: docs/rank-simulation.md.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey, key_just_below, score_prefix
from app.domain.ranks import Rank, rank_from_counts
from app.services.ports import RankReader


@dataclass(frozen=True)
class RankQuery:
    """Rank ``key`` on ``board_id``. ``counted_at`` is where the histogram and index count the
    player now, when that is not ``key`` (the rank before an improvement is asked for after it)."""

    board_id: str
    key: RankKey
    counted_at: RankKey | None = None


async def rank_of(reader: RankReader, layout: BucketLayout, query: RankQuery, *, cap: int) -> Rank:
    key = query.key
    bucket, slot = layout.fine_of(key.score)
    _, slot_hi = layout.fine_bounds(bucket, slot)
    moved = query.counted_at is not None and query.counted_at != key
    # Read only the fine counters on the nearer side of the player's slot (theirs included): from
    # below, the players in higher slots are the bucket's total less those read, exact because the
    # coarse and fine counters change in the same transaction. At most half a bucket's items.
    upward = slot >= layout.slices(bucket) // 2
    first, last = (slot, layout.slices(bucket) - 1) if upward else (0, slot)
    coarse, fine, (ahead_in_slot, capped) = await asyncio.gather(
        reader.coarse_counts(query.board_id),
        reader.fine_counts(query.board_id, bucket, first, last),
        reader.count_keys(
            query.board_id,
            score_prefix(slot_hi - 1),
            key_just_below(key.encode()),
            limit=cap,
            exclude_player=key.player_id if moved else None,
        ),
    )
    ahead = sum(n for b, n in coarse.items() if b > bucket)
    if upward:
        ahead += sum(n for s, n in fine.items() if s > slot)
    else:
        ahead += coarse.get(bucket, 0) - sum(fine.values())
    slot_size = fine.get(slot, 0)
    if moved and query.counted_at is not None:
        # The histogram counts the player where they are now, not at ``key``.
        now_bucket, now_slot = layout.fine_of(query.counted_at.score)
        if (now_bucket, now_slot) > (bucket, slot):
            ahead -= 1
        if (now_bucket, now_slot) != (bucket, slot):
            slot_size += 1
    return rank_from_counts(
        ahead_in_higher_buckets=max(0, ahead),
        ahead_in_bucket=ahead_in_slot,
        bucket_capped=capped,
        bucket_size=slot_size,
        player_count=sum(coarse.values()),
    )
