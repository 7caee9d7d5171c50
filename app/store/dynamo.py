"""The DynamoDB adapter (aioboto3): items, expressions, and the translation of DynamoDB's errors
into the service's own (``ConditionFailed``, ``TransactionCancelled``, ``Unavailable``) at this edge.

Item layout in the Scores table (``playerId`` / ``leaderboardId``):

- a standing: ``<player>`` / ``<board>``, with ``rankKey`` (so it alone reaches RankIndex);
- an idempotency record: ``idem#<client>#<key>`` / ``idem``;
- a coarse counter: ``hist#<board>#c<shard>`` / ``<bucket:04d>``, attribute ``n``; a board's coarse
  counters are spread over shards, each write picks one of its process's share
  (``item_locks.ItemLocks``), and a count is the sum;
- a fine counter: ``hist#<board>#f<bucket:04d>`` / ``<slot:04d>``, attribute ``n``;
- a seeding lease: ``seedlock#<board>`` / ``<board>``, with ``expiresAt``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import aioboto3
from aiobotocore.config import AioConfig
from botocore.exceptions import BotoCoreError, ClientError

from app.domain.clock import iso_ms, parse_iso_ms
from app.domain.keys import RankKey
from app.domain.models import Entry, LastWrite, Page, Standing, StandingWrite
from app.errors import ConditionFailed, TransactionCancelled, Unavailable
from app.services.ports import RequestRecord
from app.store.accounting import record_call
from app.store.item_locks import ItemLocks
from app.store.tables import RANK_INDEX, TTL_ATTRIBUTE, TableNames, table_specs

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

Item = Mapping[str, "AttributeValueTypeDef"]

_UNAVAILABLE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "RequestLimitExceeded",
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
        "TransactionConflictException",
        "ResourceNotFoundException",
    }
)


def _s(value: str) -> AttributeValueTypeDef:
    return {"S": value}


def _n(value: int | float) -> AttributeValueTypeDef:
    return {"N": str(value)}


def _get_s(item: Item, name: str) -> str | None:
    value = item.get(name)
    return None if value is None else value.get("S")


def _get_n(item: Item, name: str) -> int | None:
    value = item.get(name)
    return None if value is None or "N" not in value else int(value["N"])


def coarse_pk(board_id: str, shard: int) -> str:
    return f"hist#{board_id}#c{shard}"


def fine_pk(board_id: str, bucket: int) -> str:
    return f"hist#{board_id}#f{bucket:04d}"


def lease_pk(board_id: str) -> str:
    return f"seedlock#{board_id}"


def _translate(exc: Exception, what: str) -> Exception:
    """One DynamoDB or transport error as the service's own."""
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        if code == "ConditionalCheckFailedException":
            return ConditionFailed(f"{what}: condition failed")
        if code == "TransactionCanceledException":
            reasons = [
                None if r.get("Code") in (None, "None") else r.get("Code")
                for r in exc.response.get("CancellationReasons", [])
            ]
            return TransactionCancelled(f"{what}: transaction cancelled", reasons=reasons)
        if code == "IdempotentParameterMismatchException":
            # A token reused with other parameters: treat as a cancelled attempt, re-read, retry.
            return TransactionCancelled(f"{what}: token mismatch", reasons=["TokenMismatch"])
        if code in _UNAVAILABLE_CODES:
            return Unavailable(f"DynamoDB is unavailable ({code}) during {what}", retry_after=1)
        return Unavailable(f"DynamoDB refused {what} ({code})", retry_after=1)
    return Unavailable(f"DynamoDB did not answer during {what}", retry_after=1)


