"""Webhook deliveries through the real adapter on the embedded backend, to a real receiver on
127.0.0.1: an event is POSTed signed, with its id; a receiver down for an hour gets every event
once it is back, each with its original id; two deliverers at once send an event once; and
DynamoDB's lost answers and throttling on the outbox's writes lose no event."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
from dataclasses import dataclass
from datetime import datetime

from app.bootstrap import Runtime
from app.domain.clock import from_ms
from app.domain.events import BOARD_CLOSED, SIGNATURE_HEADER, Event, verify
from app.domain.webhooks import GIVE_UP_AFTER_MS, IpAddress
from app.errors import LeaderboardError
from app.services.webhooks import WebhookAsk, WebhookPolicy, Webhooks
from app.services.webhooks._targets import Resolver, resolve
from tests.faults import Faithful, cancelled_at, fail_first, install
from tests.receivers import Receiver, receiving
from tests.support import now_ms

SECRET = "whsec-a-secret-of-enough-length"


@dataclass
class Clock:
    """The deliverers' time, which a test moves."""

    now: int

    def __call__(self) -> int:
        return self.now

    def move(self, seconds: float) -> None:
        self.now += int(seconds * 1000)


def webhooks(
    runtime: Runtime, clock: Clock, *, lease_s: float = 30.0, resolver: Resolver = resolve
) -> Webhooks:
    policy = WebhookPolicy(production=False, cursor_secret=b"c" * 32, lease_s=lease_s)
    return Webhooks(runtime.stores, policy, clock=clock, resolver=resolver)


@dataclass
class Names:
    """A resolver whose answers a test sets (and changes: DNS answers do)."""

    answers: dict[str, str]

    async def __call__(self, host: str, port: int) -> list[IpAddress]:
        if host not in self.answers:
            raise OSError(f"{host} does not resolve")
        return [ipaddress.ip_address(self.answers[host])]


async def events(runtime: Runtime, clock: Clock, count: int, game: str = "trivia") -> list[Event]:
    made = []
    for i in range(count):
        event = Event.of(
            game,
            BOARD_CLOSED,
            {"leaderboardId": f"{game}#classic#day:2026-12-0{i + 1}", "playerCount": i},
            created_at_ms=clock.now - count + i,
        )
        await runtime.stores.outbox.add_event(event)
        made.append(event)
    return made


async def deliver(hooks: Webhooks) -> int:
    async with hooks.deliverer.http_client() as http:
        return await hooks.deliver_due(http)


async def set_hook(hooks: Webhooks, receiver: Receiver, clock: Clock) -> None:
    ask = WebhookAsk("trivia", receiver.url, SECRET, _utc(clock.now))
    await hooks.set(ask)


def _utc(ms: int) -> datetime:
    return from_ms(ms)


