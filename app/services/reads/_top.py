"""The top of a board, best first, page by page, with its player count."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from app.domain.calendar import board_is_expired
from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.models import Entry
from app.errors import InvalidCursor
from app.services.policies import ReadPolicy
from app.services.ports import Stores
from app.services.ranking import Ranking
from app.services.ranking.pages import merged_page
from app.services.ranking.summary import TOP
from app.services.reads._asks import BoardAsk, PageAsk


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


async def read_page(
    stores: Stores, policy: ReadPolicy, ranking: Ranking, asked: BoardAsk, page: PageAsk
) -> BoardPage:
    """One page of the board, best first, and its player count: one round trip (the index Query
    and the counter reads together; on a sharded board, a Query of each partition, merged:
    ``merged_page``). The cursor continues where the previous page stopped, whatever the shards.
    A sharded board's first page and player count come from the task's summary, of a moment ago:
    the page says when (``read_at``)."""
    board, shards = asked.board, asked.definition.shards
    board_id = board.board_id
    start: tuple[str, str] | None = None
    first_rank = 1
    if page.cursor is not None:
        try:
            decoded = decode_cursor(page.cursor, policy.cursor_secret, board_id=board_id)
        except CursorError as exc:
            raise InvalidCursor(str(exc)) from None
        start, first_rank = (decoded.rank_key, decoded.player_id), decoded.next_rank
    if board_is_expired(board, now=page.now, definition=asked.definition):
        return BoardPage(board_id, 0, [], None)
    counted = ranking.player_count(board_id, shards)
    read_at = None
    index = stores.index
    if shards > 1 and start is None and page.limit <= TOP:
        top, player_count = await asyncio.gather(
            ranking.summary.top(
                board_id,
                shards,
                lambda: merged_page(index, board_id, shards=shards, limit=TOP, start=None),
            ),
            counted,
        )
        found, read_at = top.first(page.limit), top.read_at
    else:
        found, player_count = await asyncio.gather(
            merged_page(index, board_id, shards=shards, limit=page.limit, start=start), counted
        )
    entries = [RankedEntry(first_rank + i, entry) for i, entry in enumerate(found.entries)]
    next_cursor = None
    if found.next_start is not None:
        next_cursor = encode_cursor(
            Cursor(board_id, found.next_start[0], found.next_start[1], first_rank + len(entries)),
            policy.cursor_secret,
        )
    return BoardPage(board_id, player_count, entries, next_cursor, read_at)
