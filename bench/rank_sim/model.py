"""Bucket layouts, and the vectorised model of the rank algorithms (the service's and the earlier
Lambda design's) over every player of a board."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final

import numpy as np

from app.domain.buckets import BucketLayout
from app.domain.keys import SCORE_CEILING
from app.domain.ties import FANOUT_BITS, tie_group
from bench.rank_sim.boards import Board
from bench.rank_sim.costs import (
    CAP,
    INDEX_ENTRY_BYTES,
    SHARDS,
    STRONG,
    BoolArray,
    IntArray,
    coarse_item_bytes,
    fine_item_bytes,
    number_bytes,
    number_bytes_array,
    query_half_units,
    query_half_units_array,
    seeds_meta_bytes,
)

EARLIER_DESIGN_LAYOUT = BucketLayout(coarse=128, fine=1)
"""The earlier Lambda design's histogram: 128 log buckets of one slot each."""


@dataclass(frozen=True)
class Ties:
    """The service's tie counters (``app.domain.ties``) in the fine slots that hold more than
    ``group`` entries (crowded slots).

    A builder that walks the whole index (the reconciler, or seeding) picks for each crowded slot a
    grain ``L``: the largest in ``0..MAX_GRAIN`` such that every ``(score, achievedAt_ms >> L)``
    group of the slot holds at most ``group`` entries, or 0 when even that fails (more than
    ``group`` entries of one score in one millisecond). Two counter levels per crowded slot:
    level A per ``(score, ms >> (L + fan_bits))``, level B per ``(score, ms >> L)``. A rank in a
    crowded slot is the players in better buckets and slots (as today), plus the level-A counts of
    the slot's chunks ahead of the player's, plus the level-B counts ahead of theirs inside their A
    chunk, plus a capped COUNT of the index inside their own B chunk, from the chunk's start.
    """

    group: int = tie_group(CAP)
    fan_bits: int = FANOUT_BITS
    """Level-B chunks per level-A chunk: ``2**fan_bits``."""
    cap: int = CAP
    """The COUNT cap (the service's one cap; smaller only in unit tests)."""

    @property
    def fan_out(self) -> int:
        return 1 << self.fan_bits

    @property
    def name(self) -> str:
        return f"ties below the score (G {self.group:,}, fan-out {self.fan_out})"


@dataclass(frozen=True)
class LayoutSpec:
    """A bucket layout to compare; ``seeds`` runs the earlier Lambda design's algorithm over 128
    log buckets."""

    coarse: int
    fine: int
    seeds: bool = False
    nearer_half: bool = False
    """Read only the fine counters on the nearer side of the player's slot, as the service's
    ``rank_of`` does (at most half the bucket's fine items); otherwise every fine counter of the
    bucket, as ``rank_of_full_read`` here does."""
    ties: Ties | None = None
    """Tie counters in crowded slots (the proposed design); other slots answer as without."""

    @property
    def name(self) -> str:
        if self.seeds:
            return "Lambda design (count 2,000, then 128 buckets)"
        if self.fine == 1:
            return f"{self.coarse}"
        name = f"{self.coarse} x {self.fine}" + (", nearer half" if self.nearer_half else "")
        return name if self.ties is None else f"{name}, {self.ties.name}"

    @property
    def layout(self) -> BucketLayout:
        return EARLIER_DESIGN_LAYOUT if self.seeds else bucket_layout(self.coarse, self.fine)


@cache
def bucket_layout(coarse: int, fine: int) -> BucketLayout:
    return BucketLayout(coarse=coarse, fine=fine)


SEEDS: Final = LayoutSpec(128, 1, seeds=True)
"""The earlier Lambda design's scheme: a COUNT from the top to 2,000, then 128 log buckets."""
FULL_READ: Final = LayoutSpec(128, 512)
"""The first default: 128 x 512 with every fine counter of the bucket read."""
DEFAULT: Final = LayoutSpec(128, 1_024, nearer_half=True)
"""The service's layout (``BucketLayout()``) and read (``app.services.ranking.ranks.rank_of``)."""
TIES: Final = LayoutSpec(128, 1_024, nearer_half=True, ties=Ties())
"""The proposed design over the service's layout and read."""
LAYOUTS: Final = (
    SEEDS,
    LayoutSpec(64, 1),
    LayoutSpec(128, 1),
    LayoutSpec(256, 1),
    LayoutSpec(1_024, 1),
    LayoutSpec(128, 256),
    FULL_READ,
    LayoutSpec(128, 1_024),
    LayoutSpec(64, 1_024),
    LayoutSpec(256, 256),
    LayoutSpec(256, 512),
    LayoutSpec(1_024, 64),
    LayoutSpec(128, 512, nearer_half=True),
    DEFAULT,
    TIES,
)
TIE_LAYOUTS: Final = (SEEDS, DEFAULT, TIES)
"""The earlier Lambda design's scheme, the shipped layout without tie counters and with them:
docs/rank-ties.md."""
LAYOUT_SETS: Final = {"all": LAYOUTS, "ties": TIE_LAYOUTS}


