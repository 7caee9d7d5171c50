"""Reads of RankIndex (the ``BoardIndex`` port, and the ``RankReader`` port with the counters). A rank
key's string order is the board order, so every read here is one ascending (or, for the players
just ahead, descending) Query with nothing sorted afterwards, eventually consistent as every read
of a GSI is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

from app.domain.keys import RankKey
from app.domain.models import Entry, Page
from app.domain.ties import TieCounts
from app.services.ports import IndexedKey, SlotAddress, StoredTies
from app.store.client import Dynamo
from app.store.counters import CounterItems
from app.store.items import Item, get_n, get_s, s
from app.store.tables import METADATA_ATTRIBUTE, RANK_INDEX, TIE_GRAIN_ATTRIBUTE


def entry_of(item: Item) -> Entry:
    """An entry from an index item or a standing (both carry the projected attributes)."""
    return Entry(
        key=RankKey.decode(get_s(item, "rankKey") or ""),
        display_name=get_s(item, "displayName"),
        country=get_s(item, "country"),
        metadata_json=get_s(item, METADATA_ATTRIBUTE),
    )


class IndexReads:
    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    def _board(self, board_id: str, condition: str = "") -> dict[str, Any]:
        return {
            "TableName": self._table,
            "IndexName": RANK_INDEX,
            "KeyConditionExpression": "leaderboardId = :b" + condition,
            "ExpressionAttributeValues": {":b": s(board_id)},
        }

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page:
        # One entry more than the page: a next page only where there is one. DynamoDB gives a
        # LastEvaluatedKey whenever a page stops at its Limit, also when nothing follows it, which
        # would be a cursor to an empty page.
        # A page after another starts past its last key by the key condition, not an
        # ExclusiveStartKey: the key need not be this partition's (a sharded board's next page
        # starts each of its partitions after the last entry of the page merged from all of them),
        # and a rank key, which ends with the player id, is the board's alone.
        if start is None:
            kwargs = self._board(board_id)
        else:
            kwargs = self._board(board_id, " AND rankKey > :after")
            kwargs["ExpressionAttributeValues"][":after"] = s(start[0])
        kwargs |= {"ScanIndexForward": True, "Limit": limit + 1}
        page = await self._dynamo.query("reading the board", **kwargs)
        entries = [entry_of(item) for item in page.get("Items", [])]
        next_start = None
        if len(entries) > limit:
            entries = entries[:limit]
            last = entries[-1].key
            next_start = (last.encode(), last.player_id)
        elif page.get("LastEvaluatedKey") and entries:
            # The page stopped short of its Limit (at 1 MB): more may follow.
            last = entries[-1].key
            next_start = (last.encode(), last.player_id)
        return Page(entries=entries, next_start=next_start)

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        if limit <= 0:
            return []
        kwargs = self._board(board_id, " AND rankKey < :k" if ahead else " AND rankKey > :k")
        kwargs["ExpressionAttributeValues"][":k"] = s(key)
        page = await self._dynamo.query(
            "reading the players around", ScanIndexForward=not ahead, Limit=limit, **kwargs
        )
        return [entry_of(item) for item in page.get("Items", [])]

    async def board_keys(
        self, board_id: str, *, page_size: int, between: tuple[str, str] | None = None
    ) -> AsyncIterator[list[IndexedKey]]:
        if between is None:
            kwargs = self._board(board_id)
        else:
            kwargs = self._board(board_id, " AND rankKey BETWEEN :lo AND :hi")
            kwargs["ExpressionAttributeValues"] |= {":lo": s(between[0]), ":hi": s(between[1])}
        kwargs |= {
            "ProjectionExpression": f"rankKey, {TIE_GRAIN_ATTRIBUTE}",
            "ScanIndexForward": True,
            "Limit": page_size,
        }
        async for page in self._dynamo.query_pages("reading the whole board", **kwargs):
            yield [
                IndexedKey(
                    RankKey.decode(get_s(item, "rankKey") or ""), get_n(item, TIE_GRAIN_ATTRIBUTE)
                )
                for item in page.get("Items", [])
            ]

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        kwargs = self._board(board_id, " AND rankKey BETWEEN :lo AND :hi")
        kwargs["ExpressionAttributeValues"] |= {":lo": s(low), ":hi": s(high)}
        kwargs["Select"] = "COUNT"
        if exclude_player is not None:
            kwargs["FilterExpression"] = "playerId <> :me"
            kwargs["ExpressionAttributeValues"][":me"] = s(exclude_player)
        count = 0
        while count < limit:
            # A filtered-out entry still counts against Limit: where the player's own entry was
            # in the range (rarely: a score of theirs since replaced, still on the index), the
            # page falls one short of the cap, and one more Query of one entry settles it.
            kwargs["Limit"] = limit - count
            page = await self._dynamo.query("counting the entries ahead", **kwargs)
            count += int(page.get("Count", 0))
            start = page.get("LastEvaluatedKey")
            if not start:
                return min(count, limit), count >= limit
            kwargs["ExclusiveStartKey"] = start
        return limit, True


class RankReads:
    """The ``RankReader`` port: the histogram from the counters, the capped COUNT from the index.

    The rank code asks for the counters strongly where a player's own place can move back: they
    then count the asking player where their last committed write put them, not ahead of it.
    RankIndex cannot be read strongly: its COUNT leaves the asking player out, and trails other
    players' writes by its lag (docs/ranking.md)."""

    def __init__(self, counters: CounterItems, index: IndexReads) -> None:
        self._counters = counters
        self._index = index

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        return await self._counters.coarse_counts(board_id, consistent=consistent)

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
        return await self._counters.fine_counts(
            board_id, bucket, first, last, consistent=consistent
        )

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        return await self._index.count_keys(
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
        return await self._counters.tie_counts(
            *slot, b_prefix, c_prefix=c_prefix, consistent=consistent
        )

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None  # no summary of hot boards: a rank is as the counts give it

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None
