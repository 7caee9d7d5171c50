"""The close (docs/operations.md, "The close"): once a period's end plus the accepted lateness has
passed, its board gets its final snapshot (``reason: "closed"``) and one ``board.closed`` event,
written in one transaction with the mark on its registry row, so it happens once whatever the
number of tasks and restarts. Every task runs ``keep_closing`` in its lifespan; the operator's
``leaderboard snapshot --closed-periods`` runs the same work by hand.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import structlog

from app import telemetry
from app.domain.calendar import Calendar
from app.domain.clock import iso_ms, parse_iso_ms, to_ms
from app.domain.events import BOARD_CLOSED, Event
from app.domain.periods import Board
from app.errors import LeaderboardError
from app.services.ports import Snapshot

log = structlog.get_logger(__name__)

EVENT_TOP = 100
"""Entries of the final snapshot a ``board.closed`` event carries."""


def closed_event(
    board: Board,
    calendar: Calendar,
    snapshot: Snapshot,
    *,
    extra: Mapping[str, Any] = MappingProxyType({}),
) -> Event:
    """The board's ``board.closed`` event, as its final snapshot ``snapshot`` tells it; its
    period's span is its variant's ``calendar``'s; ``extra``: fields more (a league's moves)."""
    span = calendar.span(board.period)
    fields: dict[str, Any] = {
        "leaderboardId": board.board_id,
        "period": {
            "id": board.period.display,
            "startsAt": None if span.starts_at is None else iso_ms(to_ms(span.starts_at)),
            "endsAt": None if span.ends_at is None else iso_ms(to_ms(span.ends_at)),
        },
        "closedAt": snapshot.taken_at,
        "playerCount": snapshot.player_count,
        "top": [
            {
                "rank": entry.rank,
                "playerId": entry.player_id,
                "displayName": entry.display_name,
                "country": entry.country,
                "score": entry.score,
                "achievedAt": entry.achieved_at,
            }
            for entry in snapshot.entries[:EVENT_TOP]
        ],
        **extra,
    }
    created = parse_iso_ms(snapshot.taken_at)
    return Event.of(board.game, BOARD_CLOSED, fields, created_at_ms=created)


@dataclass(frozen=True)
class CloseCounts:
    """What one run of the closer did: boards it closed, boards another task or run closed
    while it tried (``raced``), boards it failed to close (left for the next run)."""

    closed: int
    raced: int
    failed: int

    def told(self) -> None:
        """Counted (``leaderboard_period_closes_total``), and logged where anything happened."""
        telemetry.periods_closed("closed", self.closed)
        telemetry.periods_closed("raced", self.raced)
        telemetry.periods_closed("failed", self.failed)
        if self.closed or self.raced or self.failed:
            log.info("periods_closed", closed=self.closed, raced=self.raced, failed=self.failed)


async def keep_closing(
    close: Callable[[datetime], Awaitable[CloseCounts]],
    *,
    interval_s: float,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """Run ``close(now)`` every ``interval_s`` (uniformly jittered between half and the whole
    of it, so the tasks of a service started together spread out), until cancelled. A run that
    fails is logged and the next one tries again: what it did not close stays due, and a task
    whose closer stopped would close nothing until it restarts."""
    await asyncio.sleep(random.uniform(0, interval_s / 2))
    while True:
        try:
            (await close(clock())).told()
        except LeaderboardError as exc:
            log.warning("closer_run_failed", error=type(exc).__name__, detail=exc.detail)
        except Exception:
            log.exception("closer_run_failed")
        await asyncio.sleep(random.uniform(interval_s / 2, interval_s))
