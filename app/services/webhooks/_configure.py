"""Setting, reading and removing a game's webhook. The secret is taken as given (the service signs
with it) and never shown again: no body, log line or error quotes it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.domain.clock import to_ms
from app.domain.webhooks import Webhook, secret_problem, target_of
from app.errors import InvalidInput, NotFound
from app.services.ports import Stores
from app.services.webhooks._policy import WebhookPolicy
from app.services.webhooks._targets import Resolver, target_refusal


@dataclass(frozen=True)
class WebhookAsk:
    game: str
    url: str
    secret: str
    now: datetime

    def __repr__(self) -> str:  # never the secret
        return f"WebhookAsk(game={self.game!r}, url={self.url!r})"


async def set_webhook(
    stores: Stores, ask: WebhookAsk, policy: WebhookPolicy, resolver: Resolver
) -> Webhook:
    errors = []
    try:
        target = target_of(ask.url, production=policy.production)
    except ValueError as exc:
        errors.append({"field": "url", "message": str(exc)})
    else:
        refused = await target_refusal(target, production=policy.production, resolver=resolver)
        if refused is not None:
            errors.append({"field": "url", "message": refused})
    problem = secret_problem(ask.secret)
    if problem is not None:
        errors.append({"field": "secret", "message": problem})
    if errors:
        raise InvalidInput(
            "; ".join(f"{e['field']}: {e['message']}" for e in errors), errors=errors
        )
    webhook = Webhook(game=ask.game, url=ask.url, secret=ask.secret, updated_at_ms=to_ms(ask.now))
    await stores.webhooks.put_webhook(webhook)
    return webhook


async def webhook_of(stores: Stores, game: str) -> Webhook:
    webhook = await stores.webhooks.webhook_of(game)
    if webhook is None:
        raise NotFound(f"the game {game!r} has no webhook")
    return webhook


async def remove_webhook(stores: Stores, game: str) -> None:
    if not await stores.webhooks.remove_webhook(game):
        raise NotFound(f"the game {game!r} has no webhook")
