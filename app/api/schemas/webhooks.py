"""The webhook's bodies (DESIGN.md section 15): setting it, reading it (never its secret), and
its events' deliveries."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.api.schemas.common import CamelModel
from app.domain.clock import iso_ms
from app.domain.webhooks import MAX_SECRET, MAX_URL, MIN_SECRET, Attempt, Webhook
from app.services.ports.webhooks import StoredEvent
from app.services.webhooks import Deliveries


class WebhookIn(CamelModel):
    # A 422 for either never quotes what was sent (the secret): app/api/invalid.py.
    url: str = Field(
        max_length=MAX_URL,
        description=f"http(s), at most {MAX_URL} characters; https only in production, and never "
        "a host that is or resolves to a private, loopback, link-local, multicast, reserved or "
        "unspecified address",
    )
    secret: str = Field(
        min_length=MIN_SECRET,
        max_length=MAX_SECRET,
        description=f"{MIN_SECRET} to {MAX_SECRET} characters: the key the events are signed "
        "with (never shown again)",
    )

    model_config = CamelModel.model_config | {"extra": "forbid"}


class WebhookOut(CamelModel):
    url: str
    secret_set: Literal[True] = Field(description="a secret is set (it is never shown)")
    updated_at: str

    @classmethod
    def of(cls, webhook: Webhook) -> WebhookOut:
        return cls(url=webhook.url, secret_set=True, updated_at=iso_ms(webhook.updated_at_ms))


class AttemptOut(CamelModel):
    at: str
    outcome: Literal["delivered", "failed", "error", "refused", "no-webhook"] = Field(
        description="delivered: a 2xx; failed: another status; error: no answer (a timeout, a "
        "refused connection); refused: the URL's host is or resolves to an address a webhook may "
        "not reach; no-webhook: the game had none set"
    )
    status: int | None = Field(default=None, description="the receiver's HTTP status")
    error: str | None = Field(default=None, description="why there was no answer")
    duration_ms: int

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptOut:
        return cls(
            at=iso_ms(attempt.at_ms),
            outcome=attempt.outcome,
            status=attempt.status,
            error=attempt.error,
            duration_ms=attempt.duration_ms,
        )


class DeliveryOut(CamelModel):
    id: str
    type: str
    created_at: str
    status: Literal["pending", "delivered", "failed"] = Field(
        description="pending: not delivered yet, tried again at nextAttemptAt; failed: given up "
        "24 hours after the event was made"
    )
    attempts: list[AttemptOut] = Field(description="the latest 20 at most, oldest first")
    next_attempt_at: str | None = Field(default=None, description="while pending")

    @classmethod
    def of(cls, stored: StoredEvent) -> DeliveryOut:
        after = stored.next_attempt_ms
        return cls(
            id=stored.event.id,
            type=stored.event.type,
            created_at=iso_ms(stored.event.created_at_ms),
            status=stored.status,
            attempts=[AttemptOut.of(a) for a in stored.attempts],
            next_attempt_at=None if after is None else iso_ms(after),
        )


class DeliveriesOut(CamelModel):
    deliveries: list[DeliveryOut] = Field(description="the game's events, newest first")
    next_cursor: str | None

    @classmethod
    def of(cls, page: Deliveries) -> DeliveriesOut:
        return cls(
            deliveries=[DeliveryOut.of(e) for e in page.events], next_cursor=page.next_cursor
        )