class SimulationError(Exception):
    """The model and the real code (or the truth) disagree: the figures cannot be trusted."""


@dataclass(frozen=True)
class SlotMap:
    """``BucketLayout.slot_of`` over arrays, from the layout's own coarse bounds."""

    layout: BucketLayout
    lower: IntArray
    """Each coarse bucket's lowest score, then ``SCORE_CEILING``."""

    @classmethod
    def of(cls, layout: BucketLayout) -> SlotMap:
        bounds = [layout.coarse_bounds(b)[0] for b in range(layout.coarse)] + [SCORE_CEILING]
        return cls(layout, np.array(bounds, dtype=np.int64))

    def place(self, score: IntArray) -> tuple[IntArray, IntArray]:
        """The ``(coarse, fine)`` bucket of every score."""
        bucket = (np.searchsorted(self.lower[:-1], score, side="right") - 1).astype(np.int64)
        lo = self.lower[bucket]
        width = self.lower[bucket + 1] - lo
        slices = np.clip(width, 1, self.layout.fine)
        return bucket, (score - lo) * slices // width


@cache
def verified_slot_map(coarse: int, fine: int) -> SlotMap:
    """The array mapping, checked against the real one on both sides of every fine slot's lower
    bound: two non-decreasing step functions that agree there agree on every score."""
    layout = bucket_layout(coarse, fine)
    slot_map = SlotMap.of(layout)
    points = {0, SCORE_CEILING - 1}
    for bucket in layout.nonempty_coarse:
        for slot in range(layout.slots_in(bucket)):
            lo, _ = layout.slot_bounds(bucket, slot)
            points.update((lo, lo - 1) if lo > 0 else (lo,))
    scores = np.array(sorted(points), dtype=np.int64)
    buckets, slots = slot_map.place(scores)
    for score, bucket, slot in zip(scores.tolist(), buckets.tolist(), slots.tolist(), strict=True):
        if layout.slot_of(score) != (bucket, slot):
            raise SimulationError(
                f"{coarse} x {fine}: score {score} maps to {layout.slot_of(score)}, "
                f"the model says {(bucket, slot)}"
            )
    return slot_map


@dataclass(frozen=True)
class Answers:
    """Every player's answer from one layout, and what it cost."""

    exact: BoolArray
    lo: IntArray
    """The rank when exact, else the range's low end."""
    hi: IntArray
    entries: IntArray
    """Index entries the COUNT queries read."""
    counter_items: IntArray
    counter_bytes: IntArray
    half_units: IntArray
    """Read units, in halves (eventually consistent), of the counter and COUNT queries."""
    round_trips: IntArray
    """Sequential rounds of calls, after the read of the player's own row."""
    calls: IntArray
    """DynamoDB requests (a Query or GetItem each)."""


@dataclass(frozen=True)
class Placement:
    """Where a layout puts every player of a board."""

    bucket: IntArray
    slot: IntArray


def _ranks(board: Board) -> IntArray:
    return np.arange(1, board.size + 1, dtype=np.int64)


@dataclass(frozen=True)
class HistogramReads:
    """What the service's counter reads tell every player, and what they cost."""

    ahead: IntArray
    """Players in better coarse buckets and better fine slots."""
    slot_size: IntArray
    """The player's fine slot's counter."""
    items: IntArray
    nbytes: IntArray
    half_units: IntArray
    """Of the coarse and fine Queries."""
    consistent: BoolArray
    """Whether the player's counters are read strongly (the side behind them is read)."""
    unseen: IntArray
    """1 where the reads are eventual: a range then reaches one place past the slot (or chunk),
    in case the counters do not show the player's own last move into it yet."""


