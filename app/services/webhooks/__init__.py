"""A game's webhook: setting, reading and removing it, its events' deliveries, and the deliverer
each service task runs (``_deliver``), which POSTs the outbox's events to it (DESIGN.md section
15, decision 0037)."""

from __future__ import annotations

import httpx

from app.domain.webhooks import Webhook
from app.services.ports import Stores
from app.services.webhooks._configure import WebhookAsk, remove_webhook, set_webhook, webhook_of
from app.services.webhooks._deliver import EVENT_ID_HEADER, Clock, Deliverer, wall_clock_ms
from app.services.webhooks._history import Deliveries, deliveries
from app.services.webhooks._policy import WebhookPolicy
from app.services.webhooks._targets import Resolver, resolve


class Webhooks:
    """The use cases, over the stores, the policy, a clock and a resolver (tests give theirs)."""

    def __init__(
        self,
        stores: Stores,
        policy: WebhookPolicy,
        *,
        clock: Clock = wall_clock_ms,
        resolver: Resolver = resolve,
    ) -> None:
        self._stores = stores
        self._policy = policy
        self._resolver = resolver
        self.deliverer = Deliverer(stores, policy, clock=clock, resolver=resolver)

    async def set(self, ask: WebhookAsk) -> Webhook:
        """Check the URL (422 saying why it is refused) and the secret, and set them."""
        return await set_webhook(self._stores, ask, self._policy, self._resolver)

    async def show(self, game: str) -> Webhook:
        """The game's webhook (404 if none)."""
        return await webhook_of(self._stores, game)

    async def remove(self, game: str) -> None:
        """Remove it (404 if none): events are then recorded as attempts with no webhook."""
        await remove_webhook(self._stores, game)

    async def deliveries(self, game: str, *, cursor: str | None, limit: int) -> Deliveries:
        return await deliveries(
            self._stores, game, cursor=cursor, limit=limit, secret=self._policy.cursor_secret
        )

    async def deliver_forever(self) -> None:
        """The deliverer's loop, until cancelled (nothing, where the policy turns it off)."""
        if self._policy.poll_s > 0:
            await self.deliverer.run()

    async def deliver_due(self, http: httpx.AsyncClient) -> int:
        """One look for due events (tests call it instead of waiting for the loop)."""
        return await self.deliverer.deliver_due(http)


__all__ = [
    "EVENT_ID_HEADER",
    "Deliveries",
    "WebhookAsk",
    "WebhookPolicy",
    "Webhooks",
]
