"""An in-memory RankReader: a sorted index and its histogram, for unit tests of the rank code."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey
from app.domain.ties import LEVEL_A, TieCounts, mark_of, tie_counts


class MemoryIndex:
    """``grains``: the crowded slots' tie grains (and ``cuts``, their cut chunks' cut lengths);
    their tie counters hold every key of the slot, except those in ``uncounted`` (rows from before
    the slot was built)."""

    def __init__(
        self,
        layout: BucketLayout,
        keys: list[RankKey],
        board_id: str = "b",
        *,
        grains: Mapping[tuple[int, int], int] | None = None,
        cuts: Mapping[tuple[int, int], Mapping[str, int]] | None = None,
        uncounted: frozenset[str] = frozenset(),
    ) -> None:
        self.layout = layout
        self.board_id = board_id
        self.keys = sorted(keys, key=lambda k: k.encode())
        self._encoded = [k.encode() for k in self.keys]
        self._fine = Counter(layout.fine_of(k.score) for k in keys)
        self.grains = dict(grains or {})
        self.cuts = dict(cuts or {})
        self._uncounted = uncounted
        self.tie_reads = 0
        self.counter_reads: list[tuple[str, str, bool]] = []
        """Each counter read: what (``coarse``, ``fine``, ``tie``), of which board, strongly."""

    def true_rank(self, key: RankKey) -> int:
        """1 + the number of entries strictly ahead of ``key`` (other than its own player)."""
        return 1 + sum(1 for k in self.keys if k.order < key.order and k.player_id != key.player_id)

    async def coarse_counts(self, board_id: str, *, strong: bool = False) -> Mapping[int, int]:
        self.counter_reads.append(("coarse", board_id, strong))
        totals: Counter[int] = Counter()
        for (bucket, _), n in self._fine.items():
            totals[bucket] += n
        return dict(totals)

    async def fine_counts(
        self, board_id: str, bucket: int, first: int, last: int, *, strong: bool = False
    ) -> Mapping[int, int]:
        self.counter_reads.append(("fine", board_id, strong))
        return {s: n for (b, s), n in self._fine.items() if b == bucket and first <= s <= last}

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        matching = [
            k
            for k, encoded in zip(self.keys, self._encoded, strict=True)
            if low <= encoded <= high and k.player_id != exclude_player
        ]
        return min(len(matching), limit), len(matching) >= limit

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
        self.tie_reads += 1
        self.counter_reads.append(("tie", board_id, strong))
        grain = self.grains.get((bucket, slot))
        if grain is None:
            return TieCounts({}, {}, sealed=False)
        in_slot = [
            k
            for k in self.keys
            if self.layout.fine_of(k.score) == (bucket, slot) and k.player_id not in self._uncounted
        ]
        cuts = self.cuts.get((bucket, slot), {})
        counts = tie_counts(in_slot, [mark_of(k, grain, cuts) for k in in_slot])

        def under(prefix: str) -> dict[str, int]:
            return {k: n for k, n in counts.items() if k.startswith(prefix)}

        return TieCounts(
            under(LEVEL_A),
            under(b_prefix),
            sealed=True,
            c={} if c_prefix is None else under(c_prefix),
        )
