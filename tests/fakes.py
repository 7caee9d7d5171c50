"""An in-memory RankReader: a sorted index and its histogram, for unit tests of the rank code."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey


class MemoryIndex:
    def __init__(self, layout: BucketLayout, keys: list[RankKey], board_id: str = "b") -> None:
        self.layout = layout
        self.board_id = board_id
        self.keys = sorted(keys, key=lambda k: k.encode())
        self._encoded = [k.encode() for k in self.keys]
        self._fine = Counter(layout.fine_of(k.score) for k in keys)

    def true_rank(self, key: RankKey) -> int:
        """1 + the number of entries strictly ahead of ``key`` (other than its own player)."""
        return 1 + sum(1 for k in self.keys if k.order < key.order and k.player_id != key.player_id)

    async def coarse_counts(self, board_id: str) -> Mapping[int, int]:
        totals: Counter[int] = Counter()
        for (bucket, _), n in self._fine.items():
            totals[bucket] += n
        return dict(totals)

    async def fine_counts(
        self, board_id: str, bucket: int, first: int, last: int
    ) -> Mapping[int, int]:
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
