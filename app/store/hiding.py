"""A moderated player's rows hidden in place and shown again (decision 0036): a hidden row keeps
its key as ``hiddenKey`` and has no ``rankKey``, so it is off the sparse RankIndex; it leaves its
counters (and its tie counters) in the transaction that hides it, and comes back into them in the
one that shows it, each conditioned on the row as read and on no seeding lease, as erasure
deletes a row (``StandingItems.delete_standing``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from app.domain.clock import iso_ms
from app.domain.models import CounterDelta, Standing
from app.domain.storage_keys import moderation_sk
from app.errors import ConditionFailed, LeaseHeld
from app.store.client import Dynamo, TransactionItemsCancelled
from app.store.counters import CounterItems
from app.store.items import key, n, s
from app.store.leases import no_live_lease
from app.store.row_reads import RowReads
from app.store.standings import is_row, standing_of
from app.store.tables import HIDDEN_KEY_ATTRIBUTE, HIDDEN_SINCE_ATTRIBUTE, TIE_GRAIN_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef


class HiddenRowItems:
    def __init__(self, dynamo: Dynamo, *, table: str, counters: CounterItems) -> None:
        self._dynamo = dynamo
        self._table = table
        self._counters = counters
        self._rows = RowReads(dynamo, table=table, what="reading a moderated player's row")

    async def rows_in_game(self, player_id: str, game: str) -> list[Standing]:
        items = await self._dynamo.query_all(
            "reading the player's rows of the game",
            TableName=self._table,
            # Every board id of the game (every variant, period and shard) begins so; nothing
            # else of the player's does (the other prefixes are names no game may have).
            KeyConditionExpression="playerId = :p AND begins_with(leaderboardId, :g)",
            ExpressionAttributeValues={":p": s(player_id), ":g": s(f"{game}#")},
            ConsistentRead=True,
        )
        return [standing_of(item) for item in items if is_row(item)]

    async def read_row(self, row_id: str, player_id: str) -> Standing | None:
        item = await self._rows.read(player_id, row_id)
        return None if item is None or not is_row(item) else standing_of(item)

    async def hide_row(
        self, row: Standing, *, counters: Sequence[CounterDelta], since_ms: int, now_s: int
    ) -> None:
        encoded = s(row.entry.key.encode())
        values: dict[str, AttributeValueTypeDef] = {
            ":k": encoded,
            ":since": s(iso_ms(since_ms)),
            ":one": n(1),
        }
        update = {
            "TableName": self._table,
            "Key": key(row.entry.player_id, row.board_id),
            "UpdateExpression": "SET #h = :k, #hs = :since REMOVE rankKey, #g ADD version :one",
            "ConditionExpression": _as_read(row, "rankKey", values),
            "ExpressionAttributeNames": {
                "#h": HIDDEN_KEY_ATTRIBUTE,
                "#hs": HIDDEN_SINCE_ATTRIBUTE,
                "#g": TIE_GRAIN_ATTRIBUTE,
            },
            "ExpressionAttributeValues": values,
        }
        await self._transact(
            "hiding the player's row", row, {"Update": update}, counters, now_s, moderated=True
        )

    async def show_row(
        self, row: Standing, *, counters: Sequence[CounterDelta], tie_mark: int | None, now_s: int
    ) -> None:
        values: dict[str, AttributeValueTypeDef] = {":k": s(row.entry.key.encode()), ":one": n(1)}
        names = {"#h": HIDDEN_KEY_ATTRIBUTE, "#hs": HIDDEN_SINCE_ATTRIBUTE}
        sets = "SET rankKey = :k"
        if tie_mark is not None:
            sets += ", #g = :g"
            names["#g"] = TIE_GRAIN_ATTRIBUTE
            values[":g"] = n(tie_mark)
        update = {
            "TableName": self._table,
            "Key": key(row.entry.player_id, row.board_id),
            "UpdateExpression": f"{sets} REMOVE #h, #hs ADD version :one",
            "ConditionExpression": _as_read(row, "#h", values),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        await self._transact(
            "restoring the player's row", row, {"Update": update}, counters, now_s, moderated=False
        )

    async def _transact(
        self,
        what: str,
        row: Standing,
        write: dict[str, Any],
        counters: Sequence[CounterDelta],
        now_s: int,
        *,
        moderated: bool,
    ) -> None:
        # The lease check first, then the row, then the moderation record's, then the counters:
        # the reasons of a cancelled transaction come in this order. The record's check keeps a
        # hide from landing after a restore deleted the record (and a restore's show after a
        # moderation put it again).
        board_id = row.board_id
        planned = self._counters.changes(board_id, counters, expires_at=row.expires_at)
        head = [
            no_live_lease(self._table, board_id, now_s=now_s),
            write,
            moderation_check(self._table, row.entry.player_id, board_id, moderated=moderated),
        ]
        try:
            async with self._counters.holding(planned):
                await self._dynamo.transact(what, [*head, *planned.updates])
        except TransactionItemsCancelled as cancelled:
            reasons = cancelled.item_reasons
            if reasons[:1] == ("ConditionalCheckFailed",):
                raise LeaseHeld(f"{what}: a seeding lease holds board {board_id}") from None
            if reasons[2:3] == ("ConditionalCheckFailed",):
                raise ModerationChanged(f"{what}: the player's moderation changed") from None
            self._counters.after_cancel(planned, reasons[len(head) :])
            raise


class ModerationChanged(ConditionFailed):
    """The player was restored (or moderated again) since the row's change was planned: the
    change is not theirs to make any more."""


def moderation_check(table: str, player_id: str, row_id: str, *, moderated: bool) -> dict[str, Any]:
    """A transaction item that cancels the transaction unless the player's moderation record in
    the game of ``row_id`` exists (``moderated``) or does not."""
    game = row_id.partition("#")[0]
    return {
        "ConditionCheck": {
            "TableName": table,
            "Key": key(player_id, moderation_sk(game)),
            "ConditionExpression": "attribute_exists(playerId)"
            if moderated
            else "attribute_not_exists(playerId)",
        }
    }


def _as_read(row: Standing, held: str, values: dict[str, AttributeValueTypeDef]) -> str:
    """The condition that the row is as read: its key where ``held`` says, and its version."""
    if row.version == 0:  # a row that carries no version
        return f"{held} = :k AND attribute_not_exists(version)"
    values[":v"] = n(row.version)
    return f"{held} = :k AND version = :v"
