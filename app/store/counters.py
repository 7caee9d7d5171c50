"""A board's histogram counters (the ``CounterStore`` port, and the counter reads of ranking):
coarse counters spread over shards, a fine counter per slot, a crowded slot's tie counters and the
board's mark of counters part-written, all in the Scores table (``CounterItems``; docs/ranking.md).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.domain.models import CounterDelta
from app.domain.shards import is_shard_partition
from app.domain.storage_keys import coarse_pk, fine_pk, tie_pk
from app.errors import CountsIncomplete
from app.services.ports import (
    CoarseItem,
    CounterItem,
    FineItem,
    StoredCounters,
)
from app.store.client import ConditionFailedWithItem, Dynamo
from app.store.item_locks import ItemLocks
from app.store.items import get_n, get_s, key, n, s
from app.store.ties import TieItems

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

_n = n  # ``set_counter``'s keyword ``n`` (the port's name for the value) shadows the helper

READ_CONCURRENCY = 16
INCOMPLETE = -1
"""Where ``_partition`` says it met the board's mark of counters part-written."""
"""Counter partitions queried at once when a board's counters are read whole."""


INCOMPLETE_SORT_KEY = "incomplete"
_MOVE_OFF = frozenset({"TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded"})
"""A coarse counter's cancellation reasons that move a task's share off its shard."""


@dataclass
class CounterChanges:
    """The counter updates of one transaction, ready to go in it: ``updates`` (transaction items),
    the items' names, and for each coarse item the shards it was chosen from."""

    updates: list[dict[str, Any]]
    items: list[str]
    shard_choices: dict[str, list[str]] = field(default_factory=dict)
    planned_in: int = 0


