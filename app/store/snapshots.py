"""Snapshots and their membership rows (the ``SnapshotStore`` port): one item per snapshot in the
Snapshots table (``<board>`` / ``<takenAt>``, no TTL: snapshots are the archive), and for each
player in it a membership row in the Scores table (``<player>`` / ``snap#<board>#<takenAt>``,
never on RankIndex) through which erasure finds a player's snapshots. A snapshot is one item, so
at most 400 KB (``item_sizes``): ``fit`` says whether it fits, and how many of its entries would,
before anything is written.
"""

from __future__ import annotations

import uuid
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from itertools import accumulate
from typing import TYPE_CHECKING, Any

from app.domain.clock import to_ms
from app.domain.events import Event
from app.domain.storage_keys import membership_sk
from app.errors import ConditionFailed
from app.services.ports import (
    Snapshot,
    SnapshotEntry,
    SnapshotFit,
    SnapshotReason,
    SnapshotSummary,
)
from app.store.client import ConditionFailedWithItem, Dynamo, TransactionItemsCancelled
from app.store.item_sizes import ITEM_LIMIT_BYTES, item_size, list_element_size
from app.store.items import Item, get_n, get_s, key, n, n_or_null, s, s_or_null
from app.store.outbox import event_puts
from app.store.registry import registry_key
from app.store.tables import TableNames

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


