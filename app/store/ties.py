"""A crowded slot's tie counters (``app.domain.ties``), one partition per slot:
``hist#<board>#t<bucket:04d>#<slot:04d>``, holding its grain item (``grain``: the grain ``g`` and,
per cut chunk, ``cut:<chunk>``), its level-A, -B and -C counts (``A#...``, ``B#...``, ``C#...``,
attribute ``n``) and the seal of its last whole build (``A#``, first of the level-A range, so the
rank's Query of level A reads it with them). A rank reads them in two or three Queries, a builder
all at once; submissions change the counts inside their transactions (``counters.CounterChanges``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from app.domain.storage_keys import tie_pk
from app.domain.ties import LEVEL_A, SlotTies, TieCounts
from app.errors import ConditionFailed
from app.services.ports import StoredTies
from app.store.client import Dynamo
from app.store.items import Item, get_n, get_s, key, n, s

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


def _tie_counts(items: Iterable[Item]) -> dict[str, int]:
    return {get_s(item, "leaderboardId") or "": get_n(item, "n") or 0 for item in items}


def _unsealed(items: list[Item]) -> tuple[list[Item], bool]:
    """A tie partition's count items, and whether its seal was among them."""
    counts = [i for i in items if get_s(i, "leaderboardId") != SEAL_SORT_KEY]
    return counts, len(counts) != len(items)


GRAIN_SORT_KEY = "grain"
SEAL_SORT_KEY = LEVEL_A
"""Sorts before every level-A count (``A#<score>...``), and is read with them."""
CUT_ATTRIBUTE = "cut:"
"""On a slot's grain item, ``cut:<level-B chunk sort key>``: that chunk's cut length."""


def grain_key(board_id: str, bucket: int, slot: int) -> dict[str, AttributeValueTypeDef]:
    """The item whose presence makes a slot's tie counters live, holding their grain and the
    cut lengths of its cut chunks (``CUT_ATTRIBUTE``)."""
    return key(tie_pk(board_id, bucket, slot), GRAIN_SORT_KEY)


def slot_ties_of(item: Item) -> SlotTies | None:
    """A slot's grain item as a writer needs it; ``None`` where it holds no grain."""
    grain = get_n(item, "g")
    if grain is None:
        return None
    cuts = {
        name.removeprefix(CUT_ATTRIBUTE): int(value["N"])
        for name, value in item.items()
        if name.startswith(CUT_ATTRIBUTE) and "N" in value
    }
    return SlotTies(grain, cuts)


class TieItems:
    """The tie partitions of a table's boards (part of the ``CounterStore`` port)."""

    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def tie_counts(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
    ) -> TieCounts:
        pk = tie_pk(board_id, bucket, slot)
        prefixes = (
            [SEAL_SORT_KEY, b_prefix] if c_prefix is None else [SEAL_SORT_KEY, b_prefix, c_prefix]
        )
        a, b, *c = await asyncio.gather(
            *(self._tie_items(pk, prefix=p, consistent=consistent) for p in prefixes)
        )
        counts, sealed = _unsealed(a)
        return TieCounts(
            _tie_counts(counts), _tie_counts(b), sealed, c=_tie_counts(c[0]) if c else {}
        )

    async def _tie_items(
        self, pk: str, *, prefix: str | None = None, consistent: bool = False
    ) -> list[Item]:
        """A slot's tie partition, or its items whose sort key starts with ``prefix``."""
        condition = "playerId = :p"
        values: dict[str, AttributeValueTypeDef] = {":p": s(pk)}
        if prefix is not None:
            condition += " AND begins_with(leaderboardId, :prefix)"
            values[":prefix"] = s(prefix)
        return await self._dynamo.query_all(
            "reading the tie counters",
            TableName=self._table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ConsistentRead=consistent,
        )

    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        given = None
        items: list[Item] = []
        for item in await self._tie_items(tie_pk(board_id, bucket, slot), consistent=True):
            if get_s(item, "leaderboardId") == GRAIN_SORT_KEY:
                given = slot_ties_of(item)
            else:
                items.append(item)
        counts, sealed = _unsealed(items)
        return StoredTies(
            None if given is None else given.grain,
            _tie_counts(counts),
            sealed,
            cuts={} if given is None else dict(given.cuts),
        )

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
        names: dict[str, str] = {}
        values: dict[str, AttributeValueTypeDef] = {":g": n(grain)}
        sets = ["g = :g"]
        conditions = ["(attribute_not_exists(g) OR g = :g)"]
        for i, (chunk, length) in enumerate(sorted((cuts or {}).items())):
            names[f"#c{i}"] = f"{CUT_ATTRIBUTE}{chunk}"
            values[f":c{i}"] = n(length)
            sets.append(f"#c{i} = :c{i}")
            conditions.append(f"(attribute_not_exists(#c{i}) OR #c{i} = :c{i})")
        if expires_at is not None:
            sets.append("expiresAt = :e")
            values[":e"] = n(expires_at)
        try:
            await self._dynamo.update_item(
                "giving the slot its tie grain and cuts",
                TableName=self._table,
                Key=grain_key(board_id, bucket, slot),
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression=" AND ".join(conditions),
                ExpressionAttributeValues=values,
                **({"ExpressionAttributeNames": names} if names else {}),
            )
        except ConditionFailed:
            return False  # another grain, or another cut of one of these chunks
        return True

    async def seal_ties(
        self, board_id: str, bucket: int, slot: int, *, expires_at: int | None
    ) -> None:
        item = key(tie_pk(board_id, bucket, slot), SEAL_SORT_KEY)
        if expires_at is not None:
            item["expiresAt"] = n(expires_at)
        await self._dynamo.put_item("sealing the tie counters", TableName=self._table, Item=item)

    async def unseal_ties(self, board_id: str, bucket: int, slot: int) -> None:
        await self._dynamo.delete_item(
            "unsealing the tie counters",
            TableName=self._table,
            Key=key(tie_pk(board_id, bucket, slot), SEAL_SORT_KEY),
        )
