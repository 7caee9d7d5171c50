"""Three `leaderboard serve` processes on one backend, each with its closer (a close interval of
1 s, no lateness to wait for) and its webhook deliverer: a board of yesterday's day, seeded through
one of them, is closed with no operator command, exactly once: one ``closed`` snapshot, one
``board.closed`` event, which the game's webhook receives signed."""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

from app.bootstrap import Runtime
from app.domain.calendar import UTC_CALENDAR
from app.domain.clock import iso_ms, to_ms
from app.domain.events import verify
from app.domain.periods import Period, PeriodKind
from app.services.api_keys import digest_of
from app.settings import Settings
from tests.receivers import Receiver
from tests.served import clean_environment, serve
from tests.support import scores_items

ADMIN_KEY = "served-close-admin-key"
SECRET = "whsec-served-close-secret"
YESTERDAY = Period.containing(PeriodKind.DAY, datetime.now(UTC) - timedelta(days=1))
BOARD_ID = f"trivia#classic#{YESTERDAY.suffix}"
BOARD = f"/v1/leaderboards/trivia/classic/{YESTERDAY.display}"


async def _closes(runtime: Runtime) -> tuple[list[str], list[str]]:
    """The board's snapshots' reasons, and the outbox's events of the game (their types)."""
    listed = await runtime.stores.snapshots.list_snapshots(BOARD_ID, limit=10)
    events = [
        json.loads(i["body"]["S"])["type"]
        for i in await scores_items(runtime)
        if i["playerId"]["S"] == "outbox#trivia"
    ]
    return [s.reason for s in listed], events


async def test_three_served_tasks_close_a_board_once(
    runtime: Runtime, settings: Settings, tmp_path: Path
) -> None:
    environment = clean_environment() | {
        "LEADERBOARD_DYNAMODB_ENDPOINT": settings.dynamodb_endpoint or "",
        "LEADERBOARD_SCORES_TABLE": settings.scores_table,
        "LEADERBOARD_SNAPSHOTS_TABLE": settings.snapshots_table,
        "LEADERBOARD_MAX_LATENESS_SECONDS": "1",
        "LEADERBOARD_CLOSE_INTERVAL_SECONDS": "1",
        "LEADERBOARD_WEBHOOK_POLL_SECONDS": "1",
        "LEADERBOARD_API_KEYS": json.dumps(
            [{"name": "ops", "sha256": digest_of(ADMIN_KEY), "scopes": ["admin"]}]
        ),
    }
    receiver = Receiver()
    await receiver.start()
    with ExitStack() as stack:
        bases = []
        for i in range(3):
            directory = tmp_path / f"task-{i}"
            directory.mkdir()
            bases.append(stack.enter_context(serve(directory, environment, ready_timeout_s=60)))
        starts_at = UTC_CALENDAR.span(YESTERDAY).starts_at
        assert starts_at is not None
        at = iso_ms(to_ms(starts_at) + 3_600_000)
        rows = "".join(f"p{i},{100 + i},{at}\n" for i in range(5))
        async with httpx.AsyncClient(base_url=bases[0], timeout=30, trust_env=False) as http:
            hooked = await http.put(
                "/v1/games/trivia/webhook",
                json={"url": receiver.url, "secret": SECRET},
                headers={"Authorization": f"Bearer {ADMIN_KEY}"},
            )
            assert hooked.status_code == 200, hooked.text
            seeded = await http.post(
                f"{BOARD}/seed",
                params={"graceSeconds": 0},
                content="playerId,score,achievedAt\n" + rows,
                headers={"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "text/csv"},
            )
            assert seeded.status_code == 200, seeded.text
        for _ in range(60):  # at most 30 s; a close interval of 1 s takes one or two
            if (await _closes(runtime))[0] and receiver.received:
                break
            await asyncio.sleep(0.5)
        # Every task's closer and deliverer runs a few more times: none closes or sends again.
        await asyncio.sleep(3)
        reasons, events = await _closes(runtime)
    await receiver.stop()
    assert reasons == ["closed"]
    assert events == ["board.closed"]
    (delivered,) = receiver.received
    assert verify(
        SECRET, delivered.headers["leaderboard-signature"], delivered.body, now_s=int(time.time())
    )
    event = json.loads(delivered.body)
    assert (event["type"], event["leaderboardId"], event["playerCount"]) == (
        "board.closed",
        BOARD_ID,
        5,
    )
    assert [e["playerId"] for e in event["top"]] == ["p4", "p3", "p2", "p1", "p0"]
    assert delivered.headers["leaderboard-event-id"] == event["id"]
