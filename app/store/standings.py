"""Players' rows on boards (the ``StandingStore`` port): ``<player>`` / ``<board>``, the only items
with a ``rankKey`` (so the only ones on RankIndex), each written together with its counters, or
(a seeded row) conditioned by the board's operator (``StandingItems``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, assert_never

from app.domain.clock import iso_ms, parse_iso_ms
from app.domain.definitions import BoardDefinition, Operator
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Standing, StandingWrite
from app.domain.seed_file import SeedRow
from app.domain.shards import player_partition
from app.domain.storage_keys import (
    CLAIM_PREFIX,
    ERASING_SORT_KEY,
    LEAGUE_PREFIX,
    MEMBERSHIP_PREFIX,
    MODERATION_PREFIX,
    PLACEMENT_PREFIX,
    RECORD_PREFIX,
    parse_membership_sk,
)
from app.errors import LeaseHeld
from app.services.ports import Membership, PlayerRecord, PlayerRows, RowOutcome, StandingsPage
from app.store.client import ConditionFailedWithItem, Dynamo, TransactionItemsCancelled
from app.store.counters import CounterItems
from app.store.index import entry_of
from app.store.items import Item, get_n, get_s, key, n, partition_after, s
from app.store.items import key as item_key
from app.store.leases import no_live_lease
from app.store.requests import record_of
from app.store.row_reads import RowReads
from app.store.tables import (
    HIDDEN_KEY_ATTRIBUTE,
    HIDDEN_SINCE_ATTRIBUTE,
    METADATA_ATTRIBUTE,
    TIE_GRAIN_ATTRIBUTE,
    TTL_ATTRIBUTE,
)

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

_LAST_WRITE_ATTRIBUTES = (
    "lastRequest",
    "lastImproved",
    "lastPreviousBest",
    "context",
    METADATA_ATTRIBUTE,
)
"""What a seeded row removes: what the last submission left (``context``, ``metadata``), which
described the old value, and ``lastRequest``, ``lastImproved`` and ``lastPreviousBest``, which a row may hold and
nothing reads."""


def _seed_condition(operator: Operator) -> str:
    """When a seed row replaces the player's row on a board of ``operator``: never a hidden row
    (its player is moderated, decision 0036)."""
    by_operator = _operator_condition(operator)
    hidden = f"attribute_not_exists({HIDDEN_KEY_ATTRIBUTE})"
    return hidden if by_operator is None else f"{hidden} AND ({by_operator})"


def _operator_condition(operator: Operator) -> str | None:
    match operator:
        case Operator.BEST:
            # A rank key's string order is the board order: a greater key is a worse entry.
            return "attribute_not_exists(playerId) OR rankKey > :k"
        case Operator.LATEST:
            # A later time replaces, up or down.
            return (
                "attribute_not_exists(playerId) OR attribute_not_exists(achievedMs) "
                "OR achievedMs < :ms"
            )
        case Operator.SUM:
            return None  # a seeded total sets the total
        case unknown:
            assert_never(unknown)


class StandingItems:
    """A row holds ``rankKey``, ``version`` (bumped on every write: a write conditioned on it fails
    if anything wrote in between), ``displayName``, ``country``, ``metadata``, ``lastPlayedAt``,
    ``context`` and ``expiresAt``. It changes with its counters in one transaction: a submission's
    put (``row_put``) and an erasure's delete (``delete_standing``, which checks no seeding lease
    holds the board). A seeded row is one UpdateItem conditioned by the board's operator; it bumps
    ``version``, drops what the last submission left, and names its seed (``seededBy``), so that a
    resend after a lost answer is told as its own."""

    def __init__(self, dynamo: Dynamo, *, table: str, counters: CounterItems) -> None:
        self._dynamo = dynamo
        self._table = table
        self._counters = counters
        self._rows = RowReads(dynamo, table=table, what="reading the players' standings")

    async def read_standing(self, board_id: str, player_id: str) -> Standing | None:
        # Strongly consistent; the rows asked at once are read in one BatchGetItem.
        item = await self._rows.read(player_id, board_id)
        return None if item is None or "rankKey" not in item else standing_of(item)

    async def standings_of(self, player_id: str) -> list[Standing]:
        items = await self._dynamo.query_all(
            "reading the player's standings",
            TableName=self._table,
            KeyConditionExpression="playerId = :p",
            ExpressionAttributeValues={":p": s(player_id)},
        )
        return [standing_of(item) for item in items if "rankKey" in item]

    async def standings_page(self, player_id: str, *, after: str, limit: int) -> StandingsPage:
        condition, values = partition_after(player_id, after)
        page = await self._dynamo.query(
            "reading a page of the player's standings",
            TableName=self._table,
            KeyConditionExpression=condition,
            # Applied after ``Limit``: the player's other rows are read, and count, but not sent.
            FilterExpression="attribute_exists(rankKey)",
            ExpressionAttributeValues=values,
            Limit=limit,
        )
        last = page.get("LastEvaluatedKey")
        return StandingsPage(
            [standing_of(item) for item in page.get("Items", []) if "rankKey" in item],
            None if last is None else get_s(last, "leaderboardId"),
        )

    async def rows_of_player(self, player_id: str) -> PlayerRows:
        items = await self._dynamo.query_all(
            "reading the player's rows",
            TableName=self._table,
            KeyConditionExpression="playerId = :p",
            ExpressionAttributeValues={":p": s(player_id)},
            ConsistentRead=True,
        )
        rows = PlayerRows([], [], [])
        unknown = 0
        for item in items:
            sort_key = get_s(item, "leaderboardId") or ""
            # A standing is told by its rankKey first: a game may be called "snap" or "idem".
            if "rankKey" in item:
                rows.standings.append(standing_of(item))
            elif HIDDEN_KEY_ATTRIBUTE in item:
                rows.hidden.append(standing_of(item))
            elif sort_key.startswith(MODERATION_PREFIX):
                rows.moderated_games.append(sort_key.removeprefix(MODERATION_PREFIX))
            elif sort_key == ERASING_SORT_KEY:
                continue  # the erasure's own mark
            elif sort_key.startswith(MEMBERSHIP_PREFIX):
                board_id, taken_at = parse_membership_sk(sort_key)
                rows.memberships.append(Membership(board_id, taken_at, get_n(item, "createdAt")))
            elif sort_key.startswith(RECORD_PREFIX):
                rows.records.append(PlayerRecord(sort_key, record_of(item)))
            elif sort_key.startswith(CLAIM_PREFIX):
                rows.claims.append(sort_key.removeprefix(CLAIM_PREFIX))
            elif sort_key.startswith(PLACEMENT_PREFIX):
                board_id = sort_key.removeprefix(PLACEMENT_PREFIX)
                rows.placements.append(board_id)
                cohort_id = get_s(item, "cohortId")
                if cohort_id is not None:
                    rows.cohorts[board_id] = cohort_id
            elif sort_key.startswith(LEAGUE_PREFIX):
                rows.leagues.append(sort_key.removeprefix(LEAGUE_PREFIX))
            else:
                unknown += 1
        return replace(rows, unknown=unknown)

    async def delete_standing(
        self, standing: Standing, *, counters: Sequence[CounterDelta], now_s: int
    ) -> None:
        values: dict[str, AttributeValueTypeDef] = {":k": s(standing.entry.key.encode())}
        # A hidden row (decision 0036) holds its key as hiddenKey, and no counts to take back.
        held = HIDDEN_KEY_ATTRIBUTE if standing.hidden else "rankKey"
        if standing.version == 0:  # a row that carries no version
            condition = f"{held} = :k AND attribute_not_exists(version)"
        else:
            condition = f"{held} = :k AND version = :v"
            values[":v"] = n(standing.version)
        delete = {
            "Delete": {
                "TableName": self._table,
                "Key": key(standing.entry.player_id, standing.board_id),
                "ConditionExpression": condition,
                "ExpressionAttributeValues": values,
            }
        }
        # The lease check first, then the row, then its counters: the reasons of a cancelled
        # transaction come in this order.
        board_id = standing.board_id
        planned = self._counters.changes(board_id, counters, expires_at=standing.expires_at)
        head = [no_live_lease(self._table, board_id, now_s=now_s), delete]
        what = "erasing the player's standing"
        try:
            async with self._counters.holding(planned):
                await self._dynamo.transact(what, [*head, *planned.updates])
        except TransactionItemsCancelled as cancelled:
            reasons = cancelled.item_reasons
            if reasons[:1] == ("ConditionalCheckFailed",):
                raise LeaseHeld(f"{what}: a seeding lease holds board {board_id}") from None
            self._counters.after_cancel(planned, reasons[len(head) :])
            raise

    async def put_seed_row(
        self,
        board_id: str,
        row: SeedRow,
        *,
        definition: BoardDefinition,
        expires_at: int | None,
        writer: str,
    ) -> RowOutcome:
        encoded = row.key_for(definition.order).encode()
        sets = ["rankKey = :k", "version = if_not_exists(version, :zero) + :one"]
        sets += ["lastPlayedAt = :played", "achievedMs = :ms", "seededBy = :writer"]
        values: dict[str, AttributeValueTypeDef] = {
            ":k": s(encoded),
            ":zero": n(0),
            ":one": n(1),
            ":played": s(iso_ms(row.achieved_at_ms)),
            ":ms": n(row.achieved_at_ms),
            ":writer": s(writer),
        }
        names: dict[str, str] = {}
        # Absent optional fields keep what the row holds, as a submission without them does.
        if row.display_name is not None:
            sets.append("displayName = :name")
            values[":name"] = s(row.display_name)
        if row.country is not None:
            sets.append("country = :country")
            values[":country"] = s(row.country)
        if expires_at is not None:
            sets.append("#ttl = :e")
            names["#ttl"] = TTL_ATTRIBUTE
            values[":e"] = n(expires_at)
        extra: dict[str, Any] = {"ExpressionAttributeNames": names} if names else {}
        extra["ConditionExpression"] = _seed_condition(definition.operator)
        try:
            found = await self._dynamo.update_item(
                "seeding a row",
                TableName=self._table,
                Key=key(row.player_id, board_id),
                # A seeded row's tie counting is the seed's to redo (it marks the crowded slots'
                # rows again after rebuilding their counters).
                UpdateExpression=f"SET {', '.join(sets)} REMOVE "
                + ", ".join([*_LAST_WRITE_ATTRIBUTES, TIE_GRAIN_ATTRIBUTE]),
                ExpressionAttributeValues=values,
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **extra,
            )
        except ConditionFailedWithItem as failed:
            if failed.item is not None and get_s(failed.item, "seededBy") == writer:
                return _seeded(failed.item, writer)
            return "kept"
        return _seeded(found, writer)

    async def standings_on_board(
        self, board_id: str, player_ids: Sequence[str], *, shards: int = 1
    ) -> list[Standing]:
        # Eventually consistent (half the units of a strong read), and one resend of what
        # DynamoDB leaves unprocessed at most: a group board answers in two round trips or 503s.
        found = await self._dynamo.batch_get(
            "reading the group's rows",
            table=self._table,
            keys=[key(player, player_partition(board_id, player, shards)) for player in player_ids],
            consistent=False,
            attempts=2,
        )
        return [standing_of(item) for item in found if "rankKey" in item]

    async def rekey(self, board_id: str, key: RankKey, new: RankKey) -> bool:
        try:
            await self._dynamo.update_item(
                "giving a row the board's order",
                TableName=self._table,
                Key=item_key(key.player_id, board_id),
                UpdateExpression="SET rankKey = :new REMOVE #g ADD version :one",
                ConditionExpression="rankKey = :k",
                ExpressionAttributeNames={"#g": TIE_GRAIN_ATTRIBUTE},
                ExpressionAttributeValues={
                    ":new": s(new.encode()),
                    ":one": n(1),
                    ":k": s(key.encode()),
                },
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailedWithItem as failed:
            # Moved meanwhile, or this very write, resent by botocore after a lost answer.
            return failed.item is not None and get_s(failed.item, "rankKey") == new.encode()
        return True

    async def mark_tie(self, board_id: str, key: RankKey, mark: int) -> bool:
        return await self._dynamo.applied(
            self._dynamo.update_item(
                "marking a row with its tie mark",
                TableName=self._table,
                Key=item_key(key.player_id, board_id),
                UpdateExpression="SET #g = :g ADD version :one",
                ConditionExpression="rankKey = :k",
                ExpressionAttributeNames={"#g": TIE_GRAIN_ATTRIBUTE},
                ExpressionAttributeValues={":g": n(mark), ":one": n(1), ":k": s(key.encode())},
            )
        )

    async def players_on_board(
        self, board_id: str, player_ids: Sequence[str], *, shards: int = 1
    ) -> set[str]:
        found = await self._dynamo.batch_get(
            "checking the snapshot's players",
            table=self._table,
            keys=[key(player, player_partition(board_id, player, shards)) for player in player_ids],
            projection="playerId, rankKey",
        )
        # A hidden row (its player moderated) is not on the board.
        return {get_s(item, "playerId") or "" for item in found if "rankKey" in item}


def _seeded(old: Item | None, writer: str) -> RowOutcome:
    """What a seed's write did, from the row as it was before it: where that is this very write
    (botocore resent it after its answer was lost), what the first time did."""
    if old is not None and get_s(old, "seededBy") == writer:
        return "created" if (get_n(old, "version") or 0) <= 1 else "replaced"
    return "created" if old is None else "replaced"


def row_put(table: str, write: StandingWrite) -> dict[str, Any]:
    """A transaction item: the row, conditioned on the version read (absent for a new row).

    A write that moves the entry puts the whole row; one that does not (``write.moved`` false)
    updates only its version, ``lastPlayedAt`` and ``expiresAt``, none of which RankIndex holds,
    so DynamoDB writes no index entry for it, and the entry's metadata and context stay."""
    values: dict[str, AttributeValueTypeDef] = {}
    if write.expected_version is None:
        condition = "attribute_not_exists(playerId)"
    elif write.expected_version == 0:  # a row from before versions were kept
        condition = "attribute_exists(playerId) AND attribute_not_exists(version)"
    else:
        condition = "version = :v"
        values[":v"] = n(write.expected_version)
    if write.moved:
        extra: dict[str, Any] = {"ExpressionAttributeValues": values} if values else {}
        item = {"TableName": table, "Item": _row_item(write), "ConditionExpression": condition}
        return {"Put": item | extra}
    row = write.standing
    sets = ["version = :new"]
    values[":new"] = n(row.version)
    if row.last_played_at_ms is not None:
        sets.append("lastPlayedAt = :played")
        values[":played"] = s(iso_ms(row.last_played_at_ms))
    names: dict[str, str] = {}
    if write.expires_at is not None:
        sets.append("#ttl = :e")
        names["#ttl"] = TTL_ATTRIBUTE
        values[":e"] = n(write.expires_at)
    update: dict[str, Any] = {
        "TableName": table,
        "Key": key(row.entry.player_id, write.board_id),
        "UpdateExpression": "SET " + ", ".join(sets),
        "ConditionExpression": condition,
        "ExpressionAttributeValues": values,
    }
    if names:
        update["ExpressionAttributeNames"] = names
    return {"Update": update}