async def call_dynamo(
    what: str, operation: Any, *, in_flight: asyncio.Semaphore | None = None, **kwargs: Any
) -> Any:
    """One DynamoDB call with its consumed capacity, its errors translated at this edge, and under
    the process's bound on calls in flight when one is given. Every adapter calls through here."""
    bound: contextlib.AbstractAsyncContextManager[Any] = in_flight or contextlib.nullcontext()
    try:
        async with bound:
            return await operation(ReturnConsumedCapacity="TOTAL", **kwargs)
    except (ClientError, BotoCoreError) as exc:
        raise _translate(exc, what) from exc


class DynamoAdapter:
    """What every adapter holds: the service's client, its tables, and its bound on calls in
    flight (shared by all adapters), with ``_call`` going through ``call_dynamo``."""

    def __init__(
        self,
        client: DynamoDBClient,
        tables: TableNames,
        *,
        in_flight: asyncio.Semaphore | None = None,
    ) -> None:
        self._client = client
        self._tables = tables
        self._in_flight = in_flight

    async def _call(self, what: str, operation: Any, **kwargs: Any) -> Any:
        return await call_dynamo(what, operation, in_flight=self._in_flight, **kwargs)


class DynamoStore(DynamoAdapter):
    """The ``ScoreStore`` port over one long-lived aioboto3 client."""

    _in_flight: asyncio.Semaphore  # this adapter owns the bound the others share

    def __init__(
        self,
        client: DynamoDBClient,
        tables: TableNames,
        *,
        counter_shards: int = 4,
        max_in_flight: int = 64,
    ) -> None:
        # A burst queues at the bound on calls in flight instead of opening ever more connections
        # and failing.
        super().__init__(client, tables, in_flight=asyncio.Semaphore(max_in_flight))
        self._shards = counter_shards
        self._item_locks = ItemLocks()

    @property
    def client(self) -> DynamoDBClient:
        return self._client

    @property
    def tables(self) -> TableNames:
        return self._tables

    @property
    def in_flight(self) -> asyncio.Semaphore:
        """The process's bound on DynamoDB calls in flight, for the other adapters to share."""
        return self._in_flight

    # ---- tables -------------------------------------------------------------------------------

    async def create_tables(self, *, deletion_protection: bool = False) -> list[str]:
        """Create both tables (and TTL) where missing; returns the names it created."""
        created: list[str] = []
        existing = set((await self._client.list_tables())["TableNames"])
        for spec in table_specs(self._tables):
            if spec["TableName"] in existing:
                continue
            kwargs = dict(spec)
            if deletion_protection:
                kwargs["DeletionProtectionEnabled"] = True
            await self._client.create_table(**kwargs)
            created.append(spec["TableName"])
        for name in created:
            waiter = self._client.get_waiter("table_exists")
            await waiter.wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 60})
        if self._tables.scores in created:
            await self._client.update_time_to_live(
                TableName=self._tables.scores,
                TimeToLiveSpecification={"Enabled": True, "AttributeName": TTL_ATTRIBUTE},
            )
        return created

    async def ping(self) -> None:
        try:
            await asyncio.gather(
                self._client.describe_table(TableName=self._tables.scores),
                self._client.describe_table(TableName=self._tables.snapshots),
            )
        except (ClientError, BotoCoreError) as exc:
            raise _translate(exc, "readiness check") from exc

    # ---- idempotency records ------------------------------------------------------------------

    async def reserve_request(
        self,
        record_id: str,
        *,
        request_hash: str,
        owner: str,
        deadline_ms: int,
        now_ms: int,
        expires_at: int,
    ) -> RequestRecord | None:
        key = {"playerId": _s(record_id), "leaderboardId": _s("idem")}
        try:
            await self._call(
                "reserving the idempotency key",
                self._client.put_item,
                TableName=self._tables.scores,
                Item={
                    **key,
                    "requestHash": _s(request_hash),
                    "status": _s("in_progress"),
                    "owner": _s(owner),
                    "deadline": _n(deadline_ms),
                    TTL_ATTRIBUTE: _n(expires_at),
                },
                ConditionExpression=(
                    "attribute_not_exists(playerId) OR expiresAt < :now_s"
                    " OR (#status = :in_progress AND deadline < :now_ms AND requestHash = :hash)"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":now_s": _n(now_ms // 1000),
                    ":now_ms": _n(now_ms),
                    ":in_progress": _s("in_progress"),
                    ":hash": _s(request_hash),
                },
            )
        except ConditionFailed:
            pass
        else:
            return None
        found = await self._call(
            "reading the idempotency record",
            self._client.get_item,
            TableName=self._tables.scores,
            Key=key,
            ConsistentRead=True,
        )
        item = found.get("Item")
        if item is None:  # removed between the two calls: the caller may simply try again
            return RequestRecord(request_hash="", status="gone", deadline_ms=0, response_json=None)
        if _get_s(item, "owner") == owner and _get_s(item, "status") == "in_progress":
            return None  # this very reservation: its response was lost and botocore resent it
        return RequestRecord(
            request_hash=_get_s(item, "requestHash") or "",
            status=_get_s(item, "status") or "",
            deadline_ms=_get_n(item, "deadline") or 0,
            response_json=_get_s(item, "response"),
        )

    async def complete_request(
        self, record_id: str, *, owner: str, response_json: str, expires_at: int
    ) -> None:
        await self._call(
            "storing the submission's outcome",
            self._client.update_item,
            TableName=self._tables.scores,
            Key={"playerId": _s(record_id), "leaderboardId": _s("idem")},
            UpdateExpression="SET #status = :done, #response = :r, expiresAt = :e REMOVE deadline",
            ConditionExpression="#owner = :owner",
            ExpressionAttributeNames={
                "#status": "status",
                "#response": "response",
                "#owner": "owner",
            },
            ExpressionAttributeValues={
                ":done": _s("completed"),
                ":r": _s(response_json),
                ":e": _n(expires_at),
                ":owner": _s(owner),
            },
        )

    async def release_request(self, record_id: str, *, owner: str) -> None:
        with contextlib.suppress(ConditionFailed):  # taken over meanwhile: the new owner decides
            await self._call(
                "releasing the idempotency key",
                self._client.delete_item,
                TableName=self._tables.scores,
                Key={"playerId": _s(record_id), "leaderboardId": _s("idem")},
                ConditionExpression="#owner = :owner",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": _s(owner)},
            )

    # ---- standings ----------------------------------------------------------------------------

    async def read_standing(self, board_id: str, player_id: str) -> Standing | None:
        found = await self._call(
            "reading the player's standing",
            self._client.get_item,
            TableName=self._tables.scores,
            Key={"playerId": _s(player_id), "leaderboardId": _s(board_id)},
            ConsistentRead=True,
        )
        item = found.get("Item")
        return None if item is None else _standing_from_item(item)

    async def lease_expiry(self, board_id: str) -> int | None:
        """When the board's seeding lease runs out (epoch seconds), if there is one; read strongly,
        so a lease taken before this read is seen."""
        found = await self._call(
            "reading the seeding lease",
            self._client.get_item,
            TableName=self._tables.scores,
            Key={"playerId": _s(lease_pk(board_id)), "leaderboardId": _s(board_id)},
            ConsistentRead=True,
            ProjectionExpression="expiresAt",
        )
        item = found.get("Item")
        return None if item is None else _get_n(item, TTL_ATTRIBUTE)

    async def note_request(self, player_id: str, record_id: str, *, expires_at: int) -> None:
        """A pointer from the player to an idempotency record holding their data, so erasure can
        find the record with the one Query by player."""
        await self._call(
            "noting the request",
            self._client.put_item,
            TableName=self._tables.scores,
            Item={
                "playerId": _s(player_id),
                "leaderboardId": _s(record_id),
                TTL_ATTRIBUTE: _n(expires_at),
            },
        )

    async def standings_of(self, player_id: str) -> list[Standing]:
        """Every board row of ``player_id``: one Query on the base table."""
        standings: list[Standing] = []
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self._tables.scores,
                "KeyConditionExpression": "playerId = :p",
                "ExpressionAttributeValues": {":p": _s(player_id)},
            }
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = await self._call("reading the player's standings", self._client.query, **kwargs)
            standings.extend(
                _standing_from_item(item) for item in page.get("Items", []) if "rankKey" in item
            )
            start = page.get("LastEvaluatedKey")
            if not start:
                return standings

    async def write_standing(self, write: StandingWrite, *, token: str) -> None:
        board = write.board_id
        entry = write.standing.entry
        row: dict[str, AttributeValueTypeDef] = {
            "playerId": _s(entry.player_id),
            "leaderboardId": _s(board),
            "rankKey": _s(entry.key.encode()),
            "version": _n(write.standing.version),
        }
        if entry.display_name is not None:
            row["displayName"] = _s(entry.display_name)
        if entry.country is not None:
            row["country"] = _s(entry.country)
        if entry.last_played_at_ms is not None:
            row["lastPlayedAt"] = _s(iso_ms(entry.last_played_at_ms))
        if write.context_json is not None:
            row["context"] = _s(write.context_json)
        if write.expires_at is not None:
            row[TTL_ATTRIBUTE] = _n(write.expires_at)
        last = write.standing.last_write
        if last is not None:
            row["lastRequest"] = _s(last.request_id)
            row["lastImproved"] = {"BOOL": last.improved}
            if last.previous_best is not None:
                row["lastPreviousBest"] = _n(last.previous_best)
        if write.expected_version is None:
            row_condition: dict[str, Any] = {
                "ConditionExpression": "attribute_not_exists(playerId)"
            }
        else:
            row_condition = {
                "ConditionExpression": "version = :v",
                "ExpressionAttributeValues": {":v": _n(write.expected_version)},
            }
        items: list[dict[str, Any]] = [
            {"Put": {"TableName": self._tables.scores, "Item": row, **row_condition}}
        ]
        planned_in = self._item_locks.epoch
        updates, counter_items, shard_choices = self._counter_updates(write)
        items.extend(updates)
        try:
            async with self._item_locks.holding(counter_items), self._in_flight:
                await self._client.transact_write_items(
                    TransactItems=items,  # type: ignore[arg-type]
                    ClientRequestToken=token,
                    ReturnConsumedCapacity="TOTAL",
                )
        except (ClientError, BotoCoreError) as exc:
            error = _translate(exc, "writing the score")
            if isinstance(error, TransactionCancelled):
                # Reasons follow the items: the row first, then the counters.
                self._avoid_conflicts(
                    zip(counter_items, error.reasons[1:], strict=False), shard_choices, planned_in
                )
            raise error from exc

    def _avoid_conflicts(
        self,
        outcomes: Iterable[tuple[str, str | None]],
        shard_choices: dict[str, list[str]],
        planned_in: int,
    ) -> None:
        """Answer a conflict on a coarse counter another task wrote at once (``ItemLocks.avoid``)."""
        for item, reason in outcomes:
            if reason == "TransactionConflict" and item in shard_choices:
                self._item_locks.avoid(shard_choices[item], item, planned_in=planned_in)

    def _counter_updates(
        self, write: StandingWrite
    ) -> tuple[list[dict[str, Any]], list[str], dict[str, list[str]]]:
        """One Update per counter item touched, the items' names, and for each coarse counter the
        shards it was chosen from: a coarse counter on a shard of this process's share that none
        of its transactions is using (``ItemLocks.pick_free``), and the fine counter, merged where
        deltas share an item."""
        coarse: dict[int, int] = defaultdict(int)
        fine: dict[tuple[int, int], int] = defaultdict(int)
        for change in write.counters:
            coarse[change.bucket] += change.delta
            fine[(change.bucket, change.slot)] += change.delta
        keys: list[tuple[str, str, int]] = []
        shard_choices: dict[str, list[str]] = {}
        for bucket, delta in coarse.items():
            if delta:
                shards = [
                    f"{coarse_pk(write.board_id, k)}|{bucket:04d}" for k in range(self._shards)
                ]
                chosen = self._item_locks.pick_free(shards)
                shard_choices[chosen] = shards
                pk, sk = chosen.split("|")
                keys.append((pk, sk, delta))
        keys += [(fine_pk(write.board_id, b), f"{s:04d}", d) for (b, s), d in fine.items() if d]
        updates = []
        for pk, sk, delta in keys:
            values: dict[str, AttributeValueTypeDef] = {":d": _n(delta)}
            expression = "ADD n :d"
            if write.expires_at is not None:
                expression += " SET expiresAt = :e"
                values[":e"] = _n(write.expires_at)
            updates.append(
                {
                    "Update": {
                        "TableName": self._tables.scores,
                        "Key": {"playerId": _s(pk), "leaderboardId": _s(sk)},
                        "UpdateExpression": expression,
                        "ExpressionAttributeValues": values,
                    }
                }
            )
        return updates, [f"{pk}|{sk}" for pk, sk, _ in keys], shard_choices

    # ---- reading boards -----------------------------------------------------------------------

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page:
        kwargs: dict[str, Any] = {
            "TableName": self._tables.scores,
            "IndexName": RANK_INDEX,
            "KeyConditionExpression": "leaderboardId = :b",
            "ExpressionAttributeValues": {":b": _s(board_id)},
            "ScanIndexForward": True,
            "Limit": limit,
        }
        if start is not None:
            kwargs["ExclusiveStartKey"] = {
                "leaderboardId": _s(board_id),
                "rankKey": _s(start[0]),
                "playerId": _s(start[1]),
            }
        page = await self._call("reading the board", self._client.query, **kwargs)
        entries = [_entry_from_item(item) for item in page.get("Items", [])]
        last = page.get("LastEvaluatedKey")
        next_start = None
        if last and entries:
            next_start = (_get_s(last, "rankKey") or "", _get_s(last, "playerId") or "")
        return Page(entries=entries, next_start=next_start)

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        """Up to ``limit`` entries just ahead of (or just behind) ``key``, nearest first."""
        if limit <= 0:
            return []
        condition = "rankKey < :k" if ahead else "rankKey > :k"
        page = await self._call(
            "reading the players around",
            self._client.query,
            TableName=self._tables.scores,
            IndexName=RANK_INDEX,
            KeyConditionExpression=f"leaderboardId = :b AND {condition}",
            ExpressionAttributeValues={":b": _s(board_id), ":k": _s(key)},
            ScanIndexForward=not ahead,
            Limit=limit,
        )
        return [_entry_from_item(item) for item in page.get("Items", [])]

    # ---- the rank reader port -----------------------------------------------------------------

    async def coarse_counts(self, board_id: str) -> Mapping[int, int]:
        shards = await asyncio.gather(
            *(self._query_counters(coarse_pk(board_id, shard)) for shard in range(self._shards))
        )
        totals: dict[int, int] = defaultdict(int)
        for shard in shards:
            for bucket, n in shard.items():
                totals[bucket] += n
        return {b: n for b, n in totals.items() if n}

    async def fine_counts(
        self, board_id: str, bucket: int, first: int, last: int
    ) -> Mapping[int, int]:
        return await self._query_counters(fine_pk(board_id, bucket), (first, last))

    async def _query_counters(
        self, pk: str, slots: tuple[int, int] | None = None
    ) -> dict[int, int]:
        counts: dict[int, int] = {}
        start: dict[str, Any] | None = None
        while True:
            kwargs: dict[str, Any] = {
                "TableName": self._tables.scores,
                "KeyConditionExpression": "playerId = :p",
                "ExpressionAttributeValues": {":p": _s(pk)},
            }
            if slots is not None:  # slot keys are zero-padded, so string order is slot order
                kwargs["KeyConditionExpression"] += " AND leaderboardId BETWEEN :lo AND :hi"
                kwargs["ExpressionAttributeValues"] |= {
                    ":lo": _s(f"{slots[0]:04d}"),
                    ":hi": _s(f"{slots[1]:04d}"),
                }
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = await self._call("reading the histogram", self._client.query, **kwargs)
            for item in page.get("Items", []):
                counts[int(_get_s(item, "leaderboardId") or 0)] = _get_n(item, "n") or 0
            start = page.get("LastEvaluatedKey")
            if not start:
                return counts

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        count = 0
        start: dict[str, Any] | None = None
        while count < limit:
            kwargs: dict[str, Any] = {
                "TableName": self._tables.scores,
                "IndexName": RANK_INDEX,
                "KeyConditionExpression": "leaderboardId = :b AND rankKey BETWEEN :lo AND :hi",
                "ExpressionAttributeValues": {":b": _s(board_id), ":lo": _s(low), ":hi": _s(high)},
                "Select": "COUNT",
                "Limit": limit - count + (1 if exclude_player else 0),
            }
            if exclude_player is not None:
                kwargs["FilterExpression"] = "playerId <> :me"
                kwargs["ExpressionAttributeValues"][":me"] = _s(exclude_player)
            if start:
                kwargs["ExclusiveStartKey"] = start
            page = await self._call("counting the entries ahead", self._client.query, **kwargs)
            count += int(page.get("Count", 0))
            start = page.get("LastEvaluatedKey")
            if not start:
                return min(count, limit), count >= limit
        return limit, True