def histogram_reads(board: Board, spec: LayoutSpec, placement: Placement) -> HistogramReads:
    """The coarse counters (every item of the 4 shards) and the fine counters (the bucket's, or
    the nearer half of them) that ``rank_of`` reads for every player."""
    layout = spec.layout
    bucket, slot = placement.bucket, placement.slot
    flat = bucket * layout.fine + slot
    counts = np.bincount(flat, minlength=layout.coarse * layout.fine).astype(np.int64)
    above = board.size - np.cumsum(counts)

    coarse = np.bincount(bucket * SHARDS + board.shard, minlength=layout.coarse * SHARDS)
    coarse = coarse.astype(np.int64).reshape(layout.coarse, SHARDS)
    coarse_base = coarse_item_bytes(0, 0, 0) - number_bytes(0)
    coarse_sizes = np.where(coarse > 0, coarse_base + number_bytes_array(coarse), 0)
    shard_bytes = coarse_sizes.sum(axis=0)
    coarse_items = int((coarse > 0).sum())
    coarse_bytes = int(shard_bytes.sum())
    coarse_half = sum(query_half_units(int(b)) for b in shard_bytes)

    fine = counts.reshape(layout.coarse, layout.fine)
    fine_base = fine_item_bytes(0, 0, 0) - number_bytes(0)
    fine_sizes = np.where(fine > 0, fine_base + number_bytes_array(fine), 0)
    consistent = np.zeros(board.size, dtype=bool)
    unseen = np.zeros(board.size, dtype=np.int64)
    if spec.nearer_half:
        # Slots from the player's up (those ahead, and theirs), unless they are more than twice
        # the slots behind: then from the bottom up to the player's, read strongly, as
        # ``rank_of`` does for a player on the board (docs/ranking.md).
        slices = np.array([layout.slots_in(b) for b in range(layout.coarse)], dtype=np.int64)
        ahead_slots = slices[bucket] - 1 - slot
        upward = ahead_slots <= 2 * slot
        consistent = ~upward
        unseen = upward.astype(np.int64)
        below_bytes = np.cumsum(fine_sizes, axis=1)
        below_items = np.cumsum(fine > 0, axis=1)
        own_bytes, own_item = fine_sizes[bucket, slot], (fine[bucket, slot] > 0).astype(np.int64)
        read_bytes = np.where(
            upward,
            fine_sizes.sum(axis=1)[bucket] - below_bytes[bucket, slot] + own_bytes,
            below_bytes[bucket, slot],
        )
        read_items = np.where(
            upward,
            (fine > 0).sum(axis=1)[bucket] - below_items[bucket, slot] + own_item,
            below_items[bucket, slot],
        )
    else:
        read_bytes = fine_sizes.sum(axis=1)[bucket]
        read_items = (fine > 0).sum(axis=1)[bucket]
    fine_half = query_half_units_array(read_bytes)
    return HistogramReads(
        ahead=above[flat],
        slot_size=counts[flat],
        items=(coarse_items + read_items).astype(np.int64),
        nbytes=(coarse_bytes + read_bytes).astype(np.int64),
        half_units=(np.where(consistent, STRONG, 1) * (coarse_half + fine_half)).astype(np.int64),
        consistent=consistent,
        unseen=unseen,
    )


def entry_half_units(entries: IntArray) -> IntArray:
    """A COUNT Query's cost, in half units, for the entries it counted."""
    return query_half_units_array(entries * INDEX_ENTRY_BYTES)


def model_two_level(board: Board, spec: LayoutSpec, placement: Placement) -> Answers:
    """``rank_of`` for every player: counters for the slots above, a capped COUNT in the slot."""
    return _two_level(board, spec, histogram_reads(board, spec, placement))


def _two_level(board: Board, spec: LayoutSpec, hist: HistogramReads) -> Answers:
    n = board.size
    ahead, size = hist.ahead, hist.slot_size
    rank = _ranks(board)
    in_slot = rank - 1 - ahead
    if bool((in_slot < 0).any()) or bool((in_slot >= size).any()):
        raise SimulationError(f"{spec.name}: the board order and the slots disagree")
    capped = in_slot >= CAP
    entries = np.minimum(in_slot, CAP)
    lo = np.where(capped, ahead + CAP + 1, rank)
    hi = np.where(capped, np.maximum(lo, ahead + size + hist.unseen), rank)
    return Answers(
        exact=~capped,
        lo=lo,
        hi=hi,
        entries=entries,
        counter_items=hist.items,
        counter_bytes=hist.nbytes,
        half_units=hist.half_units + entry_half_units(entries),
        round_trips=np.ones(n, dtype=np.int64),
        calls=np.full(n, SHARDS + 2, dtype=np.int64),
    )


def model_seeds(board: Board, placement: Placement) -> Answers:
    """The earlier Lambda design: COUNT from the top, stopping at the cap; past it, a range from
    the buckets above the player's and the player's own (no count inside it), never below
    ``CAP + 1``."""
    n = board.size
    bucket = placement.bucket
    counts = np.bincount(bucket, minlength=EARLIER_DESIGN_LAYOUT.coarse).astype(np.int64)
    above = n - np.cumsum(counts)
    ahead, size = above[bucket], counts[bucket]
    rank = _ranks(board)
    capped = rank - 1 >= CAP
    entries = np.minimum(rank - 1, CAP)
    lo = np.where(capped, np.maximum(ahead + 1, CAP + 1), rank)
    hi = np.where(capped, np.maximum(lo, ahead + size), rank)
    meta = seeds_meta_bytes(counts.tolist(), n)
    entry_half = entry_half_units(entries)
    read_meta = capped.astype(np.int64)
    return Answers(
        exact=~capped,
        lo=lo,
        hi=hi,
        entries=entries,
        counter_items=read_meta,
        counter_bytes=read_meta * meta,
        half_units=entry_half + read_meta * query_half_units(meta),
        round_trips=1 + read_meta,
        calls=1 + read_meta,
    )
