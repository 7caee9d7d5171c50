"""The DynamoDB side of snapshots, the board registry and erasure (the ``SnapshotArchive`` and
``ErasureStore`` ports), with DynamoDB's errors translated at this edge as in ``dynamo.py``.

Items it owns:

- Snapshots table: ``<board>`` / ``<takenAt>`` with ``reason``, ``playerCount``, ``topN`` and
  ``entries`` (a list of maps ``rank``, ``playerId``, ``displayName``, ``country``, ``score``,
  ``achievedAt``; null where unknown or erased). No TTL: snapshots are the archive.
- Scores table, snapshot membership: ``<player>`` / ``snap#<board>#<takenAt>`` with ``createdAt``
  (epoch seconds); no ``rankKey``, so never on RankIndex.
- Scores table, the board registry: ``registry#boards`` / ``<board>`` with ``registeredAt``,
  ``expiresAt`` (day and week boards, with their rows) and, once taken, ``closedSnapshotAt``. Its
  partition key holds ``#``, which no player id can, so no player's rows share it. One small
  partition, written once per board (conditional put), read by the closed-period job.

Erasure also reads and writes the items ``dynamo.py`` describes: standings, counters, idempotency
records and the pointers to them (``<player>`` / ``idem#<client>#<key>``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from app.domain.clock import iso_ms, to_ms
from app.errors import ConditionFailed, TransactionCancelled, Unavailable
from app.services.erasure import (
    ERASED_STATUS,
    Membership,
    PlayerRows,
    RequestPointer,
    StandingRow,
    StoredRequest,
)
from app.services.snapshots import RegisteredBoard, Snapshot, SnapshotEntry, SnapshotSummary
from app.store.dynamo import (
    DynamoAdapter,
    Item,
    _get_n,
    _get_s,
    _n,
    _s,
    coarse_pk,
    fine_pk,
    lease_pk,
)
from app.store.tables import TTL_ATTRIBUTE, TableNames

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

REGISTRY_PK = "registry#boards"
MEMBERSHIP_PREFIX = "snap#"
POINTER_PREFIX = "idem#"
REQUEST_SORT_KEY = "idem"

_BATCH_WRITE = 25
_BATCH_GET = 100
_BATCH_ATTEMPTS = 8
_NULL: AttributeValueTypeDef = {"NULL": True}


def membership_sk(board_id: str, taken_at: str) -> str:
    return f"{MEMBERSHIP_PREFIX}{board_id}#{taken_at}"


def parse_membership_sk(sort_key: str) -> tuple[str, str]:
    """``snap#<board>#<takenAt>`` back to the board and the time (a time holds no ``#``)."""
    board_id, _, taken_at = sort_key.removeprefix(MEMBERSHIP_PREFIX).rpartition("#")
    return board_id, taken_at


def _now_s() -> int:
    return to_ms(datetime.now(UTC)) // 1000


