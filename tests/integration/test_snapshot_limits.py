"""A snapshot is one DynamoDB item, at most 400 KB: a manual snapshot whose top does not fit is a
422 that says by how much and what top fits, and writes nothing; a period-closed snapshot keeps
the longest top that fits and says so.

moto counts an item's size its own way and stores items DynamoDB refuses; every test's client
refuses a put over 400 KB by DynamoDB's count (``tests.dynamo_rules``), and fails the test that
sends one: without the checks, these were 500s."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog

from app.bootstrap import Runtime
from app.domain.periods import Board, Period
from app.services.registry import register_board
from app.services.snapshots import (
    ShortenedSnapshot,
    SnapshotPorts,
    get_snapshot,
    snapshot_closed_periods,
)
from app.store.item_sizes import ITEM_LIMIT_BYTES
from app.store.snapshots import MEMBERSHIP_PREFIX
from tests.conftest import ADMIN_KEY, Service
from tests.support import WIDEST_NAME, put_wide_rows, wide_player

RETENTION = timedelta(days=30)
SETTLE = timedelta(hours=1)
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
TOP = 1000


@pytest.fixture
def archive(runtime: Runtime) -> SnapshotPorts:
    s = runtime.stores
    return SnapshotPorts(s.index, s.counters, s.standings, s.snapshots, s.registry)


def board(period: str, *, game: str = "trivia") -> Board:
    return Board(game, "classic", Period.parse(period, now=NOW))


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
    runtime: Runtime, archive: SnapshotPorts
) -> None:
    day = board("day:2026-11-29")
    await put_wide_rows(runtime, day.board_id, TOP)
    await register_board(registry=archive.registry, board=day, retention=RETENTION)

    with structlog.testing.capture_logs() as logs:
        report = await snapshot_closed_periods(
            ports=archive, now=NOW, definitions=runtime.definitions, settle=SETTLE, top_n=TOP
        )

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
    stored = await get_snapshot(snapshots=archive.snapshots, board=day, taken_at=taken.taken_at)
    assert stored == taken
    assert (stored.reason, stored.top_n) == ("period-closed", TOP)
    assert [(e.rank, e.player_id) for e in stored.entries] == [
        (i + 1, wide_player(i)) for i in range(kept)
    ]
    assert sorted(await memberships(runtime)) == [wide_player(i) for i in range(kept)]
    (warning,) = [line for line in logs if line["event"] == "snapshot_shortened"]
    assert warning["log_level"] == "warning"
    assert (warning["board"], warning["top_n"], warning["kept"]) == (day.board_id, TOP, kept)
