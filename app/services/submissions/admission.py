"""How many submissions to one board a task lets in at once: a burst past what the board can take
waits a moment for a place, then is refused with ``Retry-After`` (503, ``board-busy``), rather than
piling up behind the board's counter items until the request deadline cuts it off.

A board of ``shards`` takes ``shards`` times the submissions, so it lets in ``per_shard`` times
that many. Nothing is read or written for a refused submission: its retry, with the same
Idempotency-Key, is a new request.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from app import telemetry
from app.errors import BoardBusy


class _Gate:
    def __init__(self, places: int) -> None:
        self.places = asyncio.Semaphore(places)
        self.users = 0


class BoardAdmission:
    """``per_shard`` submissions to one board (of each of its shards) in flight on this task at
    most; one more waits up to ``wait_s`` in all for its boards' places. ``per_shard`` 0: no limit.
    """

    def __init__(self, *, per_shard: int, wait_s: float) -> None:
        self._per_shard = per_shard
        self._wait_s = wait_s
        self._gates: dict[str, _Gate] = {}

    def in_flight(self, board_id: str) -> int:
        """Submissions to the board this task holds or lets wait (for tests and metrics)."""
        gate = self._gates.get(board_id)
        return 0 if gate is None else gate.users

    @asynccontextmanager
    async def admitted(self, board_ids: Sequence[str], *, shards: int) -> AsyncIterator[None]:
        """A place on each board (taken in sorted order, so two submissions cannot deadlock), or
        ``BoardBusy`` once ``wait_s`` has passed without one."""
        if self._per_shard <= 0:
            yield
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + self._wait_s
        entered: list[str] = []
        held: list[str] = []
        try:
            for board_id in sorted(set(board_ids)):
                gate = self._gates.get(board_id)
                if gate is None:
                    gate = self._gates[board_id] = _Gate(self._per_shard * shards)
                gate.users += 1
                entered.append(board_id)
                if gate.places.locked():
                    telemetry.board_admission("waited")
                try:
                    async with asyncio.timeout_at(until):
                        await gate.places.acquire()
                except TimeoutError:
                    telemetry.board_admission("refused")
                    raise BoardBusy(
                        f"board {board_id} has all the submissions this task lets in at once "
                        f"({self._per_shard * shards}); retry after Retry-After with the same "
                        "Idempotency-Key",
                        retry_after=1,
                    ) from None
                held.append(board_id)
            yield
        finally:
            for board_id in held:
                self._gates[board_id].places.release()
            for board_id in entered:
                gate = self._gates[board_id]
                gate.users -= 1
                if gate.users == 0:
                    del self._gates[board_id]