def _row_item(write: StandingWrite) -> dict[str, AttributeValueTypeDef]:
    row_standing = write.standing
    entry = row_standing.entry
    row: dict[str, AttributeValueTypeDef] = {
        **key(entry.player_id, write.board_id),
        "version": n(row_standing.version),
    }
    if row_standing.hidden_since_ms is None:
        row["rankKey"] = s(entry.key.encode())
    else:  # a moderated player's row (decision 0036): off RankIndex, out of the counters
        row[HIDDEN_KEY_ATTRIBUTE] = s(entry.key.encode())
        row[HIDDEN_SINCE_ATTRIBUTE] = s(iso_ms(row_standing.hidden_since_ms))
    if entry.display_name is not None:
        row["displayName"] = s(entry.display_name)
    if entry.country is not None:
        row["country"] = s(entry.country)
    if entry.metadata_json is not None:
        row[METADATA_ATTRIBUTE] = s(entry.metadata_json)
    if row_standing.last_played_at_ms is not None:
        row["lastPlayedAt"] = s(iso_ms(row_standing.last_played_at_ms))
    if row_standing.context_json is not None:
        row["context"] = s(row_standing.context_json)
    if write.expires_at is not None:
        row[TTL_ATTRIBUTE] = n(write.expires_at)
    row["achievedMs"] = n(entry.key.achieved_at_ms)  # what a later seed of a `latest` board checks
    if row_standing.tie_mark is not None and row_standing.hidden_since_ms is None:
        row[TIE_GRAIN_ATTRIBUTE] = n(row_standing.tie_mark)
    return row


