"""Reading boards: the top page with its cursor, and the player count from the histogram."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.models import Entry
from app.domain.periods import Board, board_is_expired
from app.errors import InvalidCursor
from app.services.memory import SharedLoads
from app.services.policies import ReadPolicy
from app.services.ports import BoardIndex, CounterStore


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

    async def of(self, counters: CounterStore, board_id: str) -> int:
        return await self._counts.get(board_id, lambda: _count(counters, board_id))


async def _count(counters: CounterStore, board_id: str) -> int:
    return sum((await counters.coarse_counts(board_id)).values())


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
) -> BoardPage:
    """One page of the board, best first, and its player count: one round trip (the index Query
    and the counter reads together). ``cursor`` continues where the previous page stopped."""
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
    page, player_count = await asyncio.gather(
        index.query_board(board_id, limit=limit, start=start),
        player_counts.of(counters, board_id),
    )
    entries = [RankedEntry(first_rank + i, entry) for i, entry in enumerate(page.entries)]
    next_cursor = None
    if page.next_start is not None:
        next_cursor = encode_cursor(
            Cursor(board_id, page.next_start[0], page.next_start[1], first_rank + len(entries)),
            cursor_secret,
        )
    return BoardPage(board_id, player_count, entries, next_cursor)
