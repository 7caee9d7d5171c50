"""``SimTieReader``: the same in-memory reader with a board's tie counters."""

from __future__ import annotations

import bisect

import numpy as np

from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey
from app.domain.ties import MAX_GRAIN, TieCounts
from app.services.ports import SlotAddress, StoredTies
from bench.rank_sim.boards import Board
from bench.rank_sim.costs import IntArray, _consistency, query_half_units
from bench.rank_sim.model import Placement, SimulationError, Ties
from bench.rank_sim.readers import SimRankReader
from bench.rank_sim.tie_model import _runs, tie_a_key, tie_b_key, tie_item_bytes


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
        return self._grains.get(self._layout.slot_of(key.score))

    def _items(self, bucket: int, slot: int, prefix: str, consistent: bool) -> dict[str, int]:
        """One ``begins_with`` Query of a slot's tie counters, charged as the adapter's is."""
        keys = self._tie_keys.get((bucket, slot), [])
        found = keys[bisect.bisect_left(keys, prefix) : bisect.bisect_left(keys, prefix + "\uffff")]
        counts = self._tie_counts.get((bucket, slot), {})
        items = {key: counts[key] for key in found}
        nbytes = sum(tie_item_bytes(bucket, slot, key, n) for key, n in items.items())
        self.cost.counter_items += len(items)
        self.cost.counter_bytes += nbytes
        self.cost.half_units += _consistency(consistent) * query_half_units(nbytes)
        return items

    async def tie_counts(
        self,
        slot: SlotAddress,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
        recent: bool = False,
    ) -> TieCounts:
        """The slot's level-A items and the level-B items under ``b_prefix``: two Queries sent
        together, as ``CounterItems.tie_counts`` sends them. The model cuts no chunk (a moment
        crowded past the cap stays ranges here, where the service cuts it by player), so no
        query asks for level C."""
        if c_prefix is not None:
            raise SimulationError("the model cuts no chunk")
        board_id, bucket, slot_no = slot
        self._check_board(board_id)
        self._begin(2)
        counts = TieCounts(
            self._items(bucket, slot_no, "A#", consistent),
            self._items(bucket, slot_no, b_prefix, consistent),
            sealed=True,  # the state a build leaves; its seal is a key of a few bytes
        )
        await self._end()
        return counts

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None


def _largest_group(score: IntArray, chunk: IntArray) -> int:
    """The most entries of one ``(score, chunk)`` group, the arrays in board order."""
    starts = np.flatnonzero(_runs(score, chunk))
    return int(np.diff(np.append(starts, len(score))).max())
