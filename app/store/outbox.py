"""The webhook outbox, in the Scores table: events waiting to be delivered, and what each attempt
did.

- ``outbox#<game>`` / ``<createdAt>#<eventId>``: the event: ``type``, ``body`` (the JSON text sent),
  ``status`` (``pending``, ``delivered``, ``failed``), ``attempts`` (a list, oldest first),
  ``nextAttemptAt`` (epoch ms) and ``expiresAt`` (the table's TTL: kept a while after delivery
  so its outcome stays readable).
- ``outbox#due`` / ``<createdAt>#<game>#<eventId>``: one marker per event not yet delivered or given
  up: what a deliverer queries; it goes when the event is delivered or given up. While a
  deliverer sends the event, the marker holds its lease: ``leasedBy`` and ``leaseUntil`` (epoch
  ms).

An event is written together with what it tells of (a period's close writes its final snapshot,
its registry mark and these two items in one transaction), so an event exists exactly when that
happened.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from app.domain.clock import iso_ms, parse_iso_ms
from app.domain.events import Event
from app.domain.storage_keys import OUTBOX_PREFIX
from app.domain.webhooks import Attempt, Outcome, Status
from app.services.ports.webhooks import DueEvent, StoredEvent, StoredEventPage
from app.store.client import ConditionFailedWithItem, Dynamo
from app.store.items import Item, get_n, get_s, key, n, s
from app.store.log_pages import page_before
from app.store.tables import TTL_ATTRIBUTE

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.type_defs import AttributeValueTypeDef

DUE_PK = "outbox#due"
KEPT_S = 30 * 86400
"""How long an event's record stays readable after it is made (its deliveries' outcomes)."""


def event_pk(game: str) -> str:
    return f"{OUTBOX_PREFIX}{game}"


def event_sk(event: Event) -> str:
    return f"{iso_ms(event.created_at_ms)}#{event.id}"


def due_sk(event: Event) -> str:
    return f"{iso_ms(event.created_at_ms)}#{event.game}#{event.id}"


def event_puts(table: str, event: Event) -> list[dict[str, Any]]:
    """The transaction items that put ``event`` in the outbox, due at once."""
    expires_s = event.created_at_ms // 1000 + KEPT_S
    return [
        {
            "Put": {
                "TableName": table,
                "Item": {
                    **key(event_pk(event.game), event_sk(event)),
                    "eventId": s(event.id),
                    "type": s(event.type),
                    "body": s(event.body),
                    "status": s("pending"),
                    "attempts": {"L": []},
                    "nextAttemptAt": n(event.created_at_ms),
                    TTL_ATTRIBUTE: n(expires_s),
                },
                "ConditionExpression": "attribute_not_exists(playerId)",
            }
        },
        {
            "Put": {
                "TableName": table,
                "Item": {
                    **key(DUE_PK, due_sk(event)),
                    "game": s(event.game),
                    "eventId": s(event.id),
                    "nextAttemptAt": n(event.created_at_ms),
                    TTL_ATTRIBUTE: n(expires_s),
                },
                "ConditionExpression": "attribute_not_exists(playerId)",
            }
        },
    ]


def _event_key(game: str, created_at_ms: int, event_id: str) -> dict[str, AttributeValueTypeDef]:
    return key(event_pk(game), f"{iso_ms(created_at_ms)}#{event_id}")


def _due_key(due: DueEvent) -> dict[str, AttributeValueTypeDef]:
    return key(DUE_PK, f"{iso_ms(due.created_at_ms)}#{due.game}#{due.event_id}")


def _token(holder: str, what: str) -> str:
    """One transaction's ``ClientRequestToken`` (a lease's holder is new for every lease): a
    resend after a lost answer is then answered as applied, not applied twice."""
    return hashlib.sha256(f"{holder}/{what}".encode()).hexdigest()[:36]


def _attempt_item(attempt: Attempt) -> AttributeValueTypeDef:
    fields: dict[str, AttributeValueTypeDef] = {
        "at": n(attempt.at_ms),
        "outcome": s(attempt.outcome),
        "durationMs": n(attempt.duration_ms),
    }
    if attempt.status is not None:
        fields["status"] = n(attempt.status)
    if attempt.error is not None:
        fields["error"] = s(attempt.error)
    return {"M": fields}


def _attempt_of(value: AttributeValueTypeDef) -> Attempt:
    fields = value.get("M", {})
    outcome = get_s(fields, "outcome") or "error"
    return Attempt(
        at_ms=get_n(fields, "at") or 0,
        outcome=cast("Outcome", outcome),
        duration_ms=get_n(fields, "durationMs") or 0,
        status=get_n(fields, "status"),
        error=get_s(fields, "error"),
    )


def _stored_event(game: str, item: Item) -> StoredEvent:
    created, _, event_id = (get_s(item, "leaderboardId") or "").partition("#")
    status = get_s(item, "status") or "pending"
    return StoredEvent(
        event=Event(
            id=event_id,
            type=get_s(item, "type") or "",
            game=game,
            created_at_ms=parse_iso_ms(created),
            body=get_s(item, "body") or "",
        ),
        status=cast("Status", status),
        attempts=tuple(_attempt_of(a) for a in item.get("attempts", {}).get("L", [])),
        next_attempt_ms=get_n(item, "nextAttemptAt") if status == "pending" else None,
    )


def _due_of(item: Item) -> DueEvent:
    created = (get_s(item, "leaderboardId") or "").partition("#")[0]
    return DueEvent(
        game=get_s(item, "game") or "",
        event_id=get_s(item, "eventId") or "",
        created_at_ms=parse_iso_ms(created),
        next_attempt_ms=get_n(item, "nextAttemptAt") or 0,
    )


_FREE = "nextAttemptAt <= :now AND (attribute_not_exists(leaseUntil) OR leaseUntil <= :now)"
"""A marker due and held by no live lease."""


class OutboxItems:
    """The ``OutboxStore`` port. A deliverer takes a marker by a conditional update naming a
    holder new for every lease, so a resend after a lost answer, which then fails its condition,
    tells its own lease by the holder DynamoDB returns with the failure (as ``LeaseItems``)."""

    def __init__(self, dynamo: Dynamo, *, table: str) -> None:
        self._dynamo = dynamo
        self._table = table

    async def add_event(self, event: Event) -> None:
        await self._dynamo.transact(
            "putting an event in the outbox", event_puts(self._table, event)
        )

    async def due_events(self, *, now_ms: int, limit: int) -> list[DueEvent]:
        found: list[DueEvent] = []
        async for page in self._dynamo.query_pages(
            "looking for webhook events due",
            TableName=self._table,
            KeyConditionExpression="playerId = :p",
            FilterExpression=_FREE,
            ExpressionAttributeValues={":p": s(DUE_PK), ":now": n(now_ms)},
            Limit=max(limit, 100),
        ):
            found += [_due_of(item) for item in page["Items"]]
            if len(found) >= limit:
                break
        return found[:limit]

    async def take(self, due: DueEvent, *, holder: str, until_ms: int, now_ms: int) -> bool:
        try:
            await self._dynamo.update_item(
                "taking a webhook event's lease",
                TableName=self._table,
                Key=_due_key(due),
                UpdateExpression="SET leasedBy = :h, leaseUntil = :u",
                ConditionExpression=f"attribute_exists(playerId) AND {_FREE}",
                ExpressionAttributeValues={":h": s(holder), ":u": n(until_ms), ":now": n(now_ms)},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ConditionFailedWithItem as failed:
            # Held by this very holder: this update, resent after its answer was lost, took it.
            return failed.item is not None and get_s(failed.item, "leasedBy") == holder
        return True

    async def stored_event(
        self, game: str, event_id: str, created_at_ms: int
    ) -> StoredEvent | None:
        item = await self._dynamo.get_item(
            "reading a webhook event",
            table=self._table,
            key=_event_key(game, created_at_ms, event_id),
        )
        return None if item is None else _stored_event(game, item)

    async def settle(
        self, due: DueEvent, attempts: Sequence[Attempt], *, status: Status, holder: str
    ) -> None:
        items = [
            {"Delete": {"TableName": self._table, "Key": _due_key(due)}},
            {
                "Update": {
                    "TableName": self._table,
                    "Key": _event_key(due.game, due.created_at_ms, due.event_id),
                    "UpdateExpression": "SET #status = :s, attempts = :a REMOVE nextAttemptAt",
                    "ConditionExpression": "attribute_exists(playerId)",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": {
                        ":s": s(status),
                        ":a": {"L": [_attempt_item(a) for a in attempts]},
                    },
                }
            },
        ]
        await self._dynamo.transact(
            f"marking a webhook event {status}", items, token=_token(holder, status)
        )

    async def retry_later(
        self, due: DueEvent, attempts: Sequence[Attempt], *, next_attempt_ms: int, holder: str
    ) -> None:
        items = [
            {
                "Update": {
                    "TableName": self._table,
                    "Key": _due_key(due),
                    "UpdateExpression": "SET nextAttemptAt = :next REMOVE leasedBy, leaseUntil",
                    "ConditionExpression": "leasedBy = :h",
                    "ExpressionAttributeValues": {":next": n(next_attempt_ms), ":h": s(holder)},
                }
            },
            {
                "Update": {
                    "TableName": self._table,
                    "Key": _event_key(due.game, due.created_at_ms, due.event_id),
                    "UpdateExpression": "SET attempts = :a, nextAttemptAt = :next",
                    "ConditionExpression": "attribute_exists(playerId)",
                    "ExpressionAttributeValues": {
                        ":a": {"L": [_attempt_item(a) for a in attempts]},
                        ":next": n(next_attempt_ms),
                    },
                }
            },
        ]
        await self._dynamo.transact(
            "scheduling a webhook event's next attempt", items, token=_token(holder, "retry")
        )

    async def events(self, game: str, *, before: str, limit: int) -> StoredEventPage:
        items, after = await page_before(
            self._dynamo,
            "reading the game's webhook events",
            table=self._table,
            partition=event_pk(game),
            before=before,
            limit=limit,
        )
        return StoredEventPage([_stored_event(game, item) for item in items], after)