class CounterItems(TieItems):
    """A board's counter items: coarse, ``hist#<board>#c<counter shard>`` / ``<bucket:04d>``
    (spread over counter shards, each write on one of its process's share, a count their sum);
    fine, ``hist#<board>#f<bucket:04d>`` / ``<slot:04d>``; crowded slots' tie counters
    (``TieItems``); and the mark of counters part-written (``hist#<board>#c0`` / ``incomplete``,
    read with every rank, ``CountsIncomplete`` while there). Counters move by ``ADD`` in the
    transaction that changes a row (``CounterChanges``), and are set outright, conditioned on the
    value read, by the reconciler and the seeder, leaving their id (``setBy``) so that a resend
    after a lost answer knows the item as its own. Day and week counters carry ``expiresAt``."""

    def __init__(self, dynamo: Dynamo, *, table: str, shards: int, locks: ItemLocks) -> None:
        super().__init__(dynamo, table=table)
        self._shards = shards
        self._locks = locks

    def coarse_shards(self, board_id: str) -> int:
        """How many coarse shards ``board_id``'s counters are spread over: the setting, for a
        board and for each shard of a sharded board alike (``app.domain.shards``): every coarse
        update is a transactional write of 2 units, which the spread halves, so a shard's coarse
        counters take what its index partition takes, not twice it."""
        return self._shards

    # ---- changes inside a row's transaction -------------------------------------------------

    def changes(
        self, board_id: str, deltas: Sequence[CounterDelta], *, expires_at: int | None
    ) -> CounterChanges:
        """One Update per counter item touched, merged where deltas share an item: a coarse
        counter on a shard of this process's share that none of its transactions is using
        (``ItemLocks.pick_free``), and the fine counter."""
        coarse: dict[int, int] = defaultdict(int)
        fine: dict[tuple[int, int], int] = defaultdict(int)
        for change in deltas:
            coarse[change.bucket] += change.delta
            fine[(change.bucket, change.slot)] += change.delta
        # A row arriving in a bucket of a sharded board's partition moves the bucket's version,
        # also where the count stays (a move inside the bucket): what task mirrors read again.
        arrived = (
            {c.bucket for c in deltas if c.delta > 0} if is_shard_partition(board_id) else set()
        )
        planned = CounterChanges([], [], planned_in=self._locks.epoch)
        keys: list[tuple[str, str, int]] = []
        versioned: set[tuple[str, str]] = set()
        for bucket, delta in coarse.items():
            if delta or bucket in arrived:
                shards = [
                    f"{coarse_pk(board_id, k)}|{bucket:04d}"
                    for k in range(self.coarse_shards(board_id))
                ]
                chosen = self._locks.pick_free(shards)
                planned.shard_choices[chosen] = shards
                pk, sk = chosen.split("|")
                keys.append((pk, sk, delta))
                if bucket in arrived:
                    versioned.add((pk, sk))
        keys += [(fine_pk(board_id, b), f"{slot:04d}", d) for (b, slot), d in fine.items() if d]
        ties: dict[tuple[str, str], int] = defaultdict(int)
        for change in deltas:
            if change.tie is not None:
                pk = tie_pk(board_id, change.bucket, change.slot)
                for sort_key in change.tie.sort_keys:
                    ties[(pk, sort_key)] += change.delta
        keys += [(pk, sk, d) for (pk, sk), d in ties.items() if d]
        for pk, sk, delta in keys:
            values: dict[str, AttributeValueTypeDef] = {":d": n(delta)}
            expression = "ADD n :d"
            if (pk, sk) in versioned:
                expression += ", v :one"
                values[":one"] = n(1)
            if expires_at is not None:
                # A counter item TTL already took would come back without it and never go.
                expression += " SET expiresAt = :e"
                values[":e"] = n(expires_at)
            planned.updates.append(
                {
                    "Update": {
                        "TableName": self._table,
                        "Key": key(pk, sk),
                        "UpdateExpression": expression,
                        "ExpressionAttributeValues": values,
                    }
                }
            )
            planned.items.append(f"{pk}|{sk}")
        return planned

    @asynccontextmanager
    async def holding(self, planned: CounterChanges) -> AsyncIterator[None]:
        """Keep this process's other transactions off these counter items meanwhile."""
        async with self._locks.holding(planned.items):
            yield

    @asynccontextmanager
    async def holding_all(self, planned: Sequence[CounterChanges]) -> AsyncIterator[None]:
        """``holding`` for the counters of several boards written in one transaction (taken in
        one sorted order, so two such transactions cannot deadlock)."""
        async with self._locks.holding([item for changes in planned for item in changes.items]):
            yield

    def after_cancel(self, planned: CounterChanges, reasons: Sequence[str | None]) -> None:
        """Answer a conflict on a coarse counter another task wrote at once, or a throttle on one
        (its partition key is taking more than it can: another task is on it too, or this one
        alone is too busy for one key), by moving off it (``ItemLocks.avoid``); ``reasons`` are
        DynamoDB's, one per counter item in ``planned.items`` order."""
        for item, reason in zip(planned.items, reasons, strict=False):
            if reason in _MOVE_OFF and item in planned.shard_choices:
                self._locks.avoid(planned.shard_choices[item], item, planned_in=planned.planned_in)

    # ---- reads --------------------------------------------------------------------------------

    async def _items(
        self, pk: str, *, slots: tuple[int, int] | None = None, consistent: bool = False
    ) -> Sequence[Mapping[str, AttributeValueTypeDef]]:
        """One counter partition's items; slot keys are zero-padded, so string order is slot order
        and a range is one key condition."""
        condition = "playerId = :p"
        values: dict[str, AttributeValueTypeDef] = {":p": s(pk)}
        if slots is not None:
            condition += " AND leaderboardId BETWEEN :lo AND :hi"
            values |= {":lo": s(f"{slots[0]:04d}"), ":hi": s(f"{slots[1]:04d}")}
        return await self._dynamo.query_all(
            "reading the counters",
            TableName=self._table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            ConsistentRead=consistent,
        )

    async def _partition(
        self, pk: str, *, slots: tuple[int, int] | None = None, consistent: bool = False
    ) -> dict[int, int]:
        """One counter partition: sort key (bucket or slot) to ``n``. ``-1`` holds 1 where the
        partition holds the board's mark of counters part-written (``INCOMPLETE``)."""
        counts: dict[int, int] = {}
        for item in await self._items(pk, slots=slots, consistent=consistent):
            sort_key = get_s(item, "leaderboardId") or ""
            if sort_key == INCOMPLETE_SORT_KEY:
                counts[INCOMPLETE] = 1
            else:
                counts[int(sort_key)] = get_n(item, "n") or 0
        return counts

    async def coarse_counts(self, board_id: str, *, consistent: bool = False) -> Mapping[int, int]:
        """Players per coarse bucket, summed over shards; ``CountsIncomplete`` while the board's
        counters are marked part-written."""
        shards = await asyncio.gather(
            *(
                self._partition(coarse_pk(board_id, shard), consistent=consistent)
                for shard in range(self.coarse_shards(board_id))
            )
        )
        if any(INCOMPLETE in shard for shard in shards):
            raise _incomplete(board_id)
        totals: dict[int, int] = defaultdict(int)
        for shard in shards:
            for bucket, count in shard.items():
                totals[bucket] += count
        return {b: count for b, count in totals.items() if count}

    async def coarse_versions(self, board_id: str) -> Mapping[int, tuple[int, int]]:
        """Per coarse bucket, its players and its version, summed over shards, read eventually
        consistently: on a sharded board's partition the version moves with every row that
        arrives in the bucket (``changes``), so a bucket whose pair has not moved holds the same
        rows. ``CountsIncomplete`` as ``coarse_counts``."""
        shards = await asyncio.gather(
            *(self._items(coarse_pk(board_id, k)) for k in range(self.coarse_shards(board_id)))
        )
        totals: dict[int, tuple[int, int]] = {}
        for items in shards:
            for item in items:
                sort_key = get_s(item, "leaderboardId") or ""
                if sort_key == INCOMPLETE_SORT_KEY:
                    raise _incomplete(board_id)
                count, version = totals.get(int(sort_key), (0, 0))
                totals[int(sort_key)] = (
                    count + (get_n(item, "n") or 0),
                    version + (get_n(item, "v") or 0),
                )
        return totals

    async def mark_incomplete(self, board_id: str, *, by: str, expires_at: int | None) -> None:
        item: dict[str, AttributeValueTypeDef] = {
            **key(coarse_pk(board_id, 0), INCOMPLETE_SORT_KEY),
            "setBy": s(by),
        }
        if expires_at is not None:
            item["expiresAt"] = _n(expires_at)
        await self._dynamo.put_item(
            "marking the counters part-written", TableName=self._table, Item=item
        )

    async def clear_incomplete(self, board_id: str) -> None:
        await self._dynamo.delete_item(
            "clearing the counters' part-written mark",
            TableName=self._table,
            Key=key(coarse_pk(board_id, 0), INCOMPLETE_SORT_KEY),
        )

    async def fine_counts(
        self, board_id: str, bucket: int, first: int, last: int, *, consistent: bool = False
    ) -> Mapping[int, int]:
        return await self._partition(
            fine_pk(board_id, bucket), slots=(first, last), consistent=consistent
        )

    async def read_counters(self, board_id: str, *, buckets: Iterable[int]) -> StoredCounters:
        """Read strongly, so that a repair conditioned on a value fails only when the item really
        changed since."""
        gate = asyncio.Semaphore(READ_CONCURRENCY)

        async def read(pk: str) -> dict[int, int]:
            async with gate:
                counts = await self._partition(pk, consistent=True)
            counts.pop(INCOMPLETE, None)  # the mark is no counter
            return counts

        shards = list(range(self.coarse_shards(board_id)))
        fine_buckets = list(buckets)
        found = await asyncio.gather(
            *(read(coarse_pk(board_id, shard)) for shard in shards),
            *(read(fine_pk(board_id, bucket)) for bucket in fine_buckets),
        )
        coarse = {
            (shard, bucket): count
            for shard, counts in zip(shards, found[: len(shards)], strict=True)
            for bucket, count in counts.items()
        }
        fine = {
            (bucket, slot): count
            for bucket, counts in zip(fine_buckets, found[len(shards) :], strict=True)
            for slot, count in counts.items()
        }
        return StoredCounters(coarse=coarse, fine=fine)

    # ---- setting one outright -----------------------------------------------------------------

    def _key(self, board_id: str, item: CounterItem) -> dict[str, AttributeValueTypeDef]:
        if isinstance(item, CoarseItem):
            shards = self.coarse_shards(board_id)
            if not 0 <= item.shard < shards:
                raise ValueError(f"no counter shard {item.shard} (shards: {shards})")
            return key(coarse_pk(board_id, item.shard), f"{item.bucket:04d}")
        if isinstance(item, FineItem):
            return key(fine_pk(board_id, item.bucket), f"{item.slot:04d}")
        return key(tie_pk(board_id, item.bucket, item.slot), item.sort_key)

    async def set_counter(
        self,
        board_id: str,
        item: CounterItem,
        *,
        n: int,
        expected: int | None,
        expires_at: int | None,
    ) -> None:
        if expected is None:
            condition = "attribute_not_exists(playerId)"
            values: dict[str, AttributeValueTypeDef] = {}
        else:
            condition = "n = :expected"
            values = {":expected": _n(expected)}
        item_key = self._key(board_id, item)
        if n == 0:
            if expected is None:
                return  # absent already counts as 0
            try:
                await self._dynamo.delete_item(
                    "deleting a counter",
                    TableName=self._table,
                    Key=item_key,
                    ConditionExpression=condition,
                    ExpressionAttributeValues=values,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ConditionFailedWithItem as failed:
                if failed.item is not None:
                    raise
                # Gone, as this delete leaves it: a resend of it after its answer was lost (a
                # submission since would have put the item back, and failed this).
            return
        write_id = uuid.uuid4().hex
        expression = "SET n = :n, setBy = :w"
        values |= {":n": _n(n), ":w": s(write_id)}
        if expires_at is not None:
            expression += ", expiresAt = :e"
            values[":e"] = _n(expires_at)
        try:
            await self._dynamo.update_item(
                "repairing a counter",
                TableName=self._table,
                Key=item_key,
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailedWithItem as failed:
            if failed.item is None or get_s(failed.item, "setBy") != write_id:
                raise
            # This very write, resent after its answer was lost: it was applied.


def _incomplete(board_id: str) -> CountsIncomplete:
    return CountsIncomplete(
        f"board {board_id} is being counted (a seed or a counter rebuild has its counters "
        "part-written): ranks and the player count are known again once it completes",
        retry_after=5,
    )
