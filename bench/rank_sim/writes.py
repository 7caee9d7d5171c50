"""What improvements cost in counter writes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bench.rank_sim.boards import Board
from bench.rank_sim.costs import (
    SHARDS,
    IntArray,
    coarse_item_bytes,
    fine_item_bytes,
    seeds_meta_bytes,
    write_units,
)
from bench.rank_sim.model import EARLIER_DESIGN_LAYOUT, LayoutSpec, verified_slot_map


@dataclass(frozen=True)
class Improvements:
    """A sample of players each submitting a new score drawn from the board's distribution; those
    that beat their best are improvements."""

    old: IntArray
    new: IntArray


def draw_improvements(board: Board, rng: np.random.Generator, size: int) -> Improvements:
    chosen = rng.integers(0, board.size, size)
    old = board.score[chosen]
    new = board.distribution.draw(rng, len(chosen))
    better = new > old
    return Improvements(old[better], new[better])


@dataclass(frozen=True)
class Writes:
    """Counter items one submission writes on one board."""

    new_player: int
    improvement_max: int
    improvement_mean: float
    counter_wcu_max: int
    """Write units for the counter items of the costliest submission, inside the transaction."""


def counter_writes(spec: LayoutSpec, board: Board, improvements: Improvements) -> Writes:
    players = board.size
    if spec.seeds:
        # One metadata row for every accepted score, whatever moved.
        bucket, _ = verified_slot_map(EARLIER_DESIGN_LAYOUT.coarse, 1).place(board.score)
        counts = np.bincount(bucket, minlength=EARLIER_DESIGN_LAYOUT.coarse).tolist()
        return Writes(1, 1, 1.0, write_units(seeds_meta_bytes(counts, players)))
    slot_map = verified_slot_map(spec.coarse, spec.fine)
    old_bucket, old_slot = slot_map.place(improvements.old)
    new_bucket, new_slot = slot_map.place(improvements.new)
    # Coarse: -1 and +1 cancel when the bucket is kept (same shard or not, the sum is unchanged);
    # fine: the same when the slot is kept.
    moved_bucket = old_bucket != new_bucket
    moved_slot = moved_bucket | (old_slot != new_slot)
    items = 2 * moved_bucket.astype(np.int64) + 2 * moved_slot.astype(np.int64)
    new_player = 2
    if spec.ties is not None:
        # A player counted in a crowded slot's tie counters moves out of their A and B items and
        # into others: an improvement changes the score, and so the items, even inside one slot.
        bucket, slot = slot_map.place(board.score)
        slots = np.bincount(bucket * spec.fine + slot, minlength=spec.coarse * spec.fine)
        crowded = slots > spec.ties.group
        was = crowded[old_bucket * spec.fine + old_slot]
        now = crowded[new_bucket * spec.fine + new_slot]
        items = items + 2 * was.astype(np.int64) + 2 * now.astype(np.int64)
        new_player += 2 * int(crowded.any())
    largest = max(coarse_item_bytes(SHARDS - 1, 0, players), fine_item_bytes(0, 0, players))
    worst = max(new_player, int(items.max()) if len(items) else 0)
    return Writes(
        new_player=new_player,
        improvement_max=int(items.max()) if len(items) else 0,
        improvement_mean=float(items.mean()) if len(items) else 0.0,
        counter_wcu_max=worst * write_units(largest),
    )
