"""The webhook ports: a game's webhook (``webhook#<game>`` / ``webhook``), and the outbox of its
events (``app.store.outbox``): what waits to be delivered, a short lease on each one a deliverer
is sending, and what each attempt did."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from app.domain.events import Event
from app.domain.webhooks import Attempt, Status, Webhook


@dataclass(frozen=True)
class DueEvent:
    """An event's marker in ``outbox#due``: it waits to be delivered."""

    game: str
    event_id: str
    created_at_ms: int
    next_attempt_ms: int


@dataclass(frozen=True)
class StoredEvent:
    event: Event
    status: Status
    attempts: tuple[Attempt, ...]
    """The latest attempts, oldest first (at most ``app.domain.webhooks.KEPT_ATTEMPTS``)."""
    next_attempt_ms: int | None
    """While it is pending."""


@dataclass(frozen=True)
class StoredEventPage:
    events: list[StoredEvent]
    last: str | None
    """The sort key of the page's last event when more may follow."""


class WebhookStore(Protocol):
    async def webhook_of(self, game: str) -> Webhook | None:
        """The game's webhook, strongly consistent."""

    async def put_webhook(self, webhook: Webhook) -> None:
        """Set it (replacing the game's webhook, if any)."""

    async def remove_webhook(self, game: str) -> bool:
        """Delete it; ``False`` if the game had none."""


class OutboxStore(Protocol):
    async def add_event(self, event: Event) -> None:
        """Put the event in the outbox, due at once (its makers usually write ``event_puts`` in
        their own transaction instead)."""

    async def due_events(self, *, now_ms: int, limit: int) -> list[DueEvent]:
        """Up to ``limit`` markers due by ``now_ms`` and held by no live lease, oldest first."""

    async def take(self, due: DueEvent, *, holder: str, until_ms: int, now_ms: int) -> bool:
        """Lease the marker to ``holder`` until ``until_ms`` if it is still due and free; whether
        it was taken (by this call, or by this call resent after its answer was lost)."""

    async def stored_event(
        self, game: str, event_id: str, created_at_ms: int
    ) -> StoredEvent | None:
        """The event's item, strongly consistent."""

    async def settle(
        self, due: DueEvent, attempts: Sequence[Attempt], *, status: Status, holder: str
    ) -> None:
        """The event is ``delivered`` or ``failed`` (given up): its status and attempts set and
        its marker deleted, in one transaction."""

    async def retry_later(
        self, due: DueEvent, attempts: Sequence[Attempt], *, next_attempt_ms: int, holder: str
    ) -> None:
        """The attempts so far, and the marker due again at ``next_attempt_ms`` with its lease
        let go, in one transaction; ``TransactionCancelled`` if ``holder``'s lease is gone."""

    async def events(self, game: str, *, before: str, limit: int) -> StoredEventPage:
        """The game's events, newest first, from before the sort key ``before`` (``""``: the
        newest)."""
