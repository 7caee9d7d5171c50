"""Rank cost and exactness at scale: the rank code over an in-memory index, boards of 10^4 to 10^7.

Run it as ``uv run python -m bench.rank_sim [--sizes 10000,100000] [--quick] [--out FILE]``.

Every player of every board is ranked by a vectorised (numpy) model of ``app.services.rank.rank_of``
and of the seeds' algorithm (count from the top to 2,000, then a range from 128 log buckets), with
what each answer costs in DynamoDB terms. The model is trusted only because, on a sample of players of
every board and layout, the real ``rank_of`` runs over ``SimRankReader`` (an in-memory ``RankReader``:
a sorted index of real rank keys plus the counter items, with cost accounting) and must agree with it
exactly: the same rank or range, the same entries read, counter bytes, read units and round trips,
and an exact rank equal to the player's true place. Any disagreement stops the run.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Final

import numpy as np
from numpy.typing import NDArray

from app.domain.buckets import SEEDS_LAYOUT, BucketLayout
from app.domain.keys import SCORE_CEILING, RankKey, key_just_below, score_prefix
from app.domain.ranks import EstimatedRank, ExactRank, Rank, RankQuery, rank_from_counts
from app.domain.ties import FANOUT_BITS, MAX_GRAIN, TieCounts, TiePlace, tie_group
from app.services.rank import rank_of
from app.store.ties import tie_pk

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# ---- what is simulated, and DynamoDB's published size and capacity rules -----------------------

BOARD_ID: Final = "trivia#alltopics#alltime"
SHARDS: Final = 4
"""Coarse counters are spread over this many partition keys (the adapter's default)."""
CAP: Final = 2_000
"""The COUNT cap (``Settings.rank_count_cap``'s default) and the seeds' exact-rank limit."""
UNIT_BYTES: Final = 4_096
"""A read unit covers 4 KB of a Query's items (summed, then rounded up); eventually consistent
reads cost half a unit per 4 KB. Figures below are kept in half units and reported as RCU."""
PLAYER_ID_DIGITS: Final = 9
BASE_MS: Final = 1_790_000_000_000
"""achievedAt of the first achievement on a simulated board (2026-09-21T14:13:20Z)."""
LAST_PLAYED_AT: Final = "2026-11-30T12:34:56.789Z"
SEEDS_HISTOGRAM_ATTRIBUTE: Final = "bucket{:03d}"
TOP_OF_BOARD: Final = score_prefix(SCORE_CEILING - 1)
"""Sorts before every rank key: the seeds counted from here."""


def player_id(number: int) -> str:
    """Simulated player ids are ``p`` and 9 digits (10 bytes)."""
    return f"p{number:0{PLAYER_ID_DIGITS}d}"


def number_bytes(value: int) -> int:
    """DynamoDB's size of a Number: about 1 byte per two significant digits, plus 1 byte."""
    digits = str(abs(value)).strip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def item_bytes(attributes: Mapping[str, str | int]) -> int:
    """An item's size: each attribute's name (UTF-8) plus its value (a string's UTF-8 length, a
    number's ``number_bytes``)."""
    return sum(
        len(name.encode())
        + (len(value.encode()) if isinstance(value, str) else number_bytes(value))
        for name, value in attributes.items()
    )


def coarse_item_bytes(shard: int, bucket: int, n: int) -> int:
    return item_bytes(
        {"playerId": f"hist#{BOARD_ID}#c{shard}", "leaderboardId": f"{bucket:04d}", "n": n}
    )


def fine_item_bytes(bucket: int, slot: int, n: int) -> int:
    return item_bytes(
        {"playerId": f"hist#{BOARD_ID}#f{bucket:04d}", "leaderboardId": f"{slot:04d}", "n": n}
    )


INDEX_ENTRY_BYTES: Final = item_bytes(
    {
        "leaderboardId": BOARD_ID,
        "rankKey": RankKey(1, BASE_MS, player_id(0)).encode(),
        "playerId": player_id(0),
        "displayName": "x" * 12,
        "country": "GB",
        "lastPlayedAt": LAST_PLAYED_AT,
    }
)
"""What one RankIndex entry weighs for reads: its keys, the table's key and the projected
attributes (a 12-byte display name, a country code, an ISO timestamp). A COUNT is charged for every
entry it counts, exactly as if it had returned them."""


def seeds_meta_bytes(counts: Sequence[int], players: int) -> int:
    """The seeds' one metadata row: 128 ``bucketNNN`` attributes (zeros included), the player count
    and a histogram version."""
    attributes: dict[str, str | int] = {
        "playerId": f"meta#{BOARD_ID}",
        "leaderboardId": BOARD_ID,
        "playerCount": players,
        "histogramVersion": 1,
    }
    attributes.update({SEEDS_HISTOGRAM_ATTRIBUTE.format(b): n for b, n in enumerate(counts)})
    return item_bytes(attributes)


def query_half_units(nbytes: int) -> int:
    """One eventually consistent Query's cost in half read units: its items' total size rounded up
    to 4 KB, and never less than one unit (an empty Query is charged too)."""
    return max(1, -(-nbytes // UNIT_BYTES))


def query_half_units_array(nbytes: IntArray) -> IntArray:
    """``query_half_units`` over an array of Queries' item bytes."""
    return np.maximum(1, -(-nbytes // UNIT_BYTES)).astype(np.int64)


STRONG = 2
"""A strongly consistent read costs twice an eventually consistent one. A rank reads its counters
strongly on a board where a player's own place can move back (``latest``, or ``sum`` where lower
is better), and wherever it reads the fine slots behind the player (the total less those is the
slots ahead, right only where both reads saw the player's last move); the boards simulated here
keep the best score, so only the second applies."""


def _consistency(strong: bool) -> int:
    return STRONG if strong else 1


def write_units(nbytes: int, *, transactional: bool = True) -> int:
    """Write units for one item: 1 per KB rounded up, doubled inside a transaction."""
    units = max(1, -(-nbytes // 1_024))
    return 2 * units if transactional else units


_POWERS_OF_TEN = np.array([10**k for k in range(19)], dtype=np.int64)


def number_bytes_array(values: IntArray) -> IntArray:
    """``number_bytes`` over an array."""
    v = np.abs(values)
    while True:
        tens = (v % 10 == 0) & (v != 0)
        if not tens.any():
            break
        v = np.where(tens, v // 10, v)
    digits = np.maximum(1, np.searchsorted(_POWERS_OF_TEN, v, side="right"))
    return ((digits + 1) // 2 + 1).astype(np.int64)


# ---- score distributions and boards ----------------------------------------------------------------


@dataclass(frozen=True)
class Distribution:
    name: str
    description: str
    draw: Callable[[np.random.Generator, int], IntArray]
    moment: int = 0
    """Players (at random) whose achievedAt is one and the same millisecond, as a round's results
    stamped at once; all of them on a smaller board. 0: every achievedAt is distinct."""


def _trivia(rng: np.random.Generator, n: int) -> IntArray:
    return np.clip(np.rint(rng.normal(5_000.0, 1_500.0, n)), 0, None).astype(np.int64)


def _pareto(rng: np.random.Generator, n: int) -> IntArray:
    u = 1.0 - rng.random(n)  # in (0, 1]
    scores = np.floor(1_000.0 * (u ** (-1.0 / 1.5) - 1.0))
    return np.clip(scores, 0, SCORE_CEILING - 1).astype(np.int64)


def _lognormal(rng: np.random.Generator, n: int) -> IntArray:
    scores = np.floor(np.exp(rng.normal(math.log(2_000.0), 1.5, n)))
    return np.clip(scores, 0, SCORE_CEILING - 1).astype(np.int64)


def _uniform(rng: np.random.Generator, n: int) -> IntArray:
    return rng.integers(0, 1_000_000, n, dtype=np.int64)


def _coarse(rng: np.random.Generator, n: int) -> IntArray:
    return (np.rint(_trivia(rng, n) / 100.0) * 100).astype(np.int64)


def _stars(rng: np.random.Generator, n: int) -> IntArray:
    return rng.integers(0, 31, n, dtype=np.int64)


MOMENT_PLAYERS: Final = 50_000


DISTRIBUTIONS: Final = (
    Distribution(
        "trivia",
        "normal, mean 5,000, sd 1,500, rounded to the nearest integer, clipped at 0",
        _trivia,
    ),
    Distribution(
        "pareto",
        "long tail: Pareto II (Lomax), shape 1.5, scale 1,000: floor(1000 * (U^(-1/1.5) - 1)); "
        "median 587, mean 2,000, infinite variance",
        _pareto,
    ),
    Distribution(
        "lognormal",
        "long tail: floor(exp(N(ln 2,000, 1.5))); median 2,000, p99 about 65,000",
        _lognormal,
    ),
    Distribution("uniform", "uniform integers in [0, 1,000,000)", _uniform),
    Distribution(
        "coarse",
        "trivia rounded to the nearest multiple of 100 (after its clip at 0): 101 distinct "
        "scores within 3.3 sd of the mean, about 120 in all on the larger boards",
        _coarse,
    ),
    Distribution("stars", "uniform integers 0..30", _stars),
    Distribution(
        "same-moment",
        f"trivia scores; {MOMENT_PLAYERS:,} players at random (all of them on a smaller board) "
        "share one achievedAt millisecond, as a round's results stamped at once, ordered by "
        "playerId among equal scores; the rest spread as on the other boards",
        _trivia,
        moment=MOMENT_PLAYERS,
    ),
)


@dataclass(frozen=True)
class Board:
    """One board's players in board order (best first), so index ``i`` holds rank ``i + 1``: score
    descending, then achievedAt ascending, then player id ascending, as the rank key sorts
    (``<score part>#<13-digit ms>#<playerId>``; ids are ``p`` and 9 digits, so their string order
    is their number's)."""

    distribution: Distribution
    score: IntArray
    achieved_ms: IntArray
    player: IntArray
    """The player's id is ``player_id(player[i])``."""
    shard: IntArray
    """The coarse shard the player's counter increment landed on (the adapter picks at random)."""

    @property
    def size(self) -> int:
        return len(self.score)

    def key(self, i: int) -> RankKey:
        return RankKey(int(self.score[i]), int(self.achieved_ms[i]), player_id(int(self.player[i])))


def build_board(distribution: Distribution, size: int, rng: np.random.Generator) -> Board:
    """Draw ``size`` players. Achievements are a second apart in a random order (plus a random
    millisecond), so achievedAt is distinct, except for the distribution's ``moment`` players."""
    if not 0 < size <= 1 << 24:
        raise ValueError("boards of 1 to 2**24 players")
    score = distribution.draw(rng, size)
    when = rng.permutation(size).astype(np.int64)
    achieved = BASE_MS + when * 1_000 + rng.integers(0, 1_000, size, dtype=np.int64)
    player = rng.permutation(size).astype(np.int64)
    shard = rng.integers(0, SHARDS, size, dtype=np.int64)
    if distribution.moment:
        together = rng.choice(size, min(distribution.moment, size), replace=False)
        achieved[together] = BASE_MS + (size // 2) * 1_000 + 500
    return board_of(distribution, score, achieved, player, shard)


def board_of(
    distribution: Distribution,
    score: IntArray,
    achieved_ms: IntArray,
    player: IntArray,
    shard: IntArray,
) -> Board:
    """The players put in board order: score descending, achievedAt ascending, player ascending."""
    order = np.lexsort((player, achieved_ms, -score))
    return Board(distribution, score[order], achieved_ms[order], player[order], shard[order])


def tie_ceiling(board: Board) -> float:
    """The best share of exact answers any score-keyed histogram could give with the cap: even a
    slot of one score leaves the players past the cap-th of a crowded score with a range."""
    _, counts = np.unique(board.score, return_counts=True)
    return float(np.minimum(counts, CAP).sum()) / board.size


# ---- layouts, and the vectorised model of the rank algorithms ------------------------------------


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
    """A bucket layout to compare; ``seeds`` runs the seeds' algorithm over 128 log buckets."""

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
            return "seeds (count 2,000, then 128 buckets)"
        if self.fine == 1:
            return f"{self.coarse}"
        name = f"{self.coarse} x {self.fine}" + (", nearer half" if self.nearer_half else "")
        return name if self.ties is None else f"{name}, {self.ties.name}"

    @property
    def layout(self) -> BucketLayout:
        return SEEDS_LAYOUT if self.seeds else bucket_layout(self.coarse, self.fine)


@cache
def bucket_layout(coarse: int, fine: int) -> BucketLayout:
    return BucketLayout(coarse=coarse, fine=fine)


SEEDS: Final = LayoutSpec(128, 1, seeds=True)
FULL_READ: Final = LayoutSpec(128, 512)
"""The first default: 128 x 512 with every fine counter of the bucket read."""
DEFAULT: Final = LayoutSpec(128, 1_024, nearer_half=True)
"""The service's layout (``BucketLayout()``) and read (``app.services.rank.rank_of``)."""
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
"""The seeds' scheme, the shipped layout without tie counters and with them: docs/rank-ties.md."""
LAYOUT_SETS: Final = {"all": LAYOUTS, "ties": TIE_LAYOUTS}


class SimulationError(Exception):
    """The model and the real code (or the truth) disagree: the figures cannot be trusted."""


@dataclass(frozen=True)
class SlotMap:
    """``BucketLayout.fine_of`` over arrays, from the layout's own coarse bounds."""

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
        for slot in range(layout.slices(bucket)):
            lo, _ = layout.fine_bounds(bucket, slot)
            points.update((lo, lo - 1) if lo > 0 else (lo,))
    scores = np.array(sorted(points), dtype=np.int64)
    buckets, slots = slot_map.place(scores)
    for score, bucket, slot in zip(scores.tolist(), buckets.tolist(), slots.tolist(), strict=True):
        if layout.fine_of(score) != (bucket, slot):
            raise SimulationError(
                f"{coarse} x {fine}: score {score} maps to {layout.fine_of(score)}, "
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
    strong: BoolArray
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
    strong = np.zeros(board.size, dtype=bool)
    unseen = np.zeros(board.size, dtype=np.int64)
    if spec.nearer_half:
        # Slots from the player's up (those ahead, and theirs), unless they are more than twice
        # the slots behind: then from the bottom up to the player's, read strongly, as
        # ``rank_of`` does for a player on the board (docs/ranking.md).
        slices = np.array([layout.slices(b) for b in range(layout.coarse)], dtype=np.int64)
        ahead_slots = slices[bucket] - 1 - slot
        upward = ahead_slots <= 2 * slot
        strong = ~upward
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
        half_units=(np.where(strong, STRONG, 1) * (coarse_half + fine_half)).astype(np.int64),
        strong=strong,
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
    """The seeds: COUNT from the top, stopping at the cap; past it, a range from the buckets above
    the player's and the player's own (no count inside it), never below ``CAP + 1``."""
    n = board.size
    bucket = placement.bucket
    counts = np.bincount(bucket, minlength=SEEDS_LAYOUT.coarse).astype(np.int64)
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


# ---- the proposed design: tie counters below the score ------------------------------------------


def tie_a_key(score: int, chunk_a: int) -> str:
    """A level-A item's sort key, as the service writes it (``TiePlace.a_sort_key``)."""
    return TiePlace(0, score_prefix(score), chunk_a, 0).a_sort_key


def tie_b_key(score: int, chunk_a: int, chunk_b: int) -> str:
    """A level-B item's sort key (``TiePlace.b_sort_key``); an A chunk's B items share a prefix."""
    return TiePlace(0, score_prefix(score), chunk_a, chunk_b).b_sort_key


def tie_item_bytes(bucket: int, slot: int, sort_key: str, n: int) -> int:
    return item_bytes(
        {"playerId": tie_pk(BOARD_ID, bucket, slot), "leaderboardId": sort_key, "n": n}
    )


TIE_A_BASE: Final = tie_item_bytes(0, 0, tie_a_key(0, 0), 0) - number_bytes(0)
TIE_B_BASE: Final = tie_item_bytes(0, 0, tie_b_key(0, 0, 0), 0) - number_bytes(0)
"""Every key field is fixed-width, so an item's size is these plus its count's."""


def bit_length(values: IntArray) -> IntArray:
    """``int.bit_length`` over non-negative values below 2**53 (exact in a float's exponent)."""
    _, exponent = np.frexp(values.astype(np.float64))
    return exponent.astype(np.int64)


def slot_grains(board: Board, flat: IntArray, ties: Ties, slots: int) -> IntArray:
    """Every slot's grain ``L``, by the builder's rule.

    A ``(score, ms >> L)`` group holds more than G entries exactly when some entry and the one G
    places after it share the score and ``ms >> L`` (the board is in score, then time, order), and
    ``a >> L == b >> L`` exactly when ``L >= bit_length(a ^ b)``. So the largest L that keeps
    every such pair apart is the least ``bit_length(a ^ b) - 1`` over the slot's pairs; a pair in
    one millisecond allows none, and the slot falls back to 0.
    """
    grains = np.full(slots, MAX_GRAIN, dtype=np.int64)
    g = ties.group
    if board.size > g:
        pairs = np.flatnonzero(board.score[:-g] == board.score[g:])
        apart = bit_length(board.achieved_ms[pairs] ^ board.achieved_ms[pairs + g]) - 1
        np.minimum.at(grains, flat[pairs], apart)
    return np.clip(grains, 0, MAX_GRAIN)


@dataclass(frozen=True)
class TieBuild:
    """Where the builder put tie counters on a board, and what each player's read of them took."""

    crowded_slot: BoolArray
    """Per flat slot (``bucket * fine + slot``)."""
    grain_of_slot: IntArray
    crowded: BoolArray
    """Per player: in a crowded slot."""
    a_read: IntArray
    b_read: IntArray
    """Per player: level-A and level-B items their rank read returned (0 outside crowded slots)."""
    a_items: int
    b_items: int
    """Tie counter items on the board."""

    @property
    def crowded_slots(self) -> int:
        return int(self.crowded_slot.sum())


def _runs(*keys: IntArray) -> BoolArray:
    """Where a run of equal ``keys`` (taken together) starts."""
    new = np.zeros(len(keys[0]), dtype=np.bool_)
    new[:1] = True
    for key in keys:
        new[1:] |= key[1:] != key[:-1]
    return new


@dataclass(frozen=True)
class _Chunks:
    """The crowded slots' players (board indices ``idx``, in board order) and their chunks: each
    slot, A chunk and B chunk is a run of them. Chunk ids number the board's A (or B) items in
    board order."""

    idx: IntArray
    a_id: IntArray
    b_id: IntArray
    a_size: IntArray
    b_size: IntArray
    a_first: IntArray
    a_count: IntArray
    """Per player: the id of their slot's first A item, and how many the slot has."""
    b_first: IntArray
    b_count: IntArray
    """Per player: the id of their A chunk's first B item, and how many it has."""
    b_start: IntArray
    """Per player: the board index of their B chunk's first entry."""


def _chunks(board: Board, idx: IntArray, flat: IntArray, grain: IntArray, ties: Ties) -> _Chunks:
    score, t = board.score[idx], board.achieved_ms[idx]
    chunk_b = t >> grain
    new_slot, new_a = _runs(flat), _runs(flat, score, chunk_b >> ties.fan_bits)
    new_b = new_a | _runs(chunk_b)
    slot_id, a_id, b_id = (np.cumsum(new) - 1 for new in (new_slot, new_a, new_b))
    a_size, b_size = np.bincount(a_id), np.bincount(b_id)
    return _Chunks(
        idx=idx,
        a_id=a_id,
        b_id=b_id,
        a_size=a_size,
        b_size=b_size,
        a_first=a_id[new_slot][slot_id],
        a_count=np.diff(np.append(a_id[new_slot], len(a_size)))[slot_id],
        b_first=b_id[new_a][a_id],
        b_count=np.diff(np.append(b_id[new_a], len(b_size)))[a_id],
        b_start=idx[new_b][b_id],
    )


@dataclass(frozen=True)
class _TieRead:
    """One counter level's read for every crowded-slot player."""

    ahead: IntArray
    """The level's counts ahead of the player's chunk, as the read turns them into."""
    items: IntArray
    nbytes: IntArray


def _level_read(
    own: IntArray, first: IntArray, count: IntArray, sizes: IntArray, base_bytes: int
) -> _TieRead:
    """Items ``first .. first + count - 1`` of one level (a slot's A items, or an A chunk's B
    items): one ``begins_with`` Query, whose counts before ``own`` are those ahead."""
    total = np.concatenate(([0], np.cumsum(sizes)))
    nbytes = np.concatenate(([0], np.cumsum(base_bytes + number_bytes_array(sizes))))
    return _TieRead(
        ahead=total[own] - total[first],
        items=count,
        nbytes=nbytes[first + count] - nbytes[first],
    )


def model_ties(board: Board, spec: LayoutSpec, placement: Placement) -> tuple[Answers, TieBuild]:
    """The service's rank read (``rank_of`` with the row's tie grain) for every player: as
    without ties outside crowded slots; inside one, beside the same counter reads, every level-A
    item of the slot (one Query), every level-B item of the player's A chunk (one Query), and a
    COUNT from the start of the player's B chunk up to their key, all in the same round.
    """
    ties = spec.ties
    if ties is None or not spec.nearer_half:
        raise SimulationError("the tie model runs over the nearer-half read")
    layout = spec.layout
    hist = histogram_reads(board, spec, placement)
    base = _two_level(board, spec, hist)
    flat = placement.bucket * layout.fine + placement.slot
    slots = layout.coarse * layout.fine
    crowded_slot = np.bincount(flat, minlength=slots) > ties.group
    grain_of_slot = slot_grains(board, flat, ties, slots)
    crowded = crowded_slot[flat]
    idx = np.flatnonzero(crowded)
    a_read, b_read = np.zeros(board.size, dtype=np.int64), np.zeros(board.size, dtype=np.int64)
    if not len(idx):
        return base, TieBuild(crowded_slot, grain_of_slot, crowded, a_read, b_read, 0, 0)

    grain = grain_of_slot[flat[idx]]
    c = _chunks(board, idx, flat[idx], grain, ties)
    level_a = _level_read(c.a_id, c.a_first, c.a_count, c.a_size, TIE_A_BASE)
    level_b = _level_read(c.b_id, c.b_first, c.b_count, c.b_size, TIE_B_BASE)

    # The COUNT reads the index itself: where the player's key sits in their B chunk.
    own_b, in_chunk = c.b_size[c.b_id], idx - c.b_start
    if bool((in_chunk < 0).any()) or bool((in_chunk >= own_b).any()):
        raise SimulationError(f"{spec.name}: the board order and the tie chunks disagree")
    capped = in_chunk >= ties.cap
    before = hist.ahead[idx] + level_a.ahead + level_b.ahead
    rank = before + in_chunk + 1
    lo = np.where(capped, before + ties.cap + 1, rank)
    top = before + own_b + hist.unseen[idx]

    a_read[idx], b_read[idx] = level_a.items, level_b.items
    answers = _replaced(
        base,
        idx,
        exact=~capped,
        lo=lo,
        hi=np.where(capped, np.maximum(lo, top), rank),
        entries=np.minimum(in_chunk, ties.cap),
        extra_items=level_a.items + level_b.items,
        extra_bytes=level_a.nbytes + level_b.nbytes,
        extra_half=np.where(hist.strong[idx], STRONG, 1)
        * (query_half_units_array(level_a.nbytes) + query_half_units_array(level_b.nbytes)),
        hist_half=hist.half_units,
    )
    build = TieBuild(
        crowded_slot, grain_of_slot, crowded, a_read, b_read, len(c.a_size), len(c.b_size)
    )
    return answers, build


def _replaced(
    base: Answers,
    idx: IntArray,
    *,
    exact: BoolArray,
    lo: IntArray,
    hi: IntArray,
    entries: IntArray,
    extra_items: IntArray,
    extra_bytes: IntArray,
    extra_half: IntArray,
    hist_half: IntArray,
) -> Answers:
    """``base`` with the crowded-slot players' answers, their COUNT and their tie reads."""
    exact_all, lo_all, hi_all = base.exact.copy(), base.lo.copy(), base.hi.copy()
    exact_all[idx], lo_all[idx], hi_all[idx] = exact, lo, hi
    entries_all = base.entries.copy()
    entries_all[idx] = entries
    items, nbytes, half = base.counter_items.copy(), base.counter_bytes.copy(), hist_half.copy()
    items[idx] += extra_items
    nbytes[idx] += extra_bytes
    half[idx] += extra_half
    calls = base.calls.copy()
    calls[idx] += 2  # the level-A and level-B Queries, in the same round
    return Answers(
        exact=exact_all,
        lo=lo_all,
        hi=hi_all,
        entries=entries_all,
        counter_items=items,
        counter_bytes=nbytes,
        half_units=half + entry_half_units(entries_all),
        round_trips=base.round_trips,
        calls=calls,
    )


def model(board: Board, spec: LayoutSpec) -> tuple[Answers, Placement]:
    answers, placement, _ = model_with_build(board, spec)
    return answers, placement


def model_with_build(board: Board, spec: LayoutSpec) -> tuple[Answers, Placement, TieBuild | None]:
    """Every player's answer by ``spec``'s algorithm, and where it put tie counters, if any."""
    layout = spec.layout
    slot_map = verified_slot_map(layout.coarse, layout.fine)
    placement = Placement(*slot_map.place(board.score))
    if spec.seeds:
        return model_seeds(board, placement), placement, None
    if spec.ties is not None:
        answers, build = model_ties(board, spec, placement)
        return answers, placement, build
    return model_two_level(board, spec, placement), placement, None


# ---- the in-memory index behind the RankReader port ------------------------------------------------


class KeyView:
    """A board's rank keys in index order, each built by the real key encoder when looked at."""

    def __init__(self, board: Board) -> None:
        self._board = board

    def __len__(self) -> int:
        return self._board.size

    def __getitem__(self, i: int) -> str:
        return self._board.key(i).encode()


@dataclass
class Cost:
    """What one rank request read."""

    calls: int = 0
    round_trips: int = 0
    entries: int = 0
    counter_items: int = 0
    counter_bytes: int = 0
    half_units: int = 0


class SimRankReader:
    """``RankReader`` over one board held in memory, with DynamoDB's cost of every read.

    The counters are items as the adapter keeps them (coarse: one per bucket and shard; fine: one
    per slot), built from the players' placement; sizes come from ``item_bytes``. Calls that are
    in flight together count as one round trip.
    """

    def __init__(self, board: Board, layout: BucketLayout, placement: Placement) -> None:
        self._board = board
        self._keys = KeyView(board)
        self._layout = layout
        self._in_flight = 0
        self.cost = Cost()
        pairs, counts = np.unique(placement.bucket * SHARDS + board.shard, return_counts=True)
        self._coarse: list[dict[int, int]] = [{} for _ in range(SHARDS)]
        for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
            self._coarse[pair % SHARDS][pair // SHARDS] = count
        self._shard_bytes = [
            sum(coarse_item_bytes(s, b, n) for b, n in shard.items())
            for s, shard in enumerate(self._coarse)
        ]
        slots, counts = np.unique(
            placement.bucket * layout.fine + placement.slot, return_counts=True
        )
        self._fine: dict[int, dict[int, int]] = {}
        for flat, count in zip(slots.tolist(), counts.tolist(), strict=True):
            self._fine.setdefault(flat // layout.fine, {})[flat % layout.fine] = count
        self._fine_bytes: dict[int, int] = {}
        self._totals = {
            b: sum(shard.get(b, 0) for shard in self._coarse) for b in range(layout.coarse)
        }

    def reset(self) -> Cost:
        cost, self.cost = self.cost, Cost()
        return cost

    def _begin(self, calls: int) -> None:
        if self._in_flight == 0:
            self.cost.round_trips += 1
        self._in_flight += 1
        self.cost.calls += calls

    async def _end(self) -> None:
        await asyncio.sleep(0)  # let calls issued together overlap, as they would on the wire
        self._in_flight -= 1

    def _check_board(self, board_id: str) -> None:
        if board_id != BOARD_ID:
            raise SimulationError(f"asked for board {board_id!r}, simulating {BOARD_ID!r}")

    async def coarse_counts(self, board_id: str, *, strong: bool = False) -> Mapping[int, int]:
        """One Query per shard, each returning every coarse item of that shard."""
        self._check_board(board_id)
        self._begin(SHARDS)
        for shard, nbytes in zip(self._coarse, self._shard_bytes, strict=True):
            self.cost.counter_items += len(shard)
            self.cost.counter_bytes += nbytes
            self.cost.half_units += _consistency(strong) * query_half_units(nbytes)
        await self._end()
        return {b: n for b, n in self._totals.items() if n}

    async def fine_all(self, board_id: str, bucket: int) -> Mapping[int, int]:
        """One Query returning every fine item of ``bucket`` (the full read)."""
        self._check_board(board_id)
        self._begin(1)
        slots = self._fine.get(bucket, {})
        if bucket not in self._fine_bytes:
            self._fine_bytes[bucket] = sum(fine_item_bytes(bucket, s, n) for s, n in slots.items())
        self.cost.counter_items += len(slots)
        self.cost.counter_bytes += self._fine_bytes[bucket]
        self.cost.half_units += query_half_units(self._fine_bytes[bucket])
        await self._end()
        return dict(slots)

    async def fine_counts(
        self, board_id: str, bucket: int, first: int, last: int, *, strong: bool = False
    ) -> Mapping[int, int]:
        """One Query for the fine items of ``bucket`` with ``first <= slot <= last`` (a key
        condition ``BETWEEN``): what the service's ``rank_of`` reads."""
        self._check_board(board_id)
        self._begin(1)
        slots = {s: n for s, n in self._fine.get(bucket, {}).items() if first <= s <= last}
        nbytes = sum(fine_item_bytes(bucket, s, n) for s, n in slots.items())
        self.cost.counter_items += len(slots)
        self.cost.counter_bytes += nbytes
        self.cost.half_units += _consistency(strong) * query_half_units(nbytes)
        await self._end()
        return slots

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        """A COUNT Query with ``Limit``: it reads (and is charged for) the entries it counts; like
        the adapter, where the player's own entry is filtered out of the first ``limit``, it reads
        one more (in the same call here: the board holds one entry per player, at their key, so
        the range ending just below it never holds theirs)."""
        self._check_board(board_id)
        self._begin(1)
        first = bisect.bisect_left(self._keys, low)
        end = bisect.bisect_right(self._keys, high)
        scanned = min(end - first, limit)
        count = scanned
        if exclude_player is not None:
            own = sum(
                1
                for i in range(first, first + scanned)
                if player_id(int(self._board.player[i])) == exclude_player
            )
            scanned = min(end - first, limit + own)
            count = scanned - own
        self.cost.entries += scanned
        self.cost.half_units += query_half_units(scanned * INDEX_ENTRY_BYTES)
        await self._end()
        return min(count, limit), count >= limit

    async def tie_counts(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        strong: bool = False,
    ) -> TieCounts:
        """A layout without tie counters gives no query a grain, so this is never asked."""
        raise SimulationError("this layout has no tie counters")

    async def seeds_histogram(self, board_id: str) -> Mapping[int, int]:
        """The seeds' one metadata row (a GetItem): all 128 bucket counters."""
        self._check_board(board_id)
        if self._layout != SEEDS_LAYOUT:
            raise SimulationError("the seeds' histogram is 128 log buckets")
        self._begin(1)
        counts = [self._totals[b] for b in range(SEEDS_LAYOUT.coarse)]
        nbytes = seeds_meta_bytes(counts, sum(counts))
        self.cost.counter_items += 1
        self.cost.counter_bytes += nbytes
        self.cost.half_units += query_half_units(nbytes)
        await self._end()
        return dict(enumerate(counts))


@dataclass(frozen=True)
class Answer:
    exact: bool
    lo: int
    hi: int


def answer_of(rank: Rank) -> Answer:
    if isinstance(rank, ExactRank):
        return Answer(exact=True, lo=rank.rank, hi=rank.rank)
    if isinstance(rank, EstimatedRank):
        return Answer(exact=False, lo=rank.rank_range[0], hi=rank.rank_range[1])
    raise SimulationError(f"not a rank: {rank!r}")


async def seeds_rank_of(reader: SimRankReader, key: RankKey, *, cap: int) -> Answer:
    """The seeds' algorithm, as their write-up describes it (bench only)."""
    ahead, capped = await reader.count_keys(
        BOARD_ID, TOP_OF_BOARD, key_just_below(key.encode()), limit=cap
    )
    if not capped:
        return Answer(exact=True, lo=ahead + 1, hi=ahead + 1)
    counts = await reader.seeds_histogram(BOARD_ID)
    bucket = SEEDS_LAYOUT.coarse_of(key.score)
    higher = sum(n for b, n in counts.items() if b > bucket)
    lo = max(higher + 1, cap + 1)
    return Answer(exact=False, lo=lo, hi=max(lo, higher + counts.get(bucket, 0)))


async def rank_of_full_read(
    reader: SimRankReader, layout: BucketLayout, key: RankKey, *, cap: int
) -> Rank:
    """The earlier ``rank_of``, kept here for comparison: it reads every fine counter of the
    player's bucket, and counts the slots above the player's."""
    bucket, slot = layout.fine_of(key.score)
    _, slot_hi = layout.fine_bounds(bucket, slot)
    coarse, fine, (ahead_in_slot, capped) = await asyncio.gather(
        reader.coarse_counts(BOARD_ID),
        reader.fine_all(BOARD_ID, bucket),
        reader.count_keys(
            BOARD_ID,
            score_prefix(slot_hi - 1),
            key_just_below(key.encode()),
            limit=cap,
            exclude_player=key.player_id,  # as the service's rank code does
        ),
    )
    ahead = sum(n for b, n in coarse.items() if b > bucket)
    ahead += sum(n for s, n in fine.items() if s > slot)
    return rank_from_counts(
        ahead_in_higher_buckets=max(0, ahead),
        ahead_in_bucket=ahead_in_slot,
        bucket_capped=capped,
        bucket_size=fine.get(slot, 0),
        player_count=sum(coarse.values()),
    )


# ---- the tie counters behind the same port ------------------------------------------------------


class SimTieReader(SimRankReader):
    """``SimRankReader`` with the tie counters a builder would write for ``ties``.

    Built from the board by the definition (each crowded slot's grain by trying ``L`` from
    ``MAX_GRAIN`` down), not from the vectorised model's arrays, so that the cross-check tests
    the model's build too.
    """

    def __init__(
        self, board: Board, layout: BucketLayout, placement: Placement, ties: Ties
    ) -> None:
        super().__init__(board, layout, placement)
        self._grains: dict[tuple[int, int], int] = {}
        self._tie_keys: dict[tuple[int, int], list[str]] = {}
        self._tie_counts: dict[tuple[int, int], dict[str, int]] = {}
        flat = placement.bucket * layout.fine + placement.slot
        bounds = np.flatnonzero(np.diff(flat)) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        ends = np.concatenate((bounds, [board.size])).tolist()
        for start, end in zip(starts, ends, strict=True):
            if end - start > ties.group:
                place = divmod(int(flat[start]), layout.fine)
                self._build_slot(place, board.score[start:end], board.achieved_ms[start:end], ties)

    def _build_slot(
        self, place: tuple[int, int], score: IntArray, millis: IntArray, ties: Ties
    ) -> None:
        grain = next(
            (
                g
                for g in range(MAX_GRAIN, -1, -1)
                if _largest_group(score, millis >> g) <= ties.group
            ),
            0,
        )
        chunk_b = millis >> grain
        groups_a, sizes_a = np.unique(
            np.stack([score, chunk_b >> ties.fan_bits], axis=1), axis=0, return_counts=True
        )
        groups_b, sizes_b = np.unique(
            np.stack([score, chunk_b], axis=1), axis=0, return_counts=True
        )
        counts = {
            tie_a_key(s, a): n
            for (s, a), n in zip(groups_a.tolist(), sizes_a.tolist(), strict=True)
        }
        counts.update(
            {
                tie_b_key(s, b >> ties.fan_bits, b): n
                for (s, b), n in zip(groups_b.tolist(), sizes_b.tolist(), strict=True)
            }
        )
        self._grains[place] = grain
        self._tie_counts[place] = counts
        self._tie_keys[place] = sorted(counts)

    def grain_of(self, key: RankKey) -> int | None:
        """The grain the player's row would carry (``tieGrain``): their slot's, if it has one."""
        return self._grains.get(self._layout.fine_of(key.score))

    def _items(self, bucket: int, slot: int, prefix: str, strong: bool) -> dict[str, int]:
        """One ``begins_with`` Query of a slot's tie counters, charged as the adapter's is."""
        keys = self._tie_keys.get((bucket, slot), [])
        found = keys[bisect.bisect_left(keys, prefix) : bisect.bisect_left(keys, prefix + "\uffff")]
        counts = self._tie_counts.get((bucket, slot), {})
        items = {key: counts[key] for key in found}
        nbytes = sum(tie_item_bytes(bucket, slot, key, n) for key, n in items.items())
        self.cost.counter_items += len(items)
        self.cost.counter_bytes += nbytes
        self.cost.half_units += _consistency(strong) * query_half_units(nbytes)
        return items

    async def tie_counts(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        strong: bool = False,
    ) -> TieCounts:
        """The slot's level-A items and the level-B items under ``b_prefix``: two Queries sent
        together, as ``CounterItems.tie_counts`` sends them. The model cuts no chunk (a moment
        crowded past the cap stays ranges here, where the service cuts it by player), so no
        query asks for level C."""
        if c_prefix is not None:
            raise SimulationError("the model cuts no chunk")
        self._check_board(board_id)
        self._begin(2)
        counts = TieCounts(
            self._items(bucket, slot, "A#", strong),
            self._items(bucket, slot, b_prefix, strong),
            sealed=True,  # the state a build leaves; its seal is a key of a few bytes
        )
        await self._end()
        return counts


def _largest_group(score: IntArray, chunk: IntArray) -> int:
    """The most entries of one ``(score, chunk)`` group, the arrays in board order."""
    starts = np.flatnonzero(_runs(score, chunk))
    return int(np.diff(np.append(starts, len(score))).max())


# ---- the cross-check ------------------------------------------------------------------------------


def choose_sample(
    answers: Answers, size: int, rng: np.random.Generator, *, focus: BoolArray | None = None
) -> IntArray:
    """Players to run through the real code: the first and last, half at random, and the rest from
    the two sides of the cap (the last exact answers and the first ranges of their slots), or from
    ``focus`` (the crowded slots' players, for the tie design) when given."""
    n = len(answers.exact)
    if size >= n:
        return np.arange(n, dtype=np.int64)
    picked = {0, n - 1}
    edges = np.flatnonzero(answers.entries >= CAP - 1 if focus is None else focus)
    if len(edges):
        picked.update(edges[rng.integers(0, len(edges), size // 2)].tolist())
    while len(picked) < size:
        picked.update(rng.integers(0, n, size - len(picked)).tolist())
    return np.array(sorted(picked), dtype=np.int64)


def _expected_cost(answers: Answers, i: int) -> Cost:
    return Cost(
        calls=int(answers.calls[i]),
        round_trips=int(answers.round_trips[i]),
        entries=int(answers.entries[i]),
        counter_items=int(answers.counter_items[i]),
        counter_bytes=int(answers.counter_bytes[i]),
        half_units=int(answers.half_units[i]),
    )


def _compare(
    board: Board, spec: LayoutSpec, answers: Answers, i: int, got: Answer, cost: Cost
) -> list[str]:
    rank = i + 1
    problems = []
    expected = Answer(bool(answers.exact[i]), int(answers.lo[i]), int(answers.hi[i]))
    if got != expected:
        problems.append(f"answer {got}, model {expected}")
    if got.exact and got.lo != rank:
        problems.append(f"exact rank {got.lo}, true rank {rank}")
    if not got.lo <= rank <= got.hi:
        problems.append(f"range {got.lo}..{got.hi} misses the true rank {rank}")
    if cost != _expected_cost(answers, i):
        problems.append(f"cost {cost}, model {_expected_cost(answers, i)}")
    return [f"player at index {i} (score {int(board.score[i])}): {p}" for p in problems]


def cross_check(
    board: Board, spec: LayoutSpec, answers: Answers, placement: Placement, sample: IntArray
) -> int:
    """Run the real rank code for ``sample`` (the service's ``rank_of``, with each player's tie
    grain where the layout has tie counters); raise ``SimulationError`` on any disagreement."""
    ties = spec.ties
    reader = (
        SimRankReader(board, spec.layout, placement)
        if ties is None
        else SimTieReader(board, spec.layout, placement, ties)
    )
    keys = KeyView(board)

    async def run() -> list[str]:
        problems: list[str] = []
        for i in sample.tolist():
            # The index must really be in key order around the player, or bisection lies.
            if (i > 0 and keys[i - 1] >= keys[i]) or (
                i + 1 < board.size and keys[i] >= keys[i + 1]
            ):
                problems.append(f"index out of order at {i}")
            key = board.key(i)
            reader.reset()
            if spec.seeds:
                got = await seeds_rank_of(reader, key, cap=CAP)
            elif spec.nearer_half:  # the service's own rank code
                grain = reader.grain_of(key) if isinstance(reader, SimTieReader) else None
                query = RankQuery(BOARD_ID, key, tie_mark=grain)
                cap = CAP if ties is None else ties.cap
                got = answer_of(await rank_of(reader, spec.layout, query, cap=cap))
            else:
                got = answer_of(await rank_of_full_read(reader, spec.layout, key, cap=CAP))
            problems += _compare(board, spec, answers, i, got, reader.reset())
        return problems

    problems = asyncio.run(run())
    if problems:
        shown = "\n  ".join(problems[:10])
        raise SimulationError(
            f"{board.distribution.name} {board.size:,} {spec.name}: the real rank code and the "
            f"model disagree for {len(problems)} checks:\n  {shown}"
        )
    return len(sample)


# ---- writes ---------------------------------------------------------------------------------------


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
        bucket, _ = verified_slot_map(SEEDS_LAYOUT.coarse, 1).place(board.score)
        counts = np.bincount(bucket, minlength=SEEDS_LAYOUT.coarse).tolist()
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


# ---- figures --------------------------------------------------------------------------------------


def order_statistic(values: IntArray, q: float) -> int:
    """The nearest-rank ``q`` quantile: the smallest value with at least ``q`` of them at or below."""
    k = max(0, math.ceil(q * len(values)) - 1)
    return int(np.partition(values, k)[k])


@dataclass(frozen=True)
class Row:
    distribution: str
    size: int
    layout: str
    exact_share: float
    entries: tuple[int, int, int]
    """p50, p99, max."""
    width: tuple[int, int] | None
    """p50, p99 of ``hi - lo`` over the estimated answers; ``None`` when every answer is exact."""
    counter_items_p99: int
    counter_bytes: tuple[int, int, int]
    rcu: tuple[float, float, float]
    """p50, p99, max, eventually consistent."""
    round_trips_max: int
    writes: Writes
    checked: int
    misses: int
    """Ranges that miss the true rank, and exact ranks that are not it, over every player."""
    ties: TieFigures | None = None


@dataclass(frozen=True)
class TieFigures:
    """Where the tie design put counters on a board, and what the reads of them returned."""

    crowded_slots: int
    crowded_players: float
    """Share of the board's players in crowded slots."""
    a_items: int
    b_items: int
    grains: tuple[int, int]
    """Least and greatest grain of the crowded slots."""
    items_read_p99: int
    """Level-A plus level-B items one read of a crowded-slot player returned, p99 over them."""

    @classmethod
    def of(cls, build: TieBuild) -> TieFigures | None:
        if not build.crowded_slots:
            return None
        grains = build.grain_of_slot[build.crowded_slot]
        read = (build.a_read + build.b_read)[build.crowded]
        return cls(
            crowded_slots=build.crowded_slots,
            crowded_players=float(build.crowded.mean()),
            a_items=build.a_items,
            b_items=build.b_items,
            grains=(int(grains.min()), int(grains.max())),
            items_read_p99=order_statistic(read, 0.99),
        )


def summarise(
    board: Board,
    spec: LayoutSpec,
    answers: Answers,
    writes: Writes,
    checked: int,
    build: TieBuild | None = None,
) -> Row:
    rank = _ranks(board)
    misses = int((answers.exact & (answers.lo != rank)).sum())
    misses += int(((answers.lo > rank) | (answers.hi < rank)).sum())
    estimated = ~answers.exact
    widths = (answers.hi - answers.lo)[estimated]
    return Row(
        distribution=board.distribution.name,
        size=board.size,
        layout=spec.name,
        exact_share=float(answers.exact.mean()),
        entries=(
            order_statistic(answers.entries, 0.5),
            order_statistic(answers.entries, 0.99),
            int(answers.entries.max()),
        ),
        width=(order_statistic(widths, 0.5), order_statistic(widths, 0.99))
        if len(widths)
        else None,
        counter_items_p99=order_statistic(answers.counter_items, 0.99),
        counter_bytes=(
            order_statistic(answers.counter_bytes, 0.5),
            order_statistic(answers.counter_bytes, 0.99),
            int(answers.counter_bytes.max()),
        ),
        rcu=(
            order_statistic(answers.half_units, 0.5) / 2,
            order_statistic(answers.half_units, 0.99) / 2,
            int(answers.half_units.max()) / 2,
        ),
        round_trips_max=int(answers.round_trips.max()),
        writes=writes,
        checked=checked,
        misses=misses,
        ties=None if build is None else TieFigures.of(build),
    )


@dataclass(frozen=True)
class BoardResult:
    distribution: str
    size: int
    tie_ceiling: float
    most_tied: int
    """Players on the board's most crowded single score."""
    seconds: float
    rows: list[Row]


@dataclass
class Run:
    results: list[BoardResult] = field(default_factory=list)
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    seconds: float = 0.0


def simulate_board(
    distribution: Distribution,
    size: int,
    specs: Sequence[LayoutSpec],
    *,
    sample: int,
    seed: int,
    log: Callable[[str], None] = lambda _: None,
) -> BoardResult:
    started = time.perf_counter()
    index = [d.name for d in DISTRIBUTIONS].index(distribution.name)
    rng = np.random.default_rng([seed, index, size])
    board = build_board(distribution, size, rng)
    improvements = draw_improvements(board, rng, 200_000)
    _, tied = np.unique(board.score, return_counts=True)
    rows = []
    for spec in specs:
        lap = time.perf_counter()
        answers, placement, build = model_with_build(board, spec)
        focus = None if build is None or not build.crowded.any() else build.crowded
        picked = choose_sample(answers, sample, rng, focus=focus)
        checked = cross_check(board, spec, answers, placement, picked)
        writes = counter_writes(spec, board, improvements)
        row = summarise(board, spec, answers, writes, checked, build)
        if row.misses:
            raise SimulationError(f"{spec.name}: {row.misses} answers miss the true rank")
        rows.append(row)
        log(
            f"  {distribution.name:>9} {size:>10,} {spec.name:<38} exact {row.exact_share:8.4%}"
            f"  checked {checked:,}  {time.perf_counter() - lap:5.1f}s"
        )
    return BoardResult(
        distribution=distribution.name,
        size=size,
        tie_ceiling=tie_ceiling(board),
        most_tied=int(tied.max()),
        seconds=time.perf_counter() - started,
        rows=rows,
    )


def simulate(
    distributions: Sequence[Distribution],
    sizes: Sequence[int],
    specs: Sequence[LayoutSpec],
    *,
    sample: int,
    seed: int,
    log: Callable[[str], None] = lambda _: None,
) -> Run:
    run = Run()
    clock = time.perf_counter()
    for size in sizes:
        for distribution in distributions:
            run.results.append(
                simulate_board(distribution, size, specs, sample=sample, seed=seed, log=log)
            )
    run.seconds = time.perf_counter() - clock
    return run


# ---- the report -----------------------------------------------------------------------------------

RECOMMENDATION_START: Final = "<!-- recommendation:start -->"
RECOMMENDATION_END: Final = "<!-- recommendation:end -->"


def _kb(nbytes: int) -> str:
    return f"{nbytes / 1024:.1f}"


def _units(value: float) -> str:
    return f"{value:g}"


def _row_cells(row: Row) -> list[str]:
    width = "-" if row.width is None else f"{row.width[0]:,} / {row.width[1]:,}"
    return [
        row.layout,
        f"{row.exact_share:.4%}",
        " / ".join(f"{v:,}" for v in row.entries),
        width,
        f"{row.counter_items_p99:,}",
        " / ".join(_kb(v) for v in row.counter_bytes),
        " / ".join(_units(v) for v in row.rcu),
        f"{row.round_trips_max} + 1",
        f"{row.writes.new_player} / {row.writes.improvement_max} ({row.writes.improvement_mean:.2f})",
    ]


TABLE_HEADER: Final = (
    "| layout | exact | entries read p50 / p99 / max | range width p50 / p99 | counter items p99 "
    "| counter KB p50 / p99 / max | RCU p50 / p99 / max | round trips | counter items written: "
    "new / improvement max (mean) |\n"
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
)


def board_table(result: BoardResult) -> str:
    lines = [
        f"#### {result.distribution}, {result.size:,} players",
        "",
        f"Most players on one score: {result.most_tied:,}; best exact share any score-keyed "
        f"histogram can give with a {CAP:,} cap: {result.tie_ceiling:.4%}. "
        f"Real-code cross-check: {result.rows[0].checked:,} players per layout. "
        f"({result.seconds:.0f} s)",
        "",
        TABLE_HEADER,
    ]
    lines += ["| " + " | ".join(_row_cells(row)) + " |" for row in result.rows]
    for row in result.rows:
        if row.ties is not None:
            t = row.ties
            lines += [
                "",
                f"Tie counters ({row.layout}): {t.crowded_slots:,} crowded slots holding "
                f"{t.crowded_players:.2%} of the players; {t.a_items:,} level-A and "
                f"{t.b_items:,} level-B items on the board; grains {t.grains[0]}..{t.grains[1]} "
                f"(chunks of 2^L ms); a crowded-slot rank read returns {t.items_read_p99:,} tie "
                "items at p99.",
            ]
    return "\n".join(lines)


def targets(run: Run, spec: LayoutSpec, size: int = 1_000_000) -> str:
    """The targets table of ``spec`` on ``size``-player boards. Counter items written per board:
    at most 4 for the score-keyed layouts (the layout study's target), at most 8 with tie counters
    (issue 16's)."""
    items = 4 if spec.ties is None else 8
    lines = [
        f"| distribution | exact (target 99%) | entries p99 (target {CAP:,}) | counter KB p99 "
        f"(target 64) | round trips | counter items per submission, max (target {items}) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for result in run.results:
        if result.size != size:
            continue
        for row in result.rows:
            if row.layout != spec.name:
                continue
            worst = max(row.writes.new_player, row.writes.improvement_max)
            lines.append(
                f"| {result.distribution} | {row.exact_share:.4%} "
                f"{'met' if row.exact_share >= 0.99 else 'NOT met'} "
                f"| {row.entries[1]:,} {'met' if row.entries[1] <= CAP else 'NOT met'} "
                f"| {_kb(row.counter_bytes[1])} "
                f"{'met' if row.counter_bytes[1] <= 64 * 1024 else 'NOT met'} "
                f"| {row.round_trips_max} + 1 (the player's row) "
                f"| {worst} {'met' if worst <= items else 'NOT met'} |"
            )
    return "\n".join(lines) if len(lines) > 2 else f"(no {size:,}-player boards in this run)"


def render(run: Run, *, command: str, recommendation: str) -> str:
    sizes = sorted({r.size for r in run.results})
    distributions = [d for d in DISTRIBUTIONS if any(r.distribution == d.name for r in run.results)]
    checked = sum(row.checked for r in run.results for row in r.rows)
    parts = [
        "# Rank cost and exactness at scale",
        "",
        "Generated by `bench/rank_sim.py`; the recommendation between the markers is written by hand "
        "and kept when the file is regenerated.",
        "",
        RECOMMENDATION_START,
        recommendation.strip(),
        RECOMMENDATION_END,
        "",
        "## The run",
        "",
        f"- Command: `{command}`",
        f"- Started {run.started:%Y-%m-%d %H:%M} UTC; took {run.seconds / 60:.1f} minutes on "
        f"{os.cpu_count()} CPUs ({platform.python_implementation()} {platform.python_version()}, "
        f"numpy {np.__version__}).",
        f"- Board sizes: {', '.join(f'{s:,}' for s in sizes)}. Every player of every board is "
        "ranked by the vectorised model; the real `rank_of` (and the bench's seeds algorithm) ran "
        f"over the in-memory index for {checked:,} players in all and agreed with the model on "
        "every one (answer, entries read, counter items and bytes, read units, round trips, and "
        "the true rank).",
        "",
        "## Distributions",
        "",
        *[f"- **{d.name}**: {d.description}." for d in distributions],
        "",
        "Every player has a distinct achievedAt (so equal scores are ordered by it, as on a real "
        "board), except the same-moment board's shared millisecond, where the player id orders "
        "them, as the rank key does; coarse counter increments land on one of 4 shards at random, as the adapter's do.",
        "",
        "## Cost model",
        "",
        f"- One RankIndex entry read: {INDEX_ENTRY_BYTES} bytes (leaderboardId {len(BOARD_ID)} B, "
        "rankKey 38 B, playerId 10 B, displayName 12 B, country 2 B, lastPlayedAt 24 B, plus the "
        "attribute names). A COUNT Query is charged for every entry it counts.",
        f"- Counter items: coarse `hist#{BOARD_ID}#c<shard>` / `<bucket:04d>`, fine "
        f"`hist#{BOARD_ID}#f<bucket:04d>` / `<slot:04d>`, attribute `n`; "
        f"{coarse_item_bytes(0, 0, 1_000)}-{coarse_item_bytes(0, 0, 1_234_567)} bytes (coarse), "
        f"{fine_item_bytes(0, 0, 1_000)}-{fine_item_bytes(0, 0, 1_234_567)} bytes (fine). Only "
        "non-empty counters are items.",
        f"- A rank read: {SHARDS} coarse Queries (one per shard) + 1 fine Query + 1 COUNT Query, "
        "all in one round trip after the read of the player's own row. The service's first "
        f"setting had {SHARDS} coarse shards, as modelled here; it now has 2 (decision 0006), "
        "which halves the coarse Queries and items, so the counter figures here are an upper "
        "bound. RCU: each Query's item bytes "
        "rounded up to 4 KB, 0.5 RCU per 4 KB (eventually consistent), at least 0.5 per Query. "
        "The row read (strongly consistent, under 4 KB: 1 RCU) is the same for every layout and "
        "the seeds, and is not in the RCU columns.",
        f"- The seeds: a COUNT from the top of the board, capped at {CAP:,}; when capped, a read of "
        "the one metadata row (128 `bucketNNN` counters, about "
        f"{seeds_meta_bytes([1_000] * 128, 10**6):,} bytes) in a second round trip. Their "
        f"{CAP:,}-entry COUNT alone costs "
        f"{_units(query_half_units(CAP * INDEX_ENTRY_BYTES) / 2)} RCU. The range's low end is "
        f"at least {CAP + 1:,} (the capped count proves it).",
        '- Tie counters (the layout named "ties below the score", `app.domain.ties`): a fine '
        f"slot holding more than {TIES.ties.group if TIES.ties else 0:,} players is crowded and "
        "gets a grain L; its level-A items count `(score, achievedAt >> (L + 6))`, its level-B "
        "items `(score, achievedAt >> L)` (partition `hist#<board>#t<bucket>#<slot>`, sort keys "
        f"`A#<score prefix><chunk>`, {TIE_A_BASE + 2} B, and `B#<...>#<chunk>`, {TIE_B_BASE + 2} "
        "B, with a small count). A crowded-slot player's rank read adds two Queries to the same "
        "round: every level-A item of the slot and every level-B item of their A chunk; the "
        "COUNT runs from the start of their B chunk, not of the slot. Each player's grain is on "
        "their row (read first, as today), so the round is still one.",
        "- Range width is `hi - lo` of the estimated answers only (the seeds' 2,501-row fixture "
        "gave 500). Percentiles are nearest-rank.",
        "- Counter items written: a new player writes a coarse and a fine item; an improvement "
        "writes -1/+1 to the coarse items when the bucket changes and to the fine items when the "
        "slot changes (0, 2 or 4 items); improvements are 200,000 players per board re-drawing "
        "from the board's distribution, those who beat their best. The seeds wrote their one "
        "metadata row on every accepted score.",
        "",
        "## Targets at 1,000,000 players",
        "",
        *_targets_sections(run, 1_000_000),
        "## Targets at 10,000,000 players",
        "",
        *_targets_sections(run, 10_000_000),
        "## Summary by board size",
        "",
        "Exact share per distribution; the other columns are the worst over the distributions.",
        "",
        *summary_tables(run, distributions),
        "## Counter writes",
        "",
        "| layout | items per new player | items per improvement, max | mean | counter WCU, "
        "costliest submission (transactional) |",
        "| --- | ---: | ---: | ---: | ---: |",
        *writes_table(run),
        "",
        "## Every board",
        "",
        "Columns: share of exact answers; index entries one rank read counts; `hi - lo` of the "
        "ranges; counter items and kilobytes read; eventually consistent RCU of the counter and "
        "COUNT queries; round trips after the row read; counter items written.",
        "",
    ]
    for size in sizes:
        parts.append(f"### {size:,} players")
        parts.append("")
        for result in run.results:
            if result.size == size:
                parts += [board_table(result), ""]
    return "\n".join(parts)


def _targets_sections(run: Run, size: int) -> list[str]:
    present = {row.layout for result in run.results for row in result.rows}
    described = (
        (DEFAULT, "The service's layout and read"),
        (TIES, "The same with tie counters in crowded slots"),
        (FULL_READ, "The first default, every fine counter read"),
    )
    lines: list[str] = []
    for spec, words in described:
        if spec.name in present:
            lines += [f"{words}, {spec.name}:", "", targets(run, spec, size), ""]
    return lines


def summary_tables(run: Run, distributions: Sequence[Distribution]) -> list[str]:
    lines: list[str] = []
    for size in sorted({r.size for r in run.results}):
        results = [
            r
            for d in distributions
            for r in run.results
            if r.size == size and r.distribution == d.name
        ]
        names = [r.distribution for r in results]
        lines += [
            f"### {size:,} players",
            "",
            "| layout | "
            + " | ".join(f"exact, {name}" for name in names)
            + " | entries p99 | counter KB p99 | RCU p50 | RCU p99 |",
            "| --- | " + " | ".join("---:" for _ in names) + " | ---: | ---: | ---: | ---: |",
            "| best any score-keyed histogram can do | "
            + " | ".join(f"{r.tie_ceiling:.2%}" for r in results)
            + " | | | | |",
        ]
        for i, row in enumerate(results[0].rows if results else []):
            rows = [r.rows[i] for r in results]
            lines.append(
                f"| {row.layout} | "
                + " | ".join(f"{r.exact_share:.2%}" for r in rows)
                + f" | {max(r.entries[1] for r in rows):,}"
                + f" | {_kb(max(r.counter_bytes[1] for r in rows))}"
                + f" | {_units(max(r.rcu[0] for r in rows))}"
                + f" | {_units(max(r.rcu[1] for r in rows))} |"
            )
        lines.append("")
    return lines


def writes_table(run: Run) -> list[str]:
    """Counter writes per layout, worst over the boards of the run."""
    lines = []
    names = [row.layout for row in run.results[0].rows] if run.results else []
    for name in names:
        rows = [row for r in run.results for row in r.rows if row.layout == name]
        mean = sum(row.writes.improvement_mean for row in rows) / len(rows)
        lines.append(
            f"| {name} | {max(r.writes.new_player for r in rows)} "
            f"| {max(r.writes.improvement_max for r in rows)} | {mean:.2f} (over boards) "
            f"| {max(r.writes.counter_wcu_max for r in rows)} |"
        )
    return lines


def kept_recommendation(path: Path) -> str:
    """The hand-written block of an earlier report at ``path``, if any."""
    if not path.exists():
        return "## Recommendation\n\n(To be written from the figures below.)"
    text = path.read_text(encoding="utf-8")
    start, end = text.find(RECOMMENDATION_START), text.find(RECOMMENDATION_END)
    if start < 0 or end < start:
        return "## Recommendation\n\n(To be written from the figures below.)"
    return text[start + len(RECOMMENDATION_START) : end]


# ---- the command ----------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.rank_sim", description=__doc__)
    parser.add_argument(
        "--sizes",
        default="10000,100000,1000000,10000000",
        help="board sizes, comma-separated (default: 10^4 to 10^7)",
    )
    parser.add_argument(
        "--distributions",
        default=",".join(d.name for d in DISTRIBUTIONS),
        help="score distributions, comma-separated",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=2_000,
        help="players per board and layout run through the real rank code (default 2,000)",
    )
    parser.add_argument(
        "--layouts",
        choices=sorted(LAYOUT_SETS),
        default="all",
        help="every layout (default), or the tie comparison: the seeds, the shipped layout "
        "without and with tie counters",
    )
    parser.add_argument("--seed", type=int, default=20_261_130)
    parser.add_argument(
        "--quick", action="store_true", help="10^4 and 10^5 players, 200 players cross-checked"
    )
    parser.add_argument("--out", type=Path, help="write the Markdown report here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [10_000, 100_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    sample = min(args.sample, 200) if args.quick else args.sample
    by_name = {d.name: d for d in DISTRIBUTIONS}
    distributions = [by_name[name] for name in args.distributions.split(",")]

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    specs = LAYOUT_SETS[args.layouts]
    log(f"rank simulation: sizes {sizes}, {len(specs)} layouts, {sample:,} players checked each")
    try:
        run = simulate(distributions, sizes, specs, sample=sample, seed=args.seed, log=log)
    except SimulationError as exc:
        log(f"FAILED: {exc}")
        return 1
    command = "uv run python -m bench.rank_sim " + " ".join(
        sys.argv[1:] if argv is None else list(argv)
    )
    if args.out is not None:
        report = render(run, command=command.strip(), recommendation=kept_recommendation(args.out))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report + "\n", encoding="utf-8")
        log(f"wrote {args.out}")
    else:
        print(render(run, command=command.strip(), recommendation=""))
    log(f"done in {run.seconds / 60:.1f} minutes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
