"""``SimRankReader``: an in-memory ``RankReader`` (a sorted index of real rank keys and the
counter items, with cost accounting) for the real ``rank_of`` to run over."""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey, key_just_below, score_prefix
from app.domain.ranks import EstimatedRank, ExactRank, Rank, rank_from_counts
from app.domain.ties import TieCounts
from app.services.ports import SlotAddress, StoredTies
from bench.rank_sim.boards import Board
from bench.rank_sim.costs import (
    BOARD_ID,
    INDEX_ENTRY_BYTES,
    SHARDS,
    TOP_OF_BOARD,
    _consistency,
    coarse_item_bytes,
    fine_item_bytes,
    player_id,
    query_half_units,
    seeds_meta_bytes,
)
from bench.rank_sim.model import EARLIER_DESIGN_LAYOUT, Placement, SimulationError


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

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        """One Query per shard, each returning every coarse item of that shard."""
        self._check_board(board_id)
        self._begin(SHARDS)
        for shard, nbytes in zip(self._coarse, self._shard_bytes, strict=True):
            self.cost.counter_items += len(shard)
            self.cost.counter_bytes += nbytes
            self.cost.half_units += _consistency(consistent) * query_half_units(nbytes)
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
        self,
        board_id: str,
        bucket: int,
        first: int,
        last: int,
        *,
        consistent: bool = False,
        recent: bool = False,
    ) -> Mapping[int, int]:
        """One Query for the fine items of ``bucket`` with ``first <= slot <= last`` (a key
        condition ``BETWEEN``): what the service's ``rank_of`` reads."""
        self._check_board(board_id)
        self._begin(1)
        slots = {s: n for s, n in self._fine.get(bucket, {}).items() if first <= s <= last}
        nbytes = sum(fine_item_bytes(bucket, s, n) for s, n in slots.items())
        self.cost.counter_items += len(slots)
        self.cost.counter_bytes += nbytes
        self.cost.half_units += _consistency(consistent) * query_half_units(nbytes)
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
        slot: SlotAddress,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
        recent: bool = False,
    ) -> TieCounts:
        """A layout without tie counters gives no query a grain, so this is never asked."""
        raise SimulationError("this layout has no tie counters")

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None

    async def seeds_histogram(self, board_id: str) -> Mapping[int, int]:
        """The earlier Lambda design's one metadata row (a GetItem): all 128 bucket counters."""
        self._check_board(board_id)
        if self._layout != EARLIER_DESIGN_LAYOUT:
            raise SimulationError("the earlier Lambda design's histogram is 128 log buckets")
        self._begin(1)
        counts = [self._totals[b] for b in range(EARLIER_DESIGN_LAYOUT.coarse)]
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
    """The earlier Lambda design's algorithm, as its write-up describes it (bench only)."""
    ahead, capped = await reader.count_keys(
        BOARD_ID, TOP_OF_BOARD, key_just_below(key.encode()), limit=cap
    )
    if not capped:
        return Answer(exact=True, lo=ahead + 1, hi=ahead + 1)
    counts = await reader.seeds_histogram(BOARD_ID)
    bucket = EARLIER_DESIGN_LAYOUT.coarse_of(key.score)
    higher = sum(n for b, n in counts.items() if b > bucket)
    lo = max(higher + 1, cap + 1)
    return Answer(exact=False, lo=lo, hi=max(lo, higher + counts.get(bucket, 0)))


async def rank_of_full_read(
    reader: SimRankReader, layout: BucketLayout, key: RankKey, *, cap: int
) -> Rank:
    """The earlier ``rank_of``, kept here for comparison: it reads every fine counter of the
    player's bucket, and counts the slots above the player's."""
    bucket, slot = layout.slot_of(key.score)
    _, slot_hi = layout.slot_bounds(bucket, slot)
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
