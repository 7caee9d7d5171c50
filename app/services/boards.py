"""Reading boards: the top page with its cursor, and the player count from the histogram."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.models import Entry
from app.domain.periods import Board
from app.errors import InvalidCursor
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


def board_is_expired(board: Board, *, now: datetime, retention: timedelta) -> bool:
    """Day and week rows expire together, a retention after their period ends; DynamoDB deletes
    them late (and the embedded backend never), so reads decide by the period, not by the rows."""
    expires = board.period.expires_at(retention)
    return expires is not None and expires <= now


async def read_board(
    *,
    index: BoardIndex,
    counters: CounterStore,
    policy: ReadPolicy,
    board: Board,
    limit: int,
    cursor: str | None,
    now: datetime,
) -> BoardPage:
    """One page of the board, best first, and its player count: one round trip (the index Query
    and the counter reads together). ``cursor`` continues where the previous page stopped."""
    cursor_secret, retention = policy.cursor_secret, policy.retention
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
    page, counts = await asyncio.gather(
        index.query_board(board_id, limit=limit, start=start), counters.coarse_counts(board_id)
    )
    entries = [RankedEntry(first_rank + i, entry) for i, entry in enumerate(page.entries)]
    next_cursor = None
    if page.next_start is not None:
        next_cursor = encode_cursor(
            Cursor(board_id, page.next_start[0], page.next_start[1], first_rank + len(entries)),
            cursor_secret,
        )
    return BoardPage(board_id, sum(counts.values()), entries, next_cursor)
