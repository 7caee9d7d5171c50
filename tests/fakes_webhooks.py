"""In-memory fakes of the webhook ports (``WebhookStore``, ``OutboxStore``) for the unit tests;
``tests/integration/test_webhooks*.py`` hold the real adapter to the same duties."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from app.domain.clock import iso_ms
from app.domain.events import Event
from app.domain.webhooks import Attempt, Status, Webhook
from app.errors import TransactionCancelled
from app.services.ports.webhooks import DueEvent, StoredEvent, StoredEventPage


@dataclass
class MemoryWebhooks:
    hooks: dict[str, Webhook] = field(default_factory=dict)

    async def webhook_of(self, game: str) -> Webhook | None:
        return self.hooks.get(game)

    async def put_webhook(self, webhook: Webhook) -> None:
        self.hooks[webhook.game] = webhook

    async def remove_webhook(self, game: str) -> bool:
        return self.hooks.pop(game, None) is not None


@dataclass
class _Lease:
    holder: str
    until_ms: int


@dataclass
class MemoryOutbox:
    stored: dict[str, StoredEvent] = field(default_factory=dict)
    due: dict[str, DueEvent] = field(default_factory=dict)
    leases: dict[str, _Lease] = field(default_factory=dict)

    async def add_event(self, event: Event) -> None:
        self.stored[event.id] = StoredEvent(event, "pending", (), event.created_at_ms)
        self.due[event.id] = DueEvent(
            event.game, event.id, event.created_at_ms, event.created_at_ms
        )

    def _free(self, event_id: str, now_ms: int) -> bool:
        lease = self.leases.get(event_id)
        marker = self.due.get(event_id)
        return (
            marker is not None
            and marker.next_attempt_ms <= now_ms
            and (lease is None or lease.until_ms <= now_ms)
        )

    async def due_events(self, *, now_ms: int, limit: int) -> list[DueEvent]:
        found = [d for i, d in self.due.items() if self._free(i, now_ms)]
        return sorted(found, key=lambda d: (d.created_at_ms, d.event_id))[:limit]

    async def take(self, due: DueEvent, *, holder: str, until_ms: int, now_ms: int) -> bool:
        if not self._free(due.event_id, now_ms):
            return False
        self.leases[due.event_id] = _Lease(holder, until_ms)
        return True

    async def stored_event(
        self, game: str, event_id: str, created_at_ms: int
    ) -> StoredEvent | None:
        return self.stored.get(event_id)

    async def settle(
        self, due: DueEvent, attempts: Sequence[Attempt], *, status: Status, holder: str
    ) -> None:
        self.due.pop(due.event_id, None)
        self.leases.pop(due.event_id, None)
        stored = self.stored[due.event_id]
        self.stored[due.event_id] = replace(
            stored, status=status, attempts=tuple(attempts), next_attempt_ms=None
        )

    async def retry_later(
        self, due: DueEvent, attempts: Sequence[Attempt], *, next_attempt_ms: int, holder: str
    ) -> None:
        lease = self.leases.get(due.event_id)
        if lease is None or lease.holder != holder or due.event_id not in self.due:
            raise TransactionCancelled("the lease is gone", kind="condition")
        del self.leases[due.event_id]
        self.due[due.event_id] = replace(self.due[due.event_id], next_attempt_ms=next_attempt_ms)
        stored = self.stored[due.event_id]
        self.stored[due.event_id] = replace(
            stored, attempts=tuple(attempts), next_attempt_ms=next_attempt_ms
        )

    async def events(self, game: str, *, before: str, limit: int) -> StoredEventPage:
        def sort_key(stored: StoredEvent) -> str:
            return f"{iso_ms(stored.event.created_at_ms)}#{stored.event.id}"

        mine = sorted(
            (s for s in self.stored.values() if s.event.game == game), key=sort_key, reverse=True
        )
        if before:
            mine = [s for s in mine if sort_key(s) < before]
        page = mine[:limit]
        return StoredEventPage(page, sort_key(page[-1]) if len(mine) > limit else None)
