"""The DynamoDB calls of the operator tools (seeding and the reconciler): the seeding lease, rows
written by the board rule, a board read whole from RankIndex, and counter items read and set
conditionally. Same tables, item layout and error translation as ``app.store.dynamo``.

- the lease ``seedlock#<board>`` / ``<board>`` holds ``holder``, ``acquiredAt`` and ``expiresAt``
  (epoch seconds, also the table's TTL attribute, so a dead seeder's lease is eventually deleted
  too); it holds the board while ``expiresAt > now``;
- a seeded row is written with one conditional UpdateItem: ``attribute_not_exists(playerId) OR
  rankKey > :new`` (a rank key's string order is the board order, so a greater key is a worse
  entry); it bumps ``version`` (so a submission that read the old row cannot overwrite it) and
  removes what the last submission left (``lastRequest``...), which described the old score;
- a counter item is set with ``SET n`` (deleted when its value is 0) conditioned on the value read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.domain.clock import iso_ms, to_ms
from app.domain.keys import RankKey
from app.errors import ConditionFailed
from app.services.reconcile import CoarseItem, CounterItem, Lease, StoredCounters
from app.services.seeding import RowOutcome, SeedRow
from app.store.dynamo import (
    DynamoAdapter,
    _get_n,
    _get_s,
    _n,
    _s,
    coarse_pk,
    fine_pk,
    lease_pk,
)
from app.store.tables import RANK_INDEX, TTL_ATTRIBUTE, TableNames

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

READ_CONCURRENCY = 16
"""Counter partitions queried at once when reading a board's counters."""

_LAST_WRITE_ATTRIBUTES = ("lastRequest", "lastImproved", "lastPreviousBest", "context")