class ArchiveStore(DynamoAdapter):
    """Snapshots, the board registry and erasure over the service's long-lived aioboto3 client."""

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

    async def _query_all(self, what: str, **kwargs: Any) -> list[Item]:
        items: list[Item] = []
        while True:
            page = await self._call(what, self._client.query, **kwargs)
            items.extend(page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                return items
            kwargs["ExclusiveStartKey"] = start

    async def _batch_write(self, what: str, requests: list[dict[str, Any]]) -> None:
        """BatchWriteItem in chunks of 25, resending what DynamoDB left unprocessed (it does under
        throttling), with jittered backoff, bounded."""
        for first in range(0, len(requests), _BATCH_WRITE):
            pending: dict[str, Any] = {self._tables.scores: requests[first : first + _BATCH_WRITE]}
            for attempt in range(_BATCH_ATTEMPTS):
                if attempt:
                    await asyncio.sleep(random.uniform(0, min(1.0, 0.05 * 2**attempt)))
                answer = await self._call(what, self._client.batch_write_item, RequestItems=pending)
                pending = answer.get("UnprocessedItems") or {}
                if not pending:
                    break
            else:
                raise Unavailable(f"DynamoDB kept items unprocessed during {what}", retry_after=1)

    # ---- the board registry -------------------------------------------------------------------

    async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
        item: dict[str, AttributeValueTypeDef] = {
            "playerId": _s(REGISTRY_PK),
            "leaderboardId": _s(board_id),
            "registeredAt": _s(iso_ms(to_ms(datetime.now(UTC)))),
        }
        if expires_at is not None:
            item[TTL_ATTRIBUTE] = _n(expires_at)
        try:
            await self._call(
                "registering the board",
                self._client.put_item,
                TableName=self._tables.scores,
                Item=item,
                ConditionExpression="attribute_not_exists(playerId)",
            )
        except ConditionFailed:
            return False
        return True

    async def registered_boards(self) -> list[RegisteredBoard]:
        items = await self._query_all(
            "reading the board registry",
            TableName=self._tables.scores,
            KeyConditionExpression="playerId = :p",
            ExpressionAttributeValues={":p": _s(REGISTRY_PK)},
            ConsistentRead=True,
        )
        return [
            RegisteredBoard(
                board_id=_get_s(item, "leaderboardId") or "",
                expires_at=_get_n(item, TTL_ATTRIBUTE),
                closed_snapshot_at=_get_s(item, "closedSnapshotAt"),
            )
            for item in items
        ]

    # ---- snapshots ----------------------------------------------------------------------------

    async def add_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None:
        sort_key = _s(membership_sk(board_id, taken_at))
        created = _n(_now_s())
        await self._batch_write(
            "writing the snapshot's memberships",
            [
                {
                    "PutRequest": {
                        "Item": {
                            "playerId": _s(player),
                            "leaderboardId": sort_key,
                            "createdAt": created,
                        }
                    }
                }
                for player in player_ids
            ],
        )

    async def remove_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None:
        sort_key = _s(membership_sk(board_id, taken_at))
        await self._batch_write(
            "removing snapshot memberships",
            [
                {"DeleteRequest": {"Key": {"playerId": _s(player), "leaderboardId": sort_key}}}
                for player in player_ids
            ],
        )

    async def players_on_board(self, board_id: str, player_ids: Sequence[str]) -> set[str]:
        present: set[str] = set()
        for first in range(0, len(player_ids), _BATCH_GET):
            keys = [
                {"playerId": _s(player), "leaderboardId": _s(board_id)}
                for player in player_ids[first : first + _BATCH_GET]
            ]
            pending: dict[str, Any] = {
                self._tables.scores: {
                    "Keys": keys,
                    "ConsistentRead": True,
                    "ProjectionExpression": "playerId",
                }
            }
            for attempt in range(_BATCH_ATTEMPTS):
                if attempt:
                    await asyncio.sleep(random.uniform(0, min(1.0, 0.05 * 2**attempt)))
                answer = await self._call(
                    "checking the snapshot's players",
                    self._client.batch_get_item,
                    RequestItems=pending,
                )
                for item in answer.get("Responses", {}).get(self._tables.scores, []):
                    present.add(_get_s(item, "playerId") or "")
                pending = answer.get("UnprocessedKeys") or {}
                if not pending:
                    break
            else:
                raise Unavailable(
                    "DynamoDB kept keys unprocessed checking a snapshot", retry_after=1
                )
        return present

    def _snapshot_item(self, snapshot: Snapshot) -> dict[str, AttributeValueTypeDef]:
        return {
            "leaderboardId": _s(snapshot.board_id),
            "snapshotTakenAt": _s(snapshot.taken_at),
            "reason": _s(snapshot.reason),
            "playerCount": _n(snapshot.player_count),
            "topN": _n(snapshot.top_n),
            "entries": {"L": [{"M": _entry_map(entry)} for entry in snapshot.entries]},
        }

    async def put_snapshot(self, snapshot: Snapshot) -> None:
        await self._call(
            "writing the snapshot",
            self._client.put_item,
            TableName=self._tables.snapshots,
            Item=self._snapshot_item(snapshot),
            ConditionExpression="attribute_not_exists(leaderboardId)",
        )

    async def put_closing_snapshot(self, snapshot: Snapshot) -> bool:
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._tables.snapshots,
                    "Item": self._snapshot_item(snapshot),
                    "ConditionExpression": "attribute_not_exists(leaderboardId)",
                }
            },
            {
                "Update": {
                    "TableName": self._tables.scores,
                    "Key": {
                        "playerId": _s(REGISTRY_PK),
                        "leaderboardId": _s(snapshot.board_id),
                    },
                    "UpdateExpression": "SET closedSnapshotAt = :t",
                    "ConditionExpression": (
                        "attribute_exists(playerId) AND attribute_not_exists(closedSnapshotAt)"
                    ),
                    "ExpressionAttributeValues": {":t": _s(snapshot.taken_at)},
                }
            },
        ]
        try:
            await self._call(
                "writing the period-closed snapshot",
                self._client.transact_write_items,
                TransactItems=items,
            )
        except TransactionCancelled as cancelled:
            reasons = [*cancelled.reasons, None, None]
            if reasons[1] == "ConditionalCheckFailed":
                return False
            if reasons[0] == "ConditionalCheckFailed":
                raise ConditionFailed("writing the period-closed snapshot: time taken") from None
            raise
        return True

    async def list_snapshots(self, board_id: str, *, limit: int) -> list[SnapshotSummary]:
        summaries: list[SnapshotSummary] = []
        kwargs: dict[str, Any] = {
            "TableName": self._tables.snapshots,
            "KeyConditionExpression": "leaderboardId = :b",
            "ExpressionAttributeValues": {":b": _s(board_id)},
            "ProjectionExpression": "#t, #r, #c",
            "ExpressionAttributeNames": {
                "#t": "snapshotTakenAt",
                "#r": "reason",
                "#c": "playerCount",
            },
            "ScanIndexForward": False,
        }
        while len(summaries) < limit:
            kwargs["Limit"] = limit - len(summaries)
            page = await self._call("listing the snapshots", self._client.query, **kwargs)
            summaries.extend(
                SnapshotSummary(
                    taken_at=_get_s(item, "snapshotTakenAt") or "",
                    reason=_get_s(item, "reason") or "",
                    player_count=_get_n(item, "playerCount") or 0,
                )
                for item in page.get("Items", [])
            )
            start = page.get("LastEvaluatedKey")
            if not start:
                break
            kwargs["ExclusiveStartKey"] = start
        return summaries[:limit]

    async def get_snapshot(self, board_id: str, taken_at: str) -> Snapshot | None:
        found = await self._call(
            "reading the snapshot",
            self._client.get_item,
            TableName=self._tables.snapshots,
            Key={"leaderboardId": _s(board_id), "snapshotTakenAt": _s(taken_at)},
            ConsistentRead=True,
        )
        item = found.get("Item")
        if item is None:
            return None
        return Snapshot(
            board_id=board_id,
            taken_at=taken_at,
            reason=_get_s(item, "reason") or "",
            player_count=_get_n(item, "playerCount") or 0,
            top_n=_get_n(item, "topN") or 0,
            entries=tuple(_entry_of(value.get("M", {})) for value in item["entries"].get("L", [])),
        )

    async def replace_snapshot_entry(
        self, board_id: str, taken_at: str, *, index: int, player_id: str, entry: SnapshotEntry
    ) -> None:
        # A list index cannot be an expression value; it is an int formatted here, never input.
        await self._call(
            "scrubbing the snapshot",
            self._client.update_item,
            TableName=self._tables.snapshots,
            Key={"leaderboardId": _s(board_id), "snapshotTakenAt": _s(taken_at)},
            UpdateExpression=f"SET entries[{int(index)}] = :e",
            ConditionExpression=f"entries[{int(index)}].playerId = :p",
            ExpressionAttributeValues={":e": {"M": _entry_map(entry)}, ":p": _s(player_id)},
        )

    # ---- erasure ------------------------------------------------------------------------------

    async def rows_of_player(self, player_id: str) -> PlayerRows:
        items = await self._query_all(
            "reading the player's rows",
            TableName=self._tables.scores,
            KeyConditionExpression="playerId = :p",
            ExpressionAttributeValues={":p": _s(player_id)},
            ConsistentRead=True,
        )
        standings: list[StandingRow] = []
        memberships: list[Membership] = []
        pointers: list[RequestPointer] = []
        unknown = 0
        for item in items:
            sort_key = _get_s(item, "leaderboardId") or ""
            # A standing is told by its rankKey first: a game may be called "snap" or "idem".
            if "rankKey" in item:
                standings.append(_standing_row(item))
            elif sort_key.startswith(MEMBERSHIP_PREFIX):
                board_id, taken_at = parse_membership_sk(sort_key)
                memberships.append(Membership(board_id, taken_at, _get_n(item, "createdAt")))
            elif sort_key.startswith(POINTER_PREFIX):
                pointers.append(RequestPointer(sort_key, _get_n(item, TTL_ATTRIBUTE)))
            else:
                unknown += 1
        return PlayerRows(standings, memberships, pointers, unknown)

    async def read_standing_row(self, player_id: str, board_id: str) -> StandingRow | None:
        found = await self._call(
            "reading the player's standing",
            self._client.get_item,
            TableName=self._tables.scores,
            Key={"playerId": _s(player_id), "leaderboardId": _s(board_id)},
            ConsistentRead=True,
        )
        item = found.get("Item")
        return None if item is None or "rankKey" not in item else _standing_row(item)

    async def delete_standing(
        self, player_id: str, row: StandingRow, *, bucket: int, slot: int, now_s: int
    ) -> None:
        board_id = row.board_id
        values: dict[str, AttributeValueTypeDef] = {":k": _s(row.rank_key)}
        if row.version is None:
            condition = "rankKey = :k AND attribute_not_exists(version)"
        else:
            condition = "rankKey = :k AND version = :v"
            values[":v"] = _n(row.version)
        counters = [
            (coarse_pk(board_id, random.randrange(self._shards)), f"{bucket:04d}"),
            (fine_pk(board_id, bucket), f"{slot:04d}"),
        ]
        counter_values: dict[str, AttributeValueTypeDef] = {":d": _n(-1)}
        expression = "ADD n :d"
        if row.expires_at is not None:
            # A counter item TTL already took would come back without it and never go.
            expression += " SET expiresAt = :e"
            counter_values[":e"] = _n(row.expires_at)
        items: list[dict[str, Any]] = [
            {
                "ConditionCheck": {
                    "TableName": self._tables.scores,
                    "Key": {"playerId": _s(lease_pk(board_id)), "leaderboardId": _s(board_id)},
                    "ConditionExpression": "attribute_not_exists(playerId) OR expiresAt <= :now",
                    "ExpressionAttributeValues": {":now": _n(now_s)},
                }
            },
            {
                "Delete": {
                    "TableName": self._tables.scores,
                    "Key": {"playerId": _s(player_id), "leaderboardId": _s(board_id)},
                    "ConditionExpression": condition,
                    "ExpressionAttributeValues": values,
                }
            },
            *(
                {
                    "Update": {
                        "TableName": self._tables.scores,
                        "Key": {"playerId": _s(pk), "leaderboardId": _s(sk)},
                        "UpdateExpression": expression,
                        "ExpressionAttributeValues": counter_values,
                    }
                }
                for pk, sk in counters
            ),
        ]
        await self._call(
            "erasing the player's standing", self._client.transact_write_items, TransactItems=items
        )

    async def delete_membership(self, player_id: str, board_id: str, taken_at: str) -> None:
        await self._call(
            "removing the snapshot membership",
            self._client.delete_item,
            TableName=self._tables.scores,
            Key={"playerId": _s(player_id), "leaderboardId": _s(membership_sk(board_id, taken_at))},
        )

    async def read_request(self, record_id: str) -> StoredRequest | None:
        found = await self._call(
            "reading the idempotency record",
            self._client.get_item,
            TableName=self._tables.scores,
            Key={"playerId": _s(record_id), "leaderboardId": _s(REQUEST_SORT_KEY)},
            ConsistentRead=True,
        )
        item = found.get("Item")
        if item is None:
            return None
        return StoredRequest(
            status=_get_s(item, "status") or "",
            owner=_get_s(item, "owner"),
            response_json=_get_s(item, "response"),
        )

    async def erase_request(self, record_id: str, *, owner: str | None) -> None:
        names = {"#status": "status", "#response": "response", "#owner": "owner"}
        values: dict[str, AttributeValueTypeDef] = {":erased": _s(ERASED_STATUS)}
        if owner is None:
            condition = "attribute_exists(playerId) AND attribute_not_exists(#owner)"
        else:
            condition = "#owner = :owner"
            values[":owner"] = _s(owner)
        # Dropping the owner also makes an in-flight completion of this request fail its
        # condition, instead of storing the player's response after the erasure.
        await self._call(
            "erasing the idempotency record",
            self._client.update_item,
            TableName=self._tables.scores,
            Key={"playerId": _s(record_id), "leaderboardId": _s(REQUEST_SORT_KEY)},
            UpdateExpression=(
                "SET #status = :erased REMOVE #response, requestHash, #owner, deadline"
            ),
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    async def delete_pointer(self, player_id: str, record_id: str) -> None:
        await self._call(
            "removing the request pointer",
            self._client.delete_item,
            TableName=self._tables.scores,
            Key={"playerId": _s(player_id), "leaderboardId": _s(record_id)},
        )


def _standing_row(item: Item) -> StandingRow:
    return StandingRow(
        board_id=_get_s(item, "leaderboardId") or "",
        rank_key=_get_s(item, "rankKey") or "",
        version=_get_n(item, "version"),
        expires_at=_get_n(item, TTL_ATTRIBUTE),
    )


def _opt_s(value: str | None) -> AttributeValueTypeDef:
    return _NULL if value is None else _s(value)


def _entry_map(entry: SnapshotEntry) -> dict[str, AttributeValueTypeDef]:
    return {
        "rank": _n(entry.rank),
        "playerId": _opt_s(entry.player_id),
        "displayName": _opt_s(entry.display_name),
        "country": _opt_s(entry.country),
        "score": _NULL if entry.score is None else _n(entry.score),
        "achievedAt": _opt_s(entry.achieved_at),
    }


def _entry_of(value: Item) -> SnapshotEntry:
    return SnapshotEntry(
        rank=_get_n(value, "rank") or 0,
        player_id=_get_s(value, "playerId"),
        display_name=_get_s(value, "displayName"),
        country=_get_s(value, "country"),
        score=_get_n(value, "score"),
        achieved_at=_get_s(value, "achievedAt"),
    )


__all__: Sequence[str] = ("REGISTRY_PK", "ArchiveStore", "membership_sk", "parse_membership_sk")