def standing_of(item: Item) -> Standing:
    """A row, visible (``rankKey``) or hidden (``hiddenKey``, ``hiddenSince``)."""
    last = get_s(item, "lastPlayedAt")
    hidden = get_s(item, HIDDEN_KEY_ATTRIBUTE)
    since = get_s(item, HIDDEN_SINCE_ATTRIBUTE)
    return Standing(
        board_id=get_s(item, "leaderboardId") or "",
        entry=entry_of(item if hidden is None else {**item, "rankKey": s(hidden)}),
        version=get_n(item, "version") or 0,
        expires_at=get_n(item, TTL_ATTRIBUTE),
        tie_mark=get_n(item, TIE_GRAIN_ATTRIBUTE),
        last_played_at_ms=None if last is None else parse_iso_ms(last),
        context_json=get_s(item, "context"),
        hidden_since_ms=None if hidden is None else parse_iso_ms(since or iso_ms(0)),
    )


def is_row(item: Item) -> bool:
    """A player's row on a board, visible or hidden."""
    return "rankKey" in item or HIDDEN_KEY_ATTRIBUTE in item


def erasing_key(player_id: str) -> dict[str, AttributeValueTypeDef]:
    return key(player_id, ERASING_SORT_KEY)


class ErasureMarkItems:
    """The ``ErasureMarks`` port: the mark carries ``expiresAt``, so an eraser that dies leaves it
    to lapse on its own."""

    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def mark_erasing(self, player_id: str, *, until: int) -> None:
        await self._dynamo.put_item(
            "marking the player as being erased",
            TableName=self._table,
            Item={**erasing_key(player_id), TTL_ATTRIBUTE: n(until)},
        )

    async def clear_erasing(self, player_id: str) -> None:
        await self._dynamo.delete_item(
            "clearing the erasure mark", TableName=self._table, Key=erasing_key(player_id)
        )
