"""The close's own parts, with no I/O: the ``board.closed`` event a final snapshot makes, and a
closer that keeps running past a failed run."""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import UTC, datetime

from app.domain.calendar import UTC_CALENDAR, Calendar
from app.domain.periods import Board, Period
from app.errors import Unavailable
from app.services.operations import CloseCounts
from app.services.operations._close import EVENT_TOP, closed_event, keep_closing
from app.services.ports import Snapshot, SnapshotEntry

NOW = datetime(2026, 12, 6, 1, 0, 12, 345_000, tzinfo=UTC)


def _snapshot(entries: int) -> Snapshot:
    return Snapshot(
        board_id="trivia#classic#week#2026-W49",
        taken_at="2026-12-06T01:00:12.345Z",
        reason="closed",
        player_count=entries + 7,
        top_n=1000,
        entries=tuple(
            SnapshotEntry(r, f"p{r}", None, "NZ", 10_000 - r, "2026-12-01T00:00:00.000Z")
            for r in range(1, entries + 1)
        ),
    )


def test_the_event_tells_the_final_snapshot_and_its_period() -> None:
    board = Board("trivia", "classic", Period.parse("week:2026-W49"))
    event = closed_event(board, UTC_CALENDAR, _snapshot(150))
    body = json.loads(event.body)
    assert (event.game, event.type, body["id"]) == ("trivia", "board.closed", event.id)
    assert event.created_at_ms == 1_796_518_812_345
    assert body["period"] == {
        "id": "week:2026-W49",
        "startsAt": "2026-11-30T00:00:00.000Z",
        "endsAt": "2026-12-07T00:00:00.000Z",
    }
    assert (body["closedAt"], body["playerCount"]) == ("2026-12-06T01:00:12.345Z", 157)
    assert len(body["top"]) == EVENT_TOP
    assert body["top"][0] == {
        "rank": 1,
        "playerId": "p1",
        "displayName": None,
        "country": "NZ",
        "score": 9_999,
        "achievedAt": "2026-12-01T00:00:00.000Z",
    }
    assert closed_event(board, UTC_CALENDAR, _snapshot(1)).id != event.id
    # In the variant's time zone: the local week, from local midnight to local midnight.
    auckland = closed_event(board, Calendar("Pacific/Auckland"), _snapshot(1))
    assert json.loads(auckland.body)["period"] == {
        "id": "week:2026-W49",
        "startsAt": "2026-11-29T11:00:00.000Z",
        "endsAt": "2026-12-06T11:00:00.000Z",
    }


async def test_the_closer_runs_again_after_a_run_that_failed() -> None:
    runs: list[datetime] = []
    three = asyncio.Event()

    async def close(now: datetime) -> CloseCounts:
        runs.append(now)
        if len(runs) >= 3:
            three.set()
        if len(runs) == 1:
            raise Unavailable("DynamoDB did not answer")
        if len(runs) == 2:
            raise RuntimeError("a bug")
        return CloseCounts(closed=0, raced=0, failed=0)

    closer = asyncio.create_task(keep_closing(close, interval_s=0.02, clock=lambda: NOW))
    await asyncio.wait_for(three.wait(), timeout=5)
    closer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await closer
    assert runs[:3] == [NOW] * 3