def _entry_from_item(item: Item) -> Entry:
    last = _get_s(item, "lastPlayedAt")
    return Entry(
        key=RankKey.decode(_get_s(item, "rankKey") or ""),
        display_name=_get_s(item, "displayName"),
        country=_get_s(item, "country"),
        last_played_at_ms=None if last is None else parse_iso_ms(last),
    )


def _standing_from_item(item: Item) -> Standing:
    request = _get_s(item, "lastRequest")
    last_write = None
    if request is not None:
        improved = item.get("lastImproved", {}).get("BOOL", False)
        last_write = LastWrite(request, _get_n(item, "lastPreviousBest"), bool(improved))
    return Standing(
        board_id=_get_s(item, "leaderboardId") or "",
        entry=_entry_from_item(item),
        version=_get_n(item, "version") or 0,
        last_write=last_write,
        expires_at=_get_n(item, TTL_ATTRIBUTE),
    )


def client_config(*, connect_timeout: float = 2.0, read_timeout: float = 5.0) -> AioConfig:
    """Retries and timeouts set on purpose: standard mode (it backs off on throttling and retries
    transient 5xx and timeouts), 3 attempts; connect 2 s, read 5 s. Cancelled transactions are not
    retried by botocore and are re-read and retried by the service."""
    return AioConfig(
        retries={"mode": "standard", "max_attempts": 3},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        max_pool_connections=64,
    )


@asynccontextmanager
async def open_client(
    *, endpoint: str | None, region: str, dummy_credentials: bool, read_timeout: float = 5.0
) -> AsyncIterator[DynamoDBClient]:
    """One DynamoDB client for the life of the process, counting calls for the request log."""
    session = aioboto3.Session()
    secret = "local" if dummy_credentials else None  # DynamoDB Local and moto take any
    async with session.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=region,
        config=client_config(read_timeout=read_timeout),
        aws_access_key_id=secret,
        aws_secret_access_key=secret,
    ) as client:
        client.meta.events.register("after-call.dynamodb", record_call)
        yield client


__all__: Sequence[str] = ("DynamoStore", "coarse_pk", "fine_pk", "lease_pk", "open_client")
