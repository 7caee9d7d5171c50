"""A task's summary of its hot boards (sharded ones): what a whole show asks at once, read at most
once every ``ttl_s`` per item (callers meanwhile share the read): each partition's coarse counts,
the fine counts of each bucket asked about, crowded slots' tie counters and the board's top. They
serve the counts of the shards other than the asking player's in every rank (which then costs the
player's own shard's reads and a capped COUNT on each other shard), the page's player count and
the first page. The player's own shard is always read live: their last write is in every answer
they get; the rest is exact as of the summary's reads (docs/ranking.md says what that can miss).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from app.domain.buckets import BucketLayout
from app.domain.models import Page
from app.domain.shards import partition_ids
from app.domain.ties import TieCounts
from app.services.memory import SharedLoads
from app.services.ports import RankReader, SlotAddress, StoredTies

TOP = 100
"""The most entries of a board's top the summary holds: the largest page the API serves."""

MAX_ITEMS = 4096
"""Most partitions (and, apart, most buckets of partitions) a task's summary holds: a bucket's
fine counts are at most 1,024 numbers, so at most a few tens of MB in all; least recently read
pushed out first."""


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class TopPage:
    """A board's top as of ``read_at`` (when its reads began)."""

    page: Page
    read_at: datetime

    def first(self, limit: int) -> Page:
        """Its first ``limit`` entries, with where the next page starts, if there is one."""
        entries = self.page.entries[:limit]
        more = len(self.page.entries) > limit or self.page.next_start is not None
        last = entries[-1].key if entries else None
        return Page(
            entries=entries,
            next_start=None if last is None or not more else (last.encode(), last.player_id),
        )


class TieReader(Protocol):
    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        """A slot's grain, cuts and every tie count (``CounterStore.read_ties``)."""
        ...


class HotBoards:
    """A ``RankReader`` that answers ``recent`` counter reads from the task's summary (and reads
    the rest live through ``live``), and the summary's top pages and player counts. A ``ttl_s``
    of 0 keeps no summary: every read is live. With ``ties``, the summary also holds the tie
    counters of the crowded slots ranks on other shards meet (``crowded_slot``)."""

    def __init__(
        self,
        live: RankReader,
        layout: BucketLayout,
        *,
        ttl_s: float,
        ties: TieReader | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._live = live
        self._layout = layout
        self._wall = wall
        self._coarse: SharedLoads[str, Mapping[int, int]] = SharedLoads(
            max_entries=MAX_ITEMS, ttl_s=ttl_s, clock=clock
        )
        self._fine: SharedLoads[tuple[str, int], Mapping[int, int]] = SharedLoads(
            max_entries=MAX_ITEMS, ttl_s=ttl_s, clock=clock
        )
        self._tops: SharedLoads[tuple[str, int], TopPage] = SharedLoads(
            max_entries=MAX_ITEMS, ttl_s=ttl_s, clock=clock
        )
        self._ties = ties
        self._slots: SharedLoads[SlotAddress, StoredTies] = SharedLoads(
            max_entries=MAX_ITEMS, ttl_s=ttl_s, clock=clock
        )

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        if not recent:
            return await self._live.coarse_counts(board_id, consistent=consistent)
        return await self._coarse.get(board_id, lambda: self._live.coarse_counts(board_id))

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
        if not recent:
            return await self._live.fine_counts(
                board_id, bucket, first, last, consistent=consistent
            )
        whole = await self._fine.get(
            (board_id, bucket),
            lambda: self._live.fine_counts(board_id, bucket, 0, self._layout.slots_in(bucket) - 1),
        )
        return {slot: n for slot, n in whole.items() if first <= slot <= last}

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        return await self._live.count_keys(
            board_id, low, high, limit=limit, exclude_player=exclude_player
        )

    async def tie_counts(
        self,
        slot: SlotAddress,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
        recent: bool = False,
    ) -> TieCounts:
        if not recent or self._ties is None:
            return await self._live.tie_counts(
                slot, b_prefix, c_prefix=c_prefix, consistent=consistent
            )
        found = await self._slot(self._ties, slot)
        return TieCounts.within(found.counts, b_prefix, c_prefix=c_prefix, sealed=found.sealed)

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        """A slot's tie counters as of a moment ago (its grain, cuts and every count), for a rank
        on a shard other than the player's: the player's own row carries where they are counted,
        another shard's slot is asked whole. ``None`` without a reader of them."""
        if self._ties is None:
            return None
        return await self._slot(self._ties, slot)

    async def _slot(self, ties: TieReader, slot: SlotAddress) -> StoredTies:
        return await self._slots.get(slot, lambda: ties.read_ties(*slot))

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        """``crowded_slot``'s answer where the summary holds it fresh: no read."""
        return self._slots.held(slot)

    async def player_count(self, board_id: str, shards: int) -> int:
        """The board's players: every partition's coarse counts in the summary, summed."""
        found = await asyncio.gather(
            *(self.coarse_counts(pid, recent=True) for pid in partition_ids(board_id, shards))
        )
        return sum(sum(counts.values()) for counts in found)

    async def top(self, board_id: str, shards: int, read: Callable[[], Awaitable[Page]]) -> TopPage:
        """The board's first ``TOP`` entries, merged from every partition (``read``, when the
        summary holds none fresh), as of a moment ago."""

        async def load() -> TopPage:
            read_at = self._wall()
            return TopPage(await read(), read_at)

        return await self._tops.get((board_id, shards), load)
