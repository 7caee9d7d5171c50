"""Moderation's items (the ``ModerationStore`` port, decision 0036): the record beside the
player's rows (``<player>`` / ``mod#<game>``), which a submission reads in its one BatchGetItem;
the game's listing (``mod#<game>`` / ``<player>``); and its audit log (``modlog#<game>`` /
``<at>#<id>``, append-only, read newest first). The record and the listing change together, each
with its log event, in one transaction. The rows themselves are hidden and shown by
``HiddenRowItems``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.domain.clock import iso_ms, parse_iso_ms
from app.domain.moderation import (
    Action,
    EventPage,
    Logged,
    Moderation,
    ModerationEvent,
    ModerationPage,
)
from app.domain.storage_keys import moderation_listing_pk, moderation_log_pk, moderation_sk
from app.store.client import Dynamo, TransactionItemsCancelled
from app.store.counters import CounterItems
from app.store.hiding import HiddenRowItems
from app.store.items import Item, get_n, get_s, key, n, partition_after, s
from app.store.log_pages import page_before

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

_PLAYER = "player"
"""The event's player (``playerId`` is the log's partition key attribute)."""
_BOARD = "board"


def action_of(item: Item) -> Action | None:
    """A record's action; ``None`` for one this service does not know (written by a newer one:
    taken as a hide, the cautious reading, by ``moderation_of``)."""
    try:
        return Action(get_s(item, "action") or "")
    except ValueError:
        return Action.HIDE


def _record_key(player_id: str, game: str) -> dict[str, AttributeValueTypeDef]:
    return key(player_id, moderation_sk(game))


def _listing_key(player_id: str, game: str) -> dict[str, AttributeValueTypeDef]:
    return key(moderation_listing_pk(game), player_id)


def _event_sk(event: ModerationEvent) -> str:
    return f"{iso_ms(event.at_ms)}#{event.event_id}"


def _moderation_item(moderation: Moderation) -> dict[str, AttributeValueTypeDef]:
    item: dict[str, AttributeValueTypeDef] = {
        "game": s(moderation.game),
        "action": s(moderation.action.value),
        "reason": s(moderation.reason),
        "since": n(moderation.since_ms),
        "by": s(moderation.by),
    }
    if moderation.sweep_again_ms is not None:
        item["sweepAgain"] = n(moderation.sweep_again_ms)
    return item


def _moderation_of(player_id: str, game: str, item: Item) -> Moderation:
    return Moderation(
        player_id=player_id,
        game=game,
        action=action_of(item) or Action.HIDE,
        reason=get_s(item, "reason") or "",
        since_ms=get_n(item, "since") or 0,
        by=get_s(item, "by") or "",
        sweep_again_ms=get_n(item, "sweepAgain"),
    )


def _event_put(table: str, event: ModerationEvent) -> dict[str, Any]:
    item: dict[str, AttributeValueTypeDef] = {
        **key(moderation_log_pk(event.game), _event_sk(event)),
        "action": s(event.action.value),
        _PLAYER: s(event.player_id),
        "reason": s(event.reason),
        "by": s(event.by),
    }
    if event.board_id is not None:
        item[_BOARD] = s(event.board_id)
    # Append-only: an event's key is never written twice.
    return {
        "Put": {
            "TableName": table,
            "Item": item,
            "ConditionExpression": "attribute_not_exists(playerId)",
        }
    }


def _event_of(game: str, item: Item) -> ModerationEvent:
    at, _, event_id = (get_s(item, "leaderboardId") or "").partition("#")
    try:
        logged = Logged(get_s(item, "action") or "")
    except ValueError:
        logged = Logged.HIDE
    return ModerationEvent(
        game=game,
        at_ms=parse_iso_ms(at),
        event_id=event_id,
        action=logged,
        player_id=get_s(item, _PLAYER) or "",
        reason=get_s(item, "reason") or "",
        by=get_s(item, "by") or "",
        board_id=get_s(item, _BOARD),
    )


class ModerationItems(HiddenRowItems):
    def __init__(self, dynamo: Dynamo, *, table: str, counters: CounterItems) -> None:
        super().__init__(dynamo, table=table, counters=counters)

    async def moderation_of(self, player_id: str, game: str) -> Moderation | None:
        item = await self._dynamo.get_item(
            "reading the player's moderation", table=self._table, key=_record_key(player_id, game)
        )
        return None if item is None else _moderation_of(player_id, game, item)

    async def put_moderation(self, moderation: Moderation, event: ModerationEvent) -> None:
        player, game = moderation.player_id, moderation.game
        fields = _moderation_item(moderation)
        await self._dynamo.transact(
            "moderating the player",
            [
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": {**_record_key(player, game), **fields},
                    }
                },
                {
                    "Put": {
                        "TableName": self._table,
                        "Item": {**_listing_key(player, game), **fields},
                    }
                },
                _event_put(self._table, event),
            ],
        )

    async def remove_moderation(self, player_id: str, game: str, event: ModerationEvent) -> bool:
        try:
            await self._dynamo.transact(
                "restoring the player",
                [
                    {
                        "Delete": {
                            "TableName": self._table,
                            "Key": _record_key(player_id, game),
                            "ConditionExpression": "attribute_exists(playerId)",
                        }
                    },
                    {"Delete": {"TableName": self._table, "Key": _listing_key(player_id, game)}},
                    _event_put(self._table, event),
                ],
            )
        except TransactionItemsCancelled as cancelled:
            if cancelled.item_reasons[:1] == ("ConditionalCheckFailed",):
                return False
            raise
        return True

    async def clear_sweep_again(self, player_id: str, game: str, *, due_ms: int) -> None:
        def cleared(item_key: dict[str, AttributeValueTypeDef]) -> dict[str, Any]:
            return {
                "Update": {
                    "TableName": self._table,
                    "Key": item_key,
                    "UpdateExpression": "REMOVE sweepAgain",
                    "ConditionExpression": "sweepAgain = :due",
                    "ExpressionAttributeValues": {":due": n(due_ms)},
                }
            }

        try:
            await self._dynamo.transact(
                "noting the moderation's later pass done",
                [cleared(_record_key(player_id, game)), cleared(_listing_key(player_id, game))],
            )
        except TransactionItemsCancelled:
            return  # moderated again (it asks for a pass of its own), or restored

    async def log_event(self, event: ModerationEvent) -> None:
        await self._dynamo.transact("logging a moderation event", [_event_put(self._table, event)])

    async def erase_moderation(self, player_id: str, game: str) -> None:
        await self._dynamo.transact(
            "erasing the player's moderation",
            [
                {"Delete": {"TableName": self._table, "Key": _record_key(player_id, game)}},
                {"Delete": {"TableName": self._table, "Key": _listing_key(player_id, game)}},
            ],
        )

    async def moderated_players(self, game: str, *, after: str, limit: int) -> ModerationPage:
        condition, values = partition_after(moderation_listing_pk(game), after)
        page = await self._dynamo.query(
            "reading the game's moderated players",
            TableName=self._table,
            KeyConditionExpression=condition,
            ExpressionAttributeValues=values,
            Limit=limit,
        )
        items = page.get("Items", [])
        players = [_moderation_of(get_s(i, "leaderboardId") or "", game, i) for i in items]
        more = page.get("LastEvaluatedKey") is not None and players
        return ModerationPage(players, players[-1].player_id if more else None)

    async def moderation_log(self, game: str, *, before: str, limit: int) -> EventPage:
        items, after = await page_before(
            self._dynamo,
            "reading the game's moderation log",
            table=self._table,
            partition=moderation_log_pk(game),
            before=before,
            limit=limit,
        )
        return EventPage([_event_of(game, item) for item in items], after)
