"""A snapshot is one DynamoDB item, at most 400 KB: a manual snapshot whose top does not fit is a
422 that says by how much and what top fits, and writes nothing; a period-closed snapshot keeps
the longest top that fits and says so; one board failing does not stop a closed-periods run.

moto counts an item's size its own way and stores items DynamoDB refuses; every test's client
refuses a put over 400 KB by DynamoDB's count (``tests.dynamo_rules``), and fails the test that
sends one: without the checks, these were 500s and a closed-periods run stopped at the first board
that failed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog
from aiobotocore.awsrequest import AioAWSResponse

from app.bootstrap import Runtime
from app.domain.calendar import UTC_CALENDAR
from app.domain.periods import Board
from app.domain.storage_keys import MEMBERSHIP_PREFIX
from app.services.operations import Operations
from app.services.operations._snapshots import ShortenedSnapshot
from app.services.ports import Stores
from app.services.reads._snapshots import get_snapshot, list_snapshots
from app.services.registry import register_board
from app.store.item_sizes import ITEM_LIMIT_BYTES
from tests.conftest import ADMIN_KEY, Service
from tests.faults import install, rejected
from tests.support import WIDEST_NAME, lasting, operations, put_wide_rows, wide_player

RETENTION = timedelta(days=30)
SETTLE = timedelta(hours=1)
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
TOP = 1000


@pytest.fixture
def archive(runtime: Runtime) -> Stores:
    return runtime.stores


def ops(runtime: Runtime) -> Operations:
    """The runtime's operations, a period closing ``SETTLE`` after its end."""
    return operations(runtime, settle=SETTLE)


def board(period: str, *, game: str = "trivia") -> Board:
    return Board(game, "classic", UTC_CALENDAR.parse(period, now=NOW))


async def memberships(runtime: Runtime) -> list[str]:
    """Every snapshot membership row's player (a filtered scan: a whole one of a wide board takes
    moto seconds)."""
    players: list[str] = []
    kwargs: dict[str, Any] = {
        "TableName": runtime.tables.scores,
        "ConsistentRead": True,
        "FilterExpression": "begins_with(leaderboardId, :snap)",
        "ExpressionAttributeValues": {":snap": {"S": MEMBERSHIP_PREFIX}},
        "ProjectionExpression": "playerId",
    }
    while True:
        page = await runtime.client.scan(**kwargs)
        players.extend(item["playerId"]["S"] for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return players
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def test_a_manual_snapshot_too_large_for_one_item_is_a_422_that_writes_nothing(
    service: Service,
) -> None:
    runtime = service.runtime
    await put_wide_rows(runtime, "trivia#classic#alltime", TOP)
    url = "/v1/leaderboards/trivia/classic/alltime/snapshots"

    refused = await service.http.post(url, params={"top": TOP}, headers=ADMIN)
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    problem = refused.json()
    (error,) = problem["errors"]
    assert error["field"] == "top"
    size, limit, largest = error["itemBytes"], error["itemLimitBytes"], error["largestTop"]
    assert limit == ITEM_LIMIT_BYTES == 409_600
    assert size > limit
    assert 900 < largest < TOP
    for figure in (size, limit, largest):
        assert f"{figure:,}" in problem["detail"]
    # Nothing written: no snapshot, no membership row.
    assert (await service.http.get(url)).json()["snapshots"] == []
    assert await memberships(runtime) == []

    # The top it names fits (DynamoDB's check here takes it), and one more does not.
    over = await service.http.post(url, params={"top": largest + 1}, headers=ADMIN)
    assert over.status_code == 422, over.text
    assert over.json()["errors"][0]["largestTop"] == largest
    taken = await service.http.post(url, params={"top": largest}, headers=ADMIN)
    assert taken.status_code == 201, taken.text
    entries = taken.json()["entries"]
    assert [e["playerId"] for e in entries] == [wide_player(i) for i in range(largest)]
    assert entries[-1]["displayName"] == WIDEST_NAME
    assert sorted(await memberships(runtime)) == [wide_player(i) for i in range(largest)]


async def test_a_closed_period_snapshot_keeps_the_longest_top_that_fits_and_says_so(
    runtime: Runtime, archive: Stores
) -> None:
    day = board("day:2026-11-29")
    await put_wide_rows(runtime, day.board_id, TOP)
    await register_board(registry=archive.registry, board=day, definition=lasting(RETENTION))

    with structlog.testing.capture_logs() as logs:
        report = await ops(runtime).snapshot_closed_periods(now=NOW, top=TOP)

    assert report.failed == []
    (taken,) = report.taken
    (shortened,) = report.shortened
    kept = len(taken.entries)
    assert 900 < kept < TOP
    assert shortened == ShortenedSnapshot(
        board_id=day.board_id,
        taken_at=taken.taken_at,
        top_n=TOP,
        kept=kept,
        item_bytes=shortened.item_bytes,
        limit_bytes=ITEM_LIMIT_BYTES,
    )
    assert shortened.item_bytes > ITEM_LIMIT_BYTES
    stored = await get_snapshot(stores=archive, board=day, taken_at=taken.taken_at)
    assert stored == taken
    assert (stored.reason, stored.top_n) == ("closed", TOP)
    assert [(e.rank, e.player_id) for e in stored.entries] == [
        (i + 1, wide_player(i)) for i in range(kept)
    ]
    assert sorted(await memberships(runtime)) == [wide_player(i) for i in range(kept)]
    (warning,) = [line for line in logs if line["event"] == "snapshot_shortened"]
    assert warning["log_level"] == "warning"
    assert (warning["board"], warning["top_n"], warning["kept"]) == (day.board_id, TOP, kept)


async def test_one_board_failing_does_not_stop_the_closed_periods_run(
    runtime: Runtime, archive: Stores, dynamo_endpoint: str
) -> None:
    failing, fine = board("day:2026-11-29", game="chess"), board("day:2026-11-29")
    for target in (failing, fine):
        await put_wide_rows(runtime, target.board_id, 2)
        await register_board(registry=archive.registry, board=target, definition=lasting(RETENTION))

    def refuse_the_failing_board(operation: str, body: dict[str, Any]) -> AioAWSResponse | None:
        puts = [a["Put"] for a in body.get("TransactItems", []) if "Put" in a]
        if operation == "TransactWriteItems" and any(
            put["TableName"] == runtime.tables.snapshots
            and put["Item"]["leaderboardId"]["S"] == failing.board_id
            for put in puts
        ):
            return rejected("One or more parameter values were invalid")
        return None

    faults = install(runtime.client, dynamo_endpoint)
    faults.rules.append(refuse_the_failing_board)
    with structlog.testing.capture_logs() as logs:
        report = await ops(runtime).snapshot_closed_periods(now=NOW, top=100)
    assert report.failed == [failing.board_id]
    assert [s.board_id for s in report.taken] == [fine.board_id]
    assert await list_snapshots(snapshots=archive.snapshots, board=failing) == []
    (warning,) = [line for line in logs if line["event"] == "closed_period_snapshot_failed"]
    assert warning["board"] == failing.board_id

    # Left for the next run, which takes it.
    faults.rules.clear()
    again = await ops(runtime).snapshot_closed_periods(now=NOW, top=100)
    assert (again.failed, [s.board_id for s in again.taken]) == ([], [failing.board_id])
    assert again.already_taken == [fine.board_id]
