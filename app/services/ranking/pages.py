"""A board in rank order: a page merged from every partition of a sharded board, and the player
count from the histogram (the top page's use case is ``app.services.reads``)."""

from __future__ import annotations

import asyncio
import functools
import math

from app.domain.models import Entry, Page
from app.domain.shards import partition_ids
from app.services.ports import BoardIndex, CounterStore


async def player_count(counters: CounterStore, board_id: str, shards: int) -> int:
    """The board's players, from its coarse counters (every partition's, summed)."""
    found = await asyncio.gather(
        *(counters.coarse_counts(pid) for pid in partition_ids(board_id, shards))
    )
    return sum(sum(counts.values()) for counts in found)


SECOND_TRIP_ODDS = 0.01
"""How often, at most, a sharded board's page may need a second round trip (its players spread
evenly over its shards: the hash of their ids knows nothing of their scores)."""


@functools.lru_cache(maxsize=256)
def shard_page_limit(limit: int, shards: int) -> int:
    """How many entries to ask of each of ``shards`` partitions for a page of ``limit``: the
    fewest ``L`` for which the page is settled in one round trip but for odds of at most
    ``SECOND_TRIP_ODDS``. It is settled when no shard holds ``L`` or more of the page's entries
    (each holds a Binomial(limit, 1/shards) share of them; a union bound over the shards), and
    never needs more than ``limit`` from one. One shard: ``limit``."""
    if shards == 1:
        return limit
    p = 1 / shards
    tail = 1.0  # P(X >= L) for X ~ Binomial(limit, p), from L = 0 up
    for at in range(limit + 1):
        if shards * tail <= SECOND_TRIP_ODDS:
            return max(1, at)
        tail -= math.exp(
            math.lgamma(limit + 1)
            - math.lgamma(at + 1)
            - math.lgamma(limit - at + 1)
            + at * math.log(p)
            + (limit - at) * math.log1p(-p)
        )
    return limit


async def merged_page(
    index: BoardIndex, board_id: str, *, shards: int, limit: int, start: tuple[str, str] | None
) -> Page:
    """One page of a board, best first, from every one of its partitions (one, unsharded): each
    asked for ``shard_page_limit`` entries at once, merged. The page is settled up to the
    nearest point where a partition stopped with more to come; where that leaves it short, those
    partitions are read on for what it lacks: a second round trip, rare by ``shard_page_limit``'s
    choice, and never a third."""
    per = shard_page_limit(limit, shards)
    pending = dict.fromkeys(partition_ids(board_id, shards), start)
    entries: list[Entry] = []
    open_at: dict[str, tuple[str, str]] = {}  # a partition with more to come: where it stopped
    settled: list[Entry] = []
    while pending:
        pages = await asyncio.gather(
            *(index.query_board(pid, limit=per, start=at) for pid, at in pending.items())
        )
        for pid, page in zip(pending, pages, strict=True):
            entries += page.entries
            if page.next_start is None:
                open_at.pop(pid, None)
            else:
                open_at[pid] = page.next_start
        entries.sort(key=lambda e: e.key.order)
        frontier = min((at[0] for at in open_at.values()), default=None)
        settled = [e for e in entries if frontier is None or e.key.encode() <= frontier]
        if frontier is None or len(settled) >= limit:
            break
        # Short of a page: read on where a partition stopped ahead of the page's end, each for
        # all the page still lacks, so the second round trip is the last: the nearest stop is
        # then at least that many entries further on.
        end = entries[limit].key.encode() if len(entries) > limit else None
        pending = {pid: at for pid, at in open_at.items() if end is None or at[0] < end}
        per = limit - len(settled)
    found = settled[:limit]
    more = len(settled) > limit or bool(open_at)
    last = found[-1].key if found else None
    return Page(
        entries=found,
        next_start=None if last is None or not more else (last.encode(), last.player_id),
    )


async def top_entries(index: BoardIndex, board_id: str, top_n: int, shards: int) -> list[Entry]:
    """The board's best ``top_n`` entries (shown ones: hidden rows are in no index), page by
    page across its ``shards``."""
    entries: list[Entry] = []
    start: tuple[str, str] | None = None
    while len(entries) < top_n:
        page = await merged_page(
            index, board_id, shards=shards, limit=top_n - len(entries), start=start
        )
        entries.extend(page.entries)
        start = page.next_start
        if start is None:
            break
    return entries[:top_n]
