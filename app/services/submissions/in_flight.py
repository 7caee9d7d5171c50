"""What one process remembers between submissions: the Idempotency-Keys it is working on, and
the seeding leases it read lately."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from app import telemetry
from app.errors import RequestInFlight
from app.services.memory import Recent
from app.services.ports import Lease


class IdempotencyKeysInFlight:
    """The Idempotency-Keys this process is working on, each until its request ends: a second
    request with one of them is told to wait (409), not run a second time beside the first, for
    about what the first has left: the time this process's submissions take (a moving average),
    less the first's age so far, at least a second and never past ``hold_s`` (the deadline)."""

    def __init__(self, *, hold_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._hold_s = hold_s
        self._clock = clock
        self._started: dict[str, float] = {}
        self._typical_s = 1.0

    @contextmanager
    def claim(self, record_id: str) -> Iterator[None]:
        now = self._clock()
        started = self._started.get(record_id)
        if started is not None:
            telemetry.idempotent("in_flight")
            left_s = min(started + self._hold_s - now, started + self._typical_s - now)
            raise RequestInFlight(
                "a request with this Idempotency-Key is still being processed; retry later",
                retry_after=math.ceil(max(1.0, left_s)),
            )
        self._started[record_id] = now
        try:
            yield
        finally:
            del self._started[record_id]
            took = self._clock() - now
            self._typical_s += (took - self._typical_s) / 8


class SeenLeases:
    """Each board's seeding lease (or its absence) as this process last read it, for ``ttl_s``: a
    busy board's submissions read its lease about once a ``ttl_s``, not each time. The seeder's
    grace period after taking a lease covers this ``ttl_s`` as well as the request deadline, so a
    submission that acts on a remembered absence is still done before the seeder writes. A
    ``ttl_s`` of 0 remembers nothing."""

    def __init__(
        self, *, ttl_s: float, max_boards: int = 10_000, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._seen: Recent[str, Lease | None] = Recent(
            max_entries=max_boards, ttl_s=ttl_s, clock=clock
        )

    def unknown(self, board_ids: list[str]) -> list[str]:
        """The boards whose lease must be read now."""
        return [b for b in board_ids if b not in self._seen]

    def get(self, board_id: str) -> Lease | None:
        """As last read, even if it is time to read it again (a lease seen a moment ago is held
        until read again)."""
        return self._seen.last(board_id)

    def remember(self, board_id: str, lease: Lease | None) -> None:
        self._seen.put(board_id, lease)
