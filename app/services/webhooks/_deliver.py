"""The deliverer every service task runs: it looks for due events every few seconds, leases each
one (so no two tasks send it at once), POSTs its stored body, signed, to the game's webhook, and
records the attempt: delivered on a 2xx, else tried again on the backoff schedule until the
event's 24 hours are over (``app.domain.webhooks``). Delivery is at least once: a task that dies
after a receiver's 2xx and before it records it leaves the event to be sent again once its lease
lapses; consumers drop a repeat by the event's id."""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import time
from collections.abc import Callable

import httpx
import structlog

from app.domain.events import SIGNATURE_HEADER, signature
from app.domain.webhooks import Attempt, Outcome, Webhook, kept, next_attempt_ms, target_of
from app.errors import LeaderboardError
from app.services.ports import Stores
from app.services.ports.webhooks import DueEvent, StoredEvent
from app.services.webhooks._policy import WebhookPolicy
from app.services.webhooks._targets import Resolver, TargetRefused, checked_addresses, pinned

log = structlog.get_logger(__name__)

EVENT_ID_HEADER = "Leaderboard-Event-Id"
Clock = Callable[[], int]
"""Now, in epoch milliseconds."""


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class Deliverer:
    """One task's deliverer. ``clock`` says what time it is (tests move it), ``resolver`` what
    a host's addresses are."""

    def __init__(
        self,
        stores: Stores,
        policy: WebhookPolicy,
        *,
        clock: Clock = wall_clock_ms,
        resolver: Resolver,
    ) -> None:
        self._stores = stores
        self._policy = policy
        self._clock = clock
        self._resolver = resolver
        self._name = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"

    def http_client(self) -> httpx.AsyncClient:
        """A client as deliveries need it: no redirect followed (a receiver's redirect could
        point anywhere), the policy's timeout, no cookies kept between receivers."""
        return httpx.AsyncClient(
            follow_redirects=False, timeout=self._policy.timeout_s, trust_env=False
        )

    async def run(self) -> None:
        """Deliver what is due every ``poll_s`` until cancelled; an error is logged, never
        fatal."""
        async with self.http_client() as http:
            while True:
                try:
                    await self.deliver_due(http)
                except LeaderboardError as exc:
                    log.warning("webhook_poll_failed", reason=type(exc).__name__, error=str(exc))
                except Exception:
                    log.exception("webhook_poll_failed")
                await asyncio.sleep(self._policy.poll_s)

    async def deliver_due(self, http: httpx.AsyncClient) -> int:
        """One look for due events, each tried by this task if it takes its lease; how many
        attempts this task made and recorded (delivered or not)."""
        now = self._clock()
        due = await self._stores.outbox.due_events(now_ms=now, limit=self._policy.batch)
        sent = await asyncio.gather(*(self._deliver(http, d) for d in due), return_exceptions=True)
        for outcome in sent:
            if isinstance(outcome, LeaderboardError):
                log.warning("webhook_delivery_failed", reason=type(outcome).__name__)
            elif isinstance(outcome, BaseException):
                log.error("webhook_delivery_failed", exc_info=outcome)
        return sum(1 for outcome in sent if outcome is True)

    async def _deliver(self, http: httpx.AsyncClient, due: DueEvent) -> bool:
        outbox, now = self._stores.outbox, self._clock()
        holder = f"{self._name}:{secrets.token_hex(8)}"  # new for every lease: see OutboxStore.take
        lease_ms = int(self._policy.lease_s * 1000)
        if not await outbox.take(due, holder=holder, until_ms=now + lease_ms, now_ms=now):
            return False  # another task took it first
        stored = await outbox.stored_event(due.game, due.event_id, due.created_at_ms)
        if stored is None:
            log.warning("webhook_event_missing", game=due.game, event_id=due.event_id)
            return False
        webhook = await self._stores.webhooks.webhook_of(due.game)
        attempt = await self._attempt(http, webhook, stored)
        attempts = kept(list(stored.attempts), attempt)
        log.info(
            "webhook_attempt",
            game=due.game,
            event_id=due.event_id,
            outcome=attempt.outcome,
            status=attempt.status,
            duration_ms=attempt.duration_ms,
        )
        if attempt.outcome == "delivered":
            await outbox.settle(due, attempts, status="delivered", holder=holder)
            return True
        failed = sum(1 for a in attempts if a.outcome != "delivered")
        after = next_attempt_ms(
            failed_attempts=failed, now_ms=self._clock(), created_at_ms=due.created_at_ms
        )
        if after is None:
            await outbox.settle(due, attempts, status="failed", holder=holder)
            log.warning("webhook_event_given_up", game=due.game, event_id=due.event_id)
        else:
            await outbox.retry_later(due, attempts, next_attempt_ms=after, holder=holder)
        return True

    async def _attempt(
        self, http: httpx.AsyncClient, webhook: Webhook | None, stored: StoredEvent
    ) -> Attempt:
        at = self._clock()
        if webhook is None:
            return Attempt(at, "no-webhook", 0, error="the game has no webhook set")
        production = self._policy.production
        try:
            target = target_of(webhook.url, production=production)
        except ValueError as exc:
            return Attempt(at, "refused", 0, error=f"the URL {exc}")
        try:
            addresses = await checked_addresses(
                target, production=production, resolver=self._resolver
            )
        except TargetRefused as refused:
            return Attempt(at, "refused", 0, error=str(refused))
        request = pinned(webhook.url, addresses[0])
        body = stored.event.body.encode()
        headers = {
            **request.headers,
            "Content-Type": "application/json",
            SIGNATURE_HEADER: signature(webhook.secret, at // 1000, body),
            EVENT_ID_HEADER: stored.event.id,
        }
        began = time.perf_counter()
        try:
            # Streamed, and its body never read: a receiver's answer is its status alone.
            async with http.stream(
                "POST",
                request.url,
                content=body,
                headers=headers,
                timeout=self._policy.timeout_s,
                extensions=request.extensions,
            ) as response:
                status = response.status_code
        except httpx.TimeoutException:
            return Attempt(
                at, "error", _since(began), error=f"no answer within {self._policy.timeout_s:g} s"
            )
        except httpx.HTTPError as exc:
            return Attempt(at, "error", _since(began), error=f"no answer ({type(exc).__name__})")
        outcome: Outcome = "delivered" if 200 <= status < 300 else "failed"
        return Attempt(at, outcome, _since(began), status=status)


def _since(began: float) -> int:
    return round((time.perf_counter() - began) * 1000)