class BoardOperations(DynamoAdapter):
    """The ``SeedingStore`` and ``CounterStore`` ports over the service's aioboto3 client."""

    def __init__(
        self,
        client: DynamoDBClient,
        tables: TableNames,
        *,
        counter_shards: int,
        in_flight: asyncio.Semaphore | None = None,
    ) -> None:
        super().__init__(client, tables, in_flight=in_flight)
        self._shards = counter_shards

    @property
    def counter_shards(self) -> int:
        return self._shards

    # ---- the seeding lease --------------------------------------------------------------------

    def _lease_key(self, board_id: str) -> dict[str, AttributeValueTypeDef]:
        return {"playerId": _s(lease_pk(board_id)), "leaderboardId": _s(board_id)}

    async def read_lease(self, board_id: str) -> Lease | None:
        found = await self._call(
            "reading the seeding lease",
            self._client.get_item,
            TableName=self._tables.scores,
            Key=self._lease_key(board_id),
            ConsistentRead=True,
        )
        item = found.get("Item")
        if item is None:
            return None
        return Lease(
            holder=_get_s(item, "holder") or "", expires_at=_get_n(item, TTL_ATTRIBUTE) or 0
        )

    async def acquire_lease(
        self, board_id: str, *, holder: str, expires_at: int, now_s: int
    ) -> Lease | None:
        for _ in range(3):  # a lease in the way may be released between the put and the read
            try:
                await self._call(
                    "taking the seeding lease",
                    self._client.put_item,
                    TableName=self._tables.scores,
                    Item={
                        **self._lease_key(board_id),
                        "holder": _s(holder),
                        "acquiredAt": _s(iso_ms(to_ms(datetime.now(UTC)))),
                        TTL_ATTRIBUTE: _n(expires_at),
                    },
                    ConditionExpression="attribute_not_exists(playerId) OR expiresAt <= :now",
                    ExpressionAttributeValues={":now": _n(now_s)},
                )
            except ConditionFailed:
                held = await self.read_lease(board_id)
                if held is not None:
                    return held
            else:
                return None
        return Lease(holder="(unknown: the lease keeps changing hands)", expires_at=now_s + 1)

    async def renew_lease(self, board_id: str, *, holder: str, expires_at: int, now_s: int) -> bool:
        try:
            await self._call(
                "renewing the seeding lease",
                self._client.update_item,
                TableName=self._tables.scores,
                Key=self._lease_key(board_id),
                UpdateExpression="SET expiresAt = :e",
                ConditionExpression="holder = :h AND expiresAt > :now",
                ExpressionAttributeValues={
                    ":e": _n(expires_at),
                    ":h": _s(holder),
                    ":now": _n(now_s),
                },
            )
        except ConditionFailed:
            return False
        return True

    async def release_lease(self, board_id: str, *, holder: str) -> bool:
        try:
            await self._call(
                "releasing the seeding lease",
                self._client.delete_item,
                TableName=self._tables.scores,
                Key=self._lease_key(board_id),
                ConditionExpression="holder = :h",
                ExpressionAttributeValues={":h": _s(holder)},
            )
        except ConditionFailed:
            return False
        return True

    # ---- seeded rows --------------------------------------------------------------------------

    async def put_row_if_better(
        self, board_id: str, row: SeedRow, *, expires_at: int | None
    ) -> RowOutcome:
        key = row.key.encode()
        sets = [
            "rankKey = :k",
            "version = if_not_exists(version, :zero) + :one",
            "lastPlayedAt = :played",
        ]
        values: dict[str, AttributeValueTypeDef] = {
            ":k": _s(key),
            ":zero": _n(0),
            ":one": _n(1),
            ":played": _s(iso_ms(row.achieved_at_ms)),
        }
        names: dict[str, str] = {}
        # Absent optional fields keep what the row holds, as a submission without them does.
        if row.display_name is not None:
            sets.append("displayName = :name")
            values[":name"] = _s(row.display_name)
        if row.country is not None:
            sets.append("country = :country")
            values[":country"] = _s(row.country)
        if expires_at is not None:
            sets.append("#ttl = :e")
            names["#ttl"] = TTL_ATTRIBUTE
            values[":e"] = _n(expires_at)
        extra: dict[str, Any] = {"ExpressionAttributeNames": names} if names else {}
        try:
            found = await self._call(
                "seeding a row",
                self._client.update_item,
                TableName=self._tables.scores,
                Key={"playerId": _s(row.player_id), "leaderboardId": _s(board_id)},
                UpdateExpression=f"SET {', '.join(sets)} REMOVE {', '.join(_LAST_WRITE_ATTRIBUTES)}",
                ConditionExpression="attribute_not_exists(playerId) OR rankKey > :k",
                ExpressionAttributeValues=values,
                ReturnValues="ALL_OLD",
                **extra,
            )
        except ConditionFailed:
            return "kept"
        return "replaced" if found.get("Attributes") else "created"

    # ---- reading a board whole ----------------------------------------------------------------

    async def board_keys(self, board_id: str, *, page_size: int) -> AsyncIterator[list[RankKey]]:
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self._tables.scores,
                "IndexName": RANK_INDEX,
                "KeyConditionExpression": "leaderboardId = :b",
                "ExpressionAttributeValues": {":b": _s(board_id)},
                "ProjectionExpression": "rankKey",
                "ScanIndexForward": True,
                "Limit": page_size,
            }
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = await self._call("reading the whole board", self._client.query, **kwargs)
            yield [RankKey.decode(_get_s(item, "rankKey") or "") for item in page.get("Items", [])]
            start = page.get("LastEvaluatedKey")
            if not start:
                return

    # ---- counters -----------------------------------------------------------------------------

    async def read_counters(self, board_id: str, *, buckets: Iterable[int]) -> StoredCounters:
        gate = asyncio.Semaphore(READ_CONCURRENCY)

        async def items(pk: str) -> dict[int, int]:
            async with gate:
                return await self._query_counter_items(pk)

        shards = list(range(self._shards))
        fine_buckets = list(buckets)
        found = await asyncio.gather(
            *(items(coarse_pk(board_id, shard)) for shard in shards),
            *(items(fine_pk(board_id, bucket)) for bucket in fine_buckets),
        )
        coarse = {
            (shard, bucket): n
            for shard, counts in zip(shards, found[: len(shards)], strict=True)
            for bucket, n in counts.items()
        }
        fine = {
            (bucket, slot): n
            for bucket, counts in zip(fine_buckets, found[len(shards) :], strict=True)
            for slot, n in counts.items()
        }
        return StoredCounters(coarse=coarse, fine=fine)

    async def _query_counter_items(self, pk: str) -> dict[int, int]:
        """Every item of one counter partition: sort key (bucket or slot) to ``n``, read strongly
        so that a repair conditioned on it fails only when the item really changed since."""
        counts: dict[int, int] = {}
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self._tables.scores,
                "KeyConditionExpression": "playerId = :p",
                "ExpressionAttributeValues": {":p": _s(pk)},
                "ConsistentRead": True,
            }
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = await self._call("reading the counters", self._client.query, **kwargs)
            for item in page.get("Items", []):
                counts[int(_get_s(item, "leaderboardId") or 0)] = _get_n(item, "n") or 0
            start = page.get("LastEvaluatedKey")
            if not start:
                return counts

    def _counter_key(self, board_id: str, item: CounterItem) -> dict[str, AttributeValueTypeDef]:
        if isinstance(item, CoarseItem):
            if not 0 <= item.shard < self._shards:
                raise ValueError(f"no counter shard {item.shard} (shards: {self._shards})")
            pk, sk = coarse_pk(board_id, item.shard), f"{item.bucket:04d}"
        else:
            pk, sk = fine_pk(board_id, item.bucket), f"{item.slot:04d}"
        return {"playerId": _s(pk), "leaderboardId": _s(sk)}

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
        key = self._counter_key(board_id, item)
        if n == 0:
            if expected is None:
                return  # absent already counts as 0
            await self._delete_counter(key, condition, values)
            return
        expression = "SET n = :n"
        values[":n"] = _n(n)
        if expires_at is not None:
            expression += ", expiresAt = :e"
            values[":e"] = _n(expires_at)
        await self._call(
            "repairing a counter",
            self._client.update_item,
            TableName=self._tables.scores,
            Key=key,
            UpdateExpression=expression,
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
        )

    async def _delete_counter(
        self,
        key: dict[str, AttributeValueTypeDef],
        condition: str,
        values: dict[str, AttributeValueTypeDef],
    ) -> None:
        await self._call(
            "deleting a counter",
            self._client.delete_item,
            TableName=self._tables.scores,
            Key=key,
            ConditionExpression=condition,
            ExpressionAttributeValues=values,
        )


__all__: Sequence[str] = ("BoardOperations",)