async def test_an_event_is_posted_signed_with_its_id(runtime: Runtime) -> None:
    clock = Clock(now_ms())
    hooks = webhooks(runtime, clock)
    async with receiving() as receiver:
        await set_hook(hooks, receiver, clock)
        (event,) = await events(runtime, clock, 1)
        assert await deliver(hooks) == 1
        assert await deliver(hooks) == 0, "a delivered event is not sent again"
    (got,) = receiver.received
    assert got.body == event.body.encode()
    assert got.headers["content-type"] == "application/json"
    assert got.headers["leaderboard-event-id"] == event.id
    header = got.headers[SIGNATURE_HEADER.lower()]
    assert verify(SECRET, header, got.body, now_s=clock.now // 1000)
    assert not verify(SECRET + "x", header, got.body, now_s=clock.now // 1000)
    assert json.loads(got.body)["id"] == event.id
    page = await hooks.deliveries("trivia", cursor=None, limit=20)
    (stored,) = page.events
    assert stored.status == "delivered"
    assert [(a.outcome, a.status) for a in stored.attempts] == [("delivered", 200)]
    assert stored.next_attempt_ms is None


async def test_a_receiver_down_for_an_hour_gets_every_event_once_back(runtime: Runtime) -> None:
    clock = Clock(now_ms())
    hooks = webhooks(runtime, clock)
    receiver = Receiver()
    await receiver.start()
    await set_hook(hooks, receiver, clock)
    await receiver.stop()  # down: its port refuses connections
    made = await events(runtime, clock, 3)
    for _ in range(60):  # an hour, a look a minute
        await deliver(hooks)
        clock.move(60)
    page = await hooks.deliveries("trivia", cursor=None, limit=20)
    for stored in page.events:
        assert stored.status == "pending"
        assert {a.outcome for a in stored.attempts} == {"error"}
        # 10 s, 30 s, 1 min, 5 min, 15 min, 30 min: 6 failed attempts within the hour, and
        # another 1 min later (a look a minute rounds each wait up).
        assert 6 <= len(stored.attempts) <= 8, stored.attempts
        assert stored.next_attempt_ms is not None
        assert stored.next_attempt_ms > clock.now - 60_000
    await receiver.start()  # back, on the same port
    try:
        clock.move(3600)
        assert await deliver(hooks) == 3
    finally:
        await receiver.stop()
    assert sorted(receiver.ids()) == sorted(e.id for e in made)
    assert sorted(r.body for r in receiver.received) == sorted(e.body.encode() for e in made)
    page = await hooks.deliveries("trivia", cursor=None, limit=20)
    assert {s.status for s in page.events} == {"delivered"}


async def test_an_event_is_given_up_after_24_hours(runtime: Runtime) -> None:
    clock = Clock(now_ms())
    hooks = webhooks(runtime, clock)
    async with receiving(status=500) as receiver:
        await set_hook(hooks, receiver, clock)
        (event,) = await events(runtime, clock, 1)
        await deliver(hooks)
        clock.move(GIVE_UP_AFTER_MS / 1000)
        await deliver(hooks)  # the last try, at the end of the 24 hours
        clock.move(3600)
        assert await deliver(hooks) == 0
    (stored,) = (await hooks.deliveries("trivia", cursor=None, limit=1)).events
    assert stored.status == "failed"
    assert [(a.outcome, a.status) for a in stored.attempts] == [("failed", 500)] * 2
    assert receiver.ids() == [event.id] * 2


async def test_two_deliverers_at_once_send_an_event_once(runtime: Runtime) -> None:
    clock = Clock(now_ms())
    one, other = webhooks(runtime, clock), webhooks(runtime, clock)
    async with receiving() as receiver:
        receiver.wait_s = 0.3  # both look while the first send is in flight
        await set_hook(one, receiver, clock)
        made = await events(runtime, clock, 4)
        sent = await asyncio.gather(deliver(one), deliver(other), deliver(one))
    assert sum(sent) == 4
    assert sorted(receiver.ids()) == sorted(e.id for e in made)


async def test_no_event_is_lost_to_lost_answers_and_throttling(
    runtime: Runtime, dynamo_endpoint: str
) -> None:
    clock = Clock(now_ms())
    hooks = webhooks(runtime, clock, lease_s=5)
    faults = install(runtime.client, dynamo_endpoint)
    async with receiving() as receiver:
        await set_hook(hooks, receiver, clock)
        made = await events(runtime, clock, 3)
        faults.lose["UpdateItem"] = 2  # two leases taken whose answers are lost (resent)
        faults.lose_responses = 1  # a delivered event's transaction, applied, its answer lost
        faults.rules.append(
            fail_first(
                "TransactWriteItems",
                1,
                lambda body: cancelled_at(body, "ThrottlingError", index=0),
            )
        )
        await deliver(hooks)
        # A lease whose answer was lost is told by its holder on the resend: sent at once.
        assert sorted(set(receiver.ids())) == sorted(e.id for e in made)
        for _ in range(3):
            clock.move(10)  # past the leases of the events whose outcome was not recorded
            await deliver(hooks)
    assert sorted(set(receiver.ids())) == sorted(e.id for e in made)
    page = await hooks.deliveries("trivia", cursor=None, limit=20)
    assert {s.status for s in page.events} == {"delivered"}
    assert faults.lose["UpdateItem"] == 0
    assert faults.lose_responses == 0


async def test_deliveries_under_the_faithful_run(runtime: Runtime, faithful_run: Faithful) -> None:
    clock = Clock(now_ms())
    hooks = webhooks(runtime, clock, lease_s=5)
    async with receiving() as receiver:
        await set_hook(hooks, receiver, clock)
        made = await events(runtime, clock, 12)
        for _ in range(12):
            # The poll's own query may be throttled: the loop logs it and looks again.
            with contextlib.suppress(LeaderboardError):
                await deliver(hooks)
            clock.move(10)
    assert sum(faithful_run.injected.values()) > 0, "the run met none of DynamoDB's faults"
    with faithful_run.quietly():
        page = await hooks.deliveries("trivia", cursor=None, limit=20)
    assert sorted(set(receiver.ids())) == sorted(e.id for e in made)
    assert {s.status for s in page.events} == {"delivered"}


async def test_a_delivery_connects_to_the_address_checked(runtime: Runtime) -> None:
    clock, names = Clock(now_ms()), Names({"hooks.test": "127.0.0.1"})
    hooks = webhooks(runtime, clock, resolver=names)
    async with receiving() as receiver:
        url = f"http://hooks.test:{receiver.port}/hooks/leaderboard"
        await hooks.set(WebhookAsk("trivia", url, SECRET, _utc(clock.now)))
        (first,) = await events(runtime, clock, 1)
        # No DNS knows hooks.test: the request reached the receiver by the address checked.
        assert await deliver(hooks) == 1
        assert receiver.ids() == [first.id]
        assert receiver.received[0].headers["host"] == f"hooks.test:{receiver.port}"
        # The name now points at 0.0.0.0, which Linux connects to this host: refused everywhere
        # (production refuses private and loopback addresses too: tests/unit/test_webhooks.py).
        names.answers["hooks.test"] = "0.0.0.0"  # noqa: S104 - an address refused, not bound
        (second,) = await events(runtime, clock, 1)
        assert await deliver(hooks) == 1
    assert receiver.ids() == [first.id], "nothing is sent to an address refused"
    stored = {
        s.event.id: s for s in (await hooks.deliveries("trivia", cursor=None, limit=5)).events
    }
    (attempt,) = stored[second.id].attempts
    assert attempt.outcome == "refused"
    assert attempt.error is not None
    assert "resolves to 0.0.0.0, an unspecified address" in attempt.error
    assert stored[second.id].status == "pending"
