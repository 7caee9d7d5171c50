"""Overload answered at once: each task lets in as many requests as its backend answers within a
latency target, and refuses the rest within a millisecond (503 ``overloaded``, with the wait in
``Retry-After``), instead of queueing work it cannot do until the request deadline cuts it off.

``AdaptiveLimit`` is the limit and how it moves (docs/decisions/0030-overload-answered-at-once.md);
``Admission`` is the ASGI middleware that applies it to the public reads and the submissions;
``ItemPlaces`` holds a batch's items to it one place each (decision 0034).
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

from starlette.types import ASGIApp, Receive, Scope, Send

from app import telemetry
from app.errors import PROBLEM_JSON, Overloaded

Kind = Literal["read", "write"]
KINDS: tuple[Kind, ...] = ("read", "write")

WINDOW_S = 0.5
"""How often the limit moves, at most: once per half second of requests."""
SHARE = 0.5
"""Each kind's guaranteed share of the limit: a flood of one cannot starve the other."""
MAXIMUM = 10_000


@dataclass
class _Window:
    """What one window saw: each kind's answered latencies, in-flight requests over time, and
    whether the limit was reached."""

    began: float
    peak: int
    latency_sum: dict[Kind, float] = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    answered: dict[Kind, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    busy_s: float = 0.0
    in_flight_s: float = 0.0  # the integral of in-flight requests over the busy time
    refused: int = 0


class AdaptiveLimit:
    """A concurrency limit that follows the backend's latency toward ``target_s`` (Little's law:
    ``n`` at once answered in ``latency`` each means ``n * target / latency`` at once fit). It
    moves only in a half-second window where it was reached. The latency is the slower kind's
    mean (reads, writes), counting requests past the target at their age: over the target the
    limit moves at once halfway down to that figure; under it, it grows by its square root, at
    most once a round trip and only while every recent latency and age is within the target
    (decision 0030). The clock is given, so tests drive it."""

    def __init__(
        self, *, target_s: float, initial: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.target_s = target_s
        self.limit = float(initial)
        self._clock = clock
        self._in_flight: dict[Kind, int] = dict.fromkeys(KINDS, 0)
        self._started: dict[int, tuple[float, Kind]] = {}
        self._next_ticket = 0
        self._changed = self._moved = clock()
        self._window = _Window(began=self._changed, peak=0)
        self._recent: dict[Kind, float] = dict.fromkeys(KINDS, 0.0)  # moving average latency

    @property
    def in_flight(self) -> int:
        return sum(self._in_flight.values())

    def in_flight_of(self, kind: Kind) -> int:
        return self._in_flight[kind]

    def try_admit(self, kind: Kind) -> int | None:
        """A ticket for a request let in, or ``None``: refused, with nothing done for it. A kind
        under its share of the limit is let in even past the limit, so neither starves."""
        now = self._clock()
        self._advance(now)
        limit = max(1, math.floor(self.limit))
        if self.in_flight >= limit and self._in_flight[kind] >= max(1, math.ceil(limit * SHARE)):
            self._window.refused += 1
            return None
        self._in_flight[kind] += 1
        self._window.peak = max(self._window.peak, self.in_flight)
        self._next_ticket += 1
        self._started[self._next_ticket] = (now, kind)
        return self._next_ticket

    def done(self, ticket: int, *, sample: bool = True) -> None:
        """A request let in has finished (``sample``: its latency says something of the
        backend's; an admin's long operation, say, does not)."""
        now = self._clock()
        self._advance(now)
        started = self._started.pop(ticket, None)
        if started is None:
            return
        began, kind = started
        self._in_flight[kind] -= 1
        if sample:
            self._window.latency_sum[kind] += now - began
            self._window.answered[kind] += 1

    def retry_after_s(self) -> int:
        """How long a refused request should wait: about the time the requests let in take to
        be answered, at least a second."""
        return max(1, min(60, math.ceil(max(self._recent.values()) or self.target_s)))

    def _advance(self, now: float) -> None:
        window = self._window
        elapsed = now - self._changed
        if self.in_flight:
            window.busy_s += elapsed
            window.in_flight_s += elapsed * self.in_flight
        self._changed = now
        if now - window.began >= WINDOW_S:
            self._move(now)

    def _move(self, now: float) -> None:
        window = self._window
        sums, counts = dict(window.latency_sum), dict(window.answered)
        oldest = 0.0
        for began, kind in self._started.values():
            oldest = max(oldest, now - began)
            if now - began > self.target_s:  # still running, and already late
                sums[kind] += now - began
                counts[kind] += 1
        means = {kind: sums[kind] / counts[kind] for kind in KINDS if counts[kind]}
        if not means:
            if not self.in_flight:
                self._window = _Window(began=now, peak=0)  # idle: nothing to learn
            return  # nothing answered yet: the window runs on until something is
        for kind, mean in means.items():
            self._recent[kind] = mean if not self._recent[kind] else (self._recent[kind] + mean) / 2
        reached = window.refused > 0 or window.peak >= math.floor(self.limit)
        latency = max(means.values())
        recent = max(self._recent.values())
        if reached and latency > self.target_s and window.busy_s > 0:
            fits = (window.in_flight_s / window.busy_s) * self.target_s / latency
            self.limit = max(1.0, min(self.limit, (self.limit + fits) / 2))
            self._moved = now
        elif (
            reached
            and recent <= self.target_s
            and oldest <= self.target_s
            and now - self._moved >= max(WINDOW_S, recent)
        ):
            self.limit = min(float(MAXIMUM), self.limit + max(1.0, math.sqrt(self.limit)))
            self._moved = now
        telemetry.admission_limit(self.limit)
        self._window = _Window(began=now, peak=self.in_flight)


def kind_of(scope: Scope) -> Kind | None:
    """What a request is to the limit: ``None`` for what is never refused (health, readiness,
    metrics, the viewer's files and the docs: nothing under ``/v1/``)."""
    path: str = scope["path"]
    if not path.startswith("/v1/"):
        return None
    return "read" if scope["method"] in {"GET", "HEAD"} else "write"


@dataclass
class _Place:
    """A request's place in the limit, for as long as it holds it."""

    limit: AdaptiveLimit
    ticket: int
    held: bool = True

    def give_back(self, *, sample: bool) -> None:
        if self.held:
            self.held = False
            self.limit.done(self.ticket, sample=sample)


_place: ContextVar[_Place | None] = ContextVar("admission_place", default=None)
"""The running request's place (its route's handler runs in the middleware's task)."""


async def leave_admission() -> None:
    """A dependency of the admin's long operations (with ``lift_deadline``): the request gives
    its place back, and its time says nothing of the backend's latency."""
    place = _place.get()
    if place is not None:
        place.give_back(sample=False)


class ItemPlaces:
    """The places a batch's items run in (decision 0034): at most ``most`` at once, each holding
    a place of its own under the task's limit while it runs, so that a batch counts as its
    items. The request's own place passes to its first item (a batch let in runs at least one
    item at a time); an item the limit refuses waits for one of its batch's own to finish, and is
    refused (503 ``overloaded``, nothing done) only where none of its batch is running."""

    def __init__(
        self, limit: AdaptiveLimit | None, *, most: int, first: _Place | None = None
    ) -> None:
        self._limit = limit
        self._most = most
        self._first = first
        self._running = 0
        self._freed = asyncio.Event()

    @asynccontextmanager
    async def place(self) -> AsyncIterator[None]:
        """Run the item in a place, or raise ``Overloaded``."""
        while True:
            ticket = self._take() if self._running < self._most else None
            if ticket is not None:
                break
            if self._running == 0 and self._limit is not None:  # none of its own to wait for
                telemetry.request_shed("write")
                raise Overloaded(
                    "this task is already answering all the requests its backend answers within "
                    f"{self._limit.target_s:g} s; nothing was done for this item: send it again "
                    "after retryAfter, with the same idempotencyKey",
                    retry_after=self._limit.retry_after_s(),
                )
            self._freed.clear()
            await self._freed.wait()
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            if self._limit is not None and ticket > 0:
                self._limit.done(ticket)
            self._freed.set()

    def _take(self) -> int | None:
        """A ticket of the limit for one more item (0 where there is no limit), or ``None``."""
        if self._limit is None:
            return 0
        first, self._first = self._first, None
        if first is not None and first.held:
            first.held = False  # the item's now: it gives the place back when it is done
            return first.ticket
        return self._limit.try_admit("write")


def batch_places(most: int) -> ItemPlaces:
    """The places for the running request's batch of items: its own place given to the first,
    under the limit the request was admitted by (without one, ``most`` at once, no more)."""
    place = _place.get()
    if place is None or not place.held:
        return ItemPlaces(None, most=most)
    # Left to the request where no item takes it (every item refused before it runs).
    return ItemPlaces(place.limit, most=most, first=place)


class Admission:
    """Pure ASGI middleware: every request under ``/v1/`` asks ``limit`` for a place; one
    refused is answered 503 ``overloaded`` at once, before routing, reading no body."""

    def __init__(self, app: ASGIApp, *, limit: AdaptiveLimit) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = kind_of(scope) if scope["type"] == "http" else None
        if kind is None:
            await self.app(scope, receive, send)
            return
        ticket = self.limit.try_admit(kind)
        if ticket is None:
            telemetry.request_shed(kind)
            await _send_overloaded(send, scope["path"], self.limit)
            return
        place = _Place(self.limit, ticket)
        token = _place.set(place)
        try:
            await self.app(scope, receive, send)
        finally:
            place.give_back(sample=True)
            _place.reset(token)


async def _send_overloaded(send: Send, path: str, limit: AdaptiveLimit) -> None:
    error = Overloaded(
        f"this task is already answering all the requests its backend answers within "
        f"{limit.target_s:g} s; nothing was done: retry after Retry-After (a submission with "
        "the same Idempotency-Key)",
        retry_after=limit.retry_after_s(),
    )
    body = json.dumps(error.problem(path)).encode()
    headers = [(name.lower().encode(), value.encode()) for name, value in error.headers().items()]
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                *headers,
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
