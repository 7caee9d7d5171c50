"""The webhook outbox, in the Scores table: events waiting to be delivered, and what each attempt
did.

- ``outbox#<game>`` / ``<createdAt>#<eventId>``: the event: ``type``, ``body`` (the JSON text sent),
  ``status`` (``pending``, ``delivered``, ``failed``), ``attempts`` (a list, oldest first),
  ``nextAttemptAt`` (epoch ms) and ``expiresAt`` (the table's TTL: kept a while after delivery
  so its outcome stays readable).
- ``outbox#due`` / ``<createdAt>#<game>#<eventId>``: one marker per event not yet delivered or given
  up: what a deliverer queries; it goes when the event is delivered or given up.

An event is written together with what it tells of (a period's close writes its final snapshot,
its registry mark and these two items in one transaction), so an event exists exactly when that
happened.
"""

from __future__ import annotations

from typing import Any

from app.domain.clock import iso_ms
from app.domain.events import Event
from app.store.items import key, n, s
from app.store.tables import TTL_ATTRIBUTE

OUTBOX_PREFIX = "outbox#"
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
