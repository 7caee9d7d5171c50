"""Reading boards: the top page with its cursor, and the player count from the histogram."""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.models import Entry, Page
from app.domain.periods import Board, board_is_expired
from app.domain.shards import partition_ids
from app.errors import InvalidCursor
from app.services.memory import SharedLoads
from app.services.policies import ReadPolicy
from app.services.ports import BoardIndex, CounterStore
from app.services.ranking.summary import TOP, HotBoards


@dataclass(frozen=True)
class RankedEntry:
    rank: int
    entry: Entry


@dataclass(frozen=True)
class BoardPage:
    board_id: str
    player_count: int
    entries: list[RankedEntry]
    next_cursor: str | None
    read_at: datetime | None = None
    """When its entries were read, where that was a moment before the request: a hot board's
    first page, from the task's summary (``HotBoards``)."""


class PlayerCounts:
    """A board's player count for its pages, read from the histogram (every coarse shard) at most
    once every ``ttl_s`` per process: it is a display figure, eventually consistent anyway, and a
    busy board's pages then cost one Query each. Concurrent pages share one read; at most
    ``max_boards`` boards are remembered. A ``ttl_s`` of 0 reads every time."""

    def __init__(
        self,
        *,
        ttl_s: float,
        max_boards: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._counts: SharedLoads[str, int] = SharedLoads(
            max_entries=max_boards, ttl_s=ttl_s, clock=clock
        )

    async def of(self, counters: CounterStore, board_id: str, *, shards: int = 1) -> int:
        return await self._counts.get(board_id, lambda: player_count(counters, board_id, shards))


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


async def read_board(
    *,
    index: BoardIndex,
    counters: CounterStore,
    player_counts: PlayerCounts,
    policy: ReadPolicy,
    board: Board,
    retention: timedelta,
    limit: int,
    cursor: str | None,
    now: datetime,
    shards: int = 1,
    hot: HotBoards | None = None,
) -> BoardPage:
    """One page of the board, best first, and its player count: one round trip (the index Query
    and the counter reads together; on a board of ``shards``, a Query of each partition, merged:
    ``merged_page``). ``cursor`` continues where the previous page stopped, whatever ``shards``.
    A sharded board's first page and player count come from the task's summary (``hot``), of a
    moment ago: the page says when (``read_at``)."""
    cursor_secret = policy.cursor_secret
    board_id = board.board_id
    start: tuple[str, str] | None = None
    first_rank = 1
    if cursor is not None:
        try:
            decoded = decode_cursor(cursor, cursor_secret, board_id=board_id)
        except CursorError as exc:
            raise InvalidCursor(str(exc)) from None
        start, first_rank = (decoded.rank_key, decoded.player_id), decoded.next_rank
    if board_is_expired(board, now=now, retention=retention):
        return BoardPage(board_id, 0, [], None)
    summary = hot if shards > 1 else None  # a sharded board's summary, if the task keeps one
    counted = (
        player_counts.of(counters, board_id, shards=shards)
        if summary is None
        else summary.player_count(board_id, shards)
    )
    read_at = None
    if summary is not None and start is None and limit <= TOP:
        top, player_count = await asyncio.gather(
            summary.top(
                board_id,
                shards,
                lambda: merged_page(index, board_id, shards=shards, limit=TOP, start=None),
            ),
            counted,
        )
        page, read_at = top.first(limit), top.read_at
    else:
        page, player_count = await asyncio.gather(
            merged_page(index, board_id, shards=shards, limit=limit, start=start), counted
        )
    entries = [RankedEntry(first_rank + i, entry) for i, entry in enumerate(page.entries)]
    next_cursor = None
    if page.next_start is not None:
        next_cursor = encode_cursor(
            Cursor(board_id, page.next_start[0], page.next_start[1], first_rank + len(entries)),
            cursor_secret,
        )
    return BoardPage(board_id, player_count, entries, next_cursor, read_at)
