"""Ports of what a rank reads and the reconciler repairs: RankIndex, and the histogram and tie
counters."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from app.domain.keys import RankKey
from app.domain.models import Entry, Page
from app.domain.ties import TieCounts

# ---- the index and the counters -----------------------------------------------------------------

SlotAddress = tuple[str, int, int]
"""A fine slot: board id (or a sharded board's partition), coarse bucket, slot."""


class RankReader(Protocol):
    """What the rank code reads: the histogram and a capped count of index keys. ``consistent`` reads
    the counters strongly (twice the read units): as of every write committed before the read.
    ``recent``: counts of up to a second ago will do (a shard of a sharded board other than the
    asking player's): a reader that keeps a summary of hot boards may answer from it
    (``app.services.ranking.summary``); others read as ever."""

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        """Players per coarse bucket (summed over shards); absent buckets are empty.
        ``CountsIncomplete`` while the board's counters are marked part-written: no rank is
        known then, exact or range."""

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
        """Players per fine slot ``first..last`` (inclusive) of coarse ``bucket``."""

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        """Count index entries with ``low <= rankKey <= high`` (not ``exclude_player``'s), stopping
        at ``limit``; returns the count and whether it stopped there."""

    async def tie_counts(
        self,
        slot: SlotAddress,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
        recent: bool = False,
    ) -> TieCounts:
        """A crowded slot's level-A counts and seal, its level-B counts under ``b_prefix``, and
        (where given) its level-C counts under ``c_prefix``."""

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        """A slot's tie counters whole, of a moment ago, for a rank on a shard other than the
        asking player's, where the reader keeps a summary of hot boards; ``None`` where it keeps
        none (the rank then stays as the counts gave it)."""

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        """``crowded_slot``'s answer where it is held fresh, with no read; ``None`` otherwise."""


@dataclass(frozen=True)
class IndexedKey:
    """A key as a walk of RankIndex finds it, with the tie mark its row is counted at, if any."""

    key: RankKey
    tie_mark: int | None = None


class BoardIndex(Protocol):
    """RankIndex: a board in rank order (eventually consistent, as every GSI read)."""

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page: ...

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        """Up to ``limit`` entries just ahead of (or behind) ``key``, nearest first."""

    def board_keys(
        self, board_id: str, *, page_size: int, between: tuple[str, str] | None = None
    ) -> AsyncIterator[list[IndexedKey]]:
        """The board's rank keys (each with its row's tie grain), in pages, best first; only
        those from ``between[0]`` to ``between[1]`` (encoded keys, both included) if given."""


@dataclass(frozen=True)
class CoarseItem:
    """One coarse counter item: a shard of a coarse bucket."""

    shard: int
    bucket: int


@dataclass(frozen=True)
class FineItem:
    """One fine counter item: a slot of a coarse bucket."""

    bucket: int
    slot: int


@dataclass(frozen=True)
class TieItem:
    """One tie counter item of a crowded slot: level A or B, by its sort key
    (``app.domain.ties.TiePlace``)."""

    bucket: int
    slot: int
    sort_key: str


CounterItem = CoarseItem | FineItem | TieItem


@dataclass(frozen=True)
class StoredTies:
    """A slot's tie counters as a builder reads them (strongly): the grain, if the slot has one,
    and every level-A and level-B count by sort key."""

    grain: int | None
    counts: dict[str, int]
    sealed: bool
    """The slot's last build sealed its counts (``TieCounts.sealed``)."""
    cuts: dict[str, int] = field(default_factory=dict)
    """The cut length of each cut level-B chunk, by its sort key."""


@dataclass(frozen=True)
class StoredCounters:
    """A board's counter items as read: coarse ``(shard, bucket) -> n`` and fine
    ``(bucket, slot) -> n``; an absent key is an absent item (which counts as 0)."""

    coarse: dict[tuple[int, int], int]
    fine: dict[tuple[int, int], int]

    def coarse_total(self, bucket: int) -> int:
        return sum(n for (_, b), n in self.coarse.items() if b == bucket)

    @property
    def coarse_buckets(self) -> set[int]:
        return {b for _, b in self.coarse}


class CounterStore(Protocol):
    """A board's histogram counters, read whole and set one by one (the reconciler's and the
    seeder's view; submissions change them inside ``commit_submission``)."""

    def coarse_shards(self, board_id: str) -> int:
        """How many coarse shards the board's (or a board shard's) counters are spread over."""
        ...

    async def coarse_counts(self, board_id: str, *, consistent: bool = False) -> Mapping[int, int]:
        """Players per coarse bucket (summed over shards): the player count is their sum.
        ``CountsIncomplete`` while the board's counters are marked part-written."""

    async def coarse_versions(self, board_id: str) -> Mapping[int, tuple[int, int]]:
        """Per coarse bucket, its players and its version (summed over shards, read eventually
        consistently). On a sharded board's partition every row that arrives in a bucket moves
        its version, so a bucket whose pair has not moved holds the same rows.
        ``CountsIncomplete`` as ``coarse_counts``."""

    async def mark_incomplete(self, board_id: str, *, by: str, expires_at: int | None) -> None:
        """Mark the board's counters part-written, before a seed or a rebuild writes any: until
        ``clear_incomplete``, every rank and player count of the board is ``CountsIncomplete``."""

    async def clear_incomplete(self, board_id: str) -> None:
        """Every counter of the board is written: ranks and player counts are known again."""

    async def read_counters(self, board_id: str, *, buckets: Iterable[int]) -> StoredCounters:
        """Every coarse counter item (all shards) and the fine items of ``buckets``, strongly."""

    async def set_counter(
        self,
        board_id: str,
        item: CounterItem,
        *,
        n: int,
        expected: int | None,
        expires_at: int | None,
    ) -> None:
        """Set one counter item to ``n`` (delete it when ``n`` is 0) if it still holds
        ``expected`` (``None``: absent); else ``ConditionFailed``."""

    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        """A slot's grain and tie counts, strongly."""

    async def set_grain(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        grain: int,
        *,
        cuts: Mapping[str, int] | None = None,
        expires_at: int | None,
    ) -> bool:
        """Give the slot its grain and these chunks their cuts, unless it has another grain, or
        one of them another cut (``False``): from then on, submissions to the slot count it in
        its tie counters (and in a cut chunk's level C)."""

    async def seal_ties(
        self, board_id: str, bucket: int, slot: int, *, expires_at: int | None
    ) -> None:
        """A build of the slot's tie counters finished whole: rank reads may trust them (where
        they add up)."""

    async def unseal_ties(self, board_id: str, bucket: int, slot: int) -> None:
        """A build of the slot's tie counters begins: rank reads give its range until sealed."""