class SnapshotItems:
    def __init__(self, dynamo: Dynamo, tables: TableNames) -> None:
        self._dynamo = dynamo
        self._tables = tables

    def _key(self, board_id: str, taken_at: str) -> dict[str, AttributeValueTypeDef]:
        return {"leaderboardId": s(board_id), "snapshotTakenAt": s(taken_at)}

    async def add_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None:
        created = n(to_ms(datetime.now(UTC)) // 1000)
        sort_key = membership_sk(board_id, taken_at)
        await self._dynamo.batch_write(
            "writing the snapshot's memberships",
            table=self._tables.scores,
            requests=[
                {"PutRequest": {"Item": {**key(player, sort_key), "createdAt": created}}}
                for player in player_ids
            ],
        )

    async def remove_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None:
        sort_key = membership_sk(board_id, taken_at)
        await self._dynamo.batch_write(
            "removing snapshot memberships",
            table=self._tables.scores,
            requests=[{"DeleteRequest": {"Key": key(player, sort_key)}} for player in player_ids],
        )

    async def delete_membership(self, player_id: str, board_id: str, taken_at: str) -> None:
        await self._dynamo.delete_item(
            "removing the snapshot membership",
            TableName=self._tables.scores,
            Key=key(player_id, membership_sk(board_id, taken_at)),
        )

    def _put(self, snapshot: Snapshot, *, write_id: str) -> dict[str, Any]:
        """The snapshot's put. ``write_id`` is this write's own: botocore's resend of it after a
        lost answer finds it there, while a twin snapshot of the same board in the same
        millisecond (the same entries) carries another."""
        return {
            "TableName": self._tables.snapshots,
            "Item": {
                **self._key(snapshot.board_id, snapshot.taken_at),
                "reason": s(snapshot.reason),
                "playerCount": n(snapshot.player_count),
                "topN": n(snapshot.top_n),
                "entries": {"L": [{"M": _entry_map(entry)} for entry in snapshot.entries]},
                "writeId": s(write_id),
            },
            "ConditionExpression": "attribute_not_exists(leaderboardId)",
        }

    def fit(self, snapshot: Snapshot) -> SnapshotFit:
        bare = item_size(self._put(replace(snapshot, entries=()), write_id=_write_id())["Item"])
        # The item's size with its first 0, 1, 2, ... entries: a list grows by each element.
        sizes = list(
            accumulate(
                (list_element_size({"M": _entry_map(e)}) for e in snapshot.entries), initial=bare
            )
        )
        return SnapshotFit(
            item_bytes=sizes[-1],
            limit_bytes=ITEM_LIMIT_BYTES,
            entries_that_fit=max(0, bisect_right(sizes, ITEM_LIMIT_BYTES) - 1),
        )

    async def put_snapshot(self, snapshot: Snapshot) -> None:
        put = self._put(snapshot, write_id=_write_id())
        try:
            await self._dynamo.put_item(
                "writing the snapshot", **put, ReturnValuesOnConditionCheckFailure="ALL_OLD"
            )
        except ConditionFailedWithItem as failed:
            if failed.item != put["Item"]:
                raise
            # This very snapshot, resent after its answer was lost: it was written.

    async def put_closing_snapshot(self, snapshot: Snapshot, event: Event) -> bool:
        write_id = _write_id()
        mark = {
            "Update": {
                "TableName": self._tables.scores,
                "Key": registry_key(snapshot.board_id),
                "UpdateExpression": "SET closedSnapshotAt = :t, closedBy = :w",
                "ConditionExpression": (
                    "attribute_exists(playerId) AND attribute_not_exists(closedSnapshotAt)"
                ),
                "ExpressionAttributeValues": {":t": s(snapshot.taken_at), ":w": s(write_id)},
            }
        }
        what = "writing the closed period's snapshot and event"
        items = [
            {"Put": self._put(snapshot, write_id=write_id)},
            mark,
            *event_puts(self._tables.scores, event),
        ]
        try:
            # The token makes DynamoDB answer botocore's resend of this very call as applied.
            await self._dynamo.transact(what, items, token=write_id)
        except TransactionItemsCancelled as cancelled:
            # The reasons come in the items' order: the snapshot, the mark, the event's two.
            snapshot_reason, mark_reason = (*cancelled.item_reasons, None, None)[:2]
            if mark_reason == "ConditionalCheckFailed":
                # Marked: by another close, or by this very call, resent after its answer was
                # lost where the token was not honoured (the mark names the write that made it).
                return await self._closed_by(snapshot.board_id) == write_id
            if snapshot_reason == "ConditionalCheckFailed":
                raise ConditionFailed(f"{what}: time taken") from None
            raise
        return True

    async def _closed_by(self, board_id: str) -> str | None:
        row = await self._dynamo.get_item(
            "reading the board's close mark",
            table=self._tables.scores,
            key=registry_key(board_id),
            projection="closedBy",
        )
        return None if row is None else get_s(row, "closedBy")

    async def list_snapshots(self, board_id: str, *, limit: int) -> list[SnapshotSummary]:
        summaries: list[SnapshotSummary] = []
        kwargs: dict[str, Any] = {
            "TableName": self._tables.snapshots,
            "KeyConditionExpression": "leaderboardId = :b",
            "ExpressionAttributeValues": {":b": s(board_id)},
            "ProjectionExpression": "#t, #r, #c",
            "ExpressionAttributeNames": {
                "#t": "snapshotTakenAt",
                "#r": "reason",
                "#c": "playerCount",
            },
            "ScanIndexForward": False,
            "Limit": limit,
        }
        async for page in self._dynamo.query_pages("listing the snapshots", **kwargs):
            summaries.extend(
                SnapshotSummary(
                    taken_at=get_s(item, "snapshotTakenAt") or "",
                    reason=_reason_of(item),
                    player_count=get_n(item, "playerCount") or 0,
                )
                for item in page.get("Items", [])
            )
            if len(summaries) >= limit:
                break
        return summaries[:limit]

    async def get_snapshot(self, board_id: str, taken_at: str) -> Snapshot | None:
        item = await self._dynamo.get_item(
            "reading the snapshot", table=self._tables.snapshots, key=self._key(board_id, taken_at)
        )
        if item is None:
            return None
        return Snapshot(
            board_id=board_id,
            taken_at=taken_at,
            reason=_reason_of(item),
            player_count=get_n(item, "playerCount") or 0,
            top_n=get_n(item, "topN") or 0,
            entries=tuple(_entry_of(value.get("M", {})) for value in item["entries"].get("L", [])),
        )

    async def replace_snapshot_entry(
        self, board_id: str, taken_at: str, *, index: int, player_id: str, entry: SnapshotEntry
    ) -> None:
        # A list index cannot be an expression value; it is an int formatted here, never input.
        await self._dynamo.update_item(
            "scrubbing the snapshot",
            TableName=self._tables.snapshots,
            Key=self._key(board_id, taken_at),
            UpdateExpression=f"SET entries[{int(index)}] = :e",
            ConditionExpression=f"entries[{int(index)}].playerId = :p",
            ExpressionAttributeValues={":e": {"M": _entry_map(entry)}, ":p": s(player_id)},
        )


def _reason_of(item: Item) -> SnapshotReason:
    """``closed`` or ``manual``: a close's snapshot stored before the contract named it
    ``closed`` says ``period-closed``."""
    return "manual" if get_s(item, "reason") == "manual" else "closed"


def _write_id() -> str:
    return uuid.uuid4().hex  # always 32 characters: the size ``fit`` counts


def _entry_map(entry: SnapshotEntry) -> dict[str, AttributeValueTypeDef]:
    return {
        "rank": n(entry.rank),
        "playerId": s_or_null(entry.player_id),
        "displayName": s_or_null(entry.display_name),
        "country": s_or_null(entry.country),
        "score": n_or_null(entry.score),
        "achievedAt": s_or_null(entry.achieved_at),
    }


def _entry_of(value: Item) -> SnapshotEntry:
    return SnapshotEntry(
        rank=get_n(value, "rank") or 0,
        player_id=get_s(value, "playerId"),
        display_name=get_s(value, "displayName"),
        country=get_s(value, "country"),
        score=get_n(value, "score"),
        achieved_at=get_s(value, "achievedAt"),
    )
