"""The scheduled reconcile (``leaderboard reconcile --live --apply``, issue 27): every board still
taking submissions is made true again, closed ones are left alone, a board a seed holds is left to
its seeder, and the run's one JSON line carries the metrics the stack's drift alarm reads."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.periods import Board, Period, PeriodKind
from app.domain.storage_keys import coarse_pk
from app.services.operations import LiveReconcileReport
from app.services.ports import CoarseItem, CounterItem, CounterStore
from app.services.registry import register_board
from app.store.tables import TableNames
from tests.conftest import Service
from tests.integration.test_cli import _command
from tests.integration.test_reconcile import add_to_counter
from tests.support import counter_total, lasting, operations, submit

LAYOUT = BucketLayout()
ALLTIME = "trivia#classic#alltime"
CLOSED = Board("trivia", "classic", Period(PeriodKind.DAY, "2026-11-20"))
"""A day board whose period closed long ago (still within its retention in the test's time)."""


async def _live(
    runtime: Runtime, *, apply: bool = True, counters: CounterStore | None = None
) -> LiveReconcileReport:
    """The runtime's run over live boards, with no gap between a recount's passes."""
    stores = replace(runtime.stores, counters=counters or runtime.stores.counters)
    live = operations(runtime, stores=stores, pass_gap_s=0)
    return await live.reconcile_live(apply=apply, now=datetime.now(UTC))


async def _drifted_board(service: Service, runtime: Runtime) -> None:
    """Players on the live boards, a closed board registered, and drift on both alltime's and the
    closed board's counters."""
    for player, score in (("a", 30), ("b", 20), ("c", 10)):
        response = await submit(service.http, player=player, score=score)
        assert response.status_code == 200, response.text
    await register_board(
        registry=runtime.stores.registry, board=CLOSED, definition=lasting(timedelta(3650))
    )
    bucket, _ = LAYOUT.slot_of(20)
    await add_to_counter(runtime, coarse_pk(ALLTIME, 0), bucket, 4)
    await add_to_counter(runtime, coarse_pk(CLOSED.board_id, 0), bucket, 2)


async def test_every_live_board_is_reconciled_and_closed_ones_are_left(
    service: Service, runtime: Runtime
) -> None:
    await _drifted_board(service, runtime)
    report = await _live(runtime)
    walked = {r.board_id for r in report.boards}
    assert ALLTIME in walked
    assert CLOSED.board_id not in walked
    assert len(walked) == 3  # alltime, today's day and this week's
    assert [r.board_id for r in report.drifted] == [ALLTIME]
    assert (report.differences, report.left, report.failed) == (1, 0, {})
    assert await counter_total(runtime, ALLTIME) == (3, 3)
    assert await counter_total(runtime, CLOSED.board_id) == (2, 0)  # left as it was
    # The next run finds nothing: the alarm needs drift in two runs in a row.
    again = await _live(runtime)
    assert (again.drifted, again.differences) == ([], 0)


async def test_a_board_a_seed_holds_is_left_to_its_seeder(
    service: Service, runtime: Runtime
) -> None:
    await _drifted_board(service, runtime)
    now_s = int(datetime.now(UTC).timestamp())
    await runtime.stores.leases.acquire_lease(
        ALLTIME, holder="a-seeder", expires_at=now_s + 60, now_s=now_s
    )
    report = await _live(runtime)
    assert report.held == [ALLTIME]
    assert ALLTIME not in {r.board_id for r in report.boards}
    assert report.failed == {}


async def test_the_command_prints_one_line_with_the_alarm_s_metrics(
    service: Service, runtime: Runtime, dynamo_endpoint: str, table_names: TableNames
) -> None:
    await _drifted_board(service, runtime)
    dry = await _command(dynamo_endpoint, table_names, "reconcile", "--live")
    assert dry.returncode == 0, dry.stderr
    (line,) = dry.stdout.splitlines()
    document = json.loads(line)
    assert document["applied"] is False
    assert document["drifted"] == [
        {"leaderboardId": ALLTIME, "differences": 1, "repaired": 0, "left": 0}
    ]
    assert document["reconcile_drifted_boards"] == 1
    (metrics,) = document["_aws"]["CloudWatchMetrics"]
    assert metrics["Namespace"] == "Leaderboard"
    assert {"Name": "reconcile_drifted_boards", "Unit": "Count"} in metrics["Metrics"]
    assert await counter_total(runtime, ALLTIME) == (7, 3)  # a dry run changes nothing

    applied = await _command(dynamo_endpoint, table_names, "reconcile", "--live", "--apply")
    assert applied.returncode == 0, applied.stderr
    assert json.loads(applied.stdout)["drifted"][0]["repaired"] == 1
    assert await counter_total(runtime, ALLTIME) == (3, 3)
    both = await _command(dynamo_endpoint, table_names, "reconcile", ALLTIME, "--live")
    assert both.returncode != 0
    assert "not both" in both.stderr


async def test_a_repair_a_write_overtook_is_tried_again_in_the_same_run(
    service: Service, runtime: Runtime
) -> None:
    await _drifted_board(service, runtime)
    s = runtime.stores
    overtaken: list[object] = []

    class Overtaken:
        """The counters, with a write landing on the first item the reconciler repairs, just
        before its repair (as a submission's would): the repair fails its condition."""

        def __getattr__(self, name: str) -> Any:
            return getattr(s.counters, name)

        async def set_counter(self, board_id: str, item: CounterItem, **kwargs: Any) -> None:
            if not overtaken and isinstance(item, CoarseItem):
                overtaken.append(item)
                await add_to_counter(runtime, coarse_pk(board_id, item.shard), item.bucket, 1)
            await s.counters.set_counter(board_id, item, **kwargs)

    report = await _live(runtime, counters=Overtaken())
    assert overtaken
    assert (report.left, [r.board_id for r in report.drifted]) == (0, [ALLTIME])
    assert await counter_total(runtime, ALLTIME) == (3, 3)
    rank = await service.http.get("/v1/leaderboards/trivia/classic/alltime/players/b")
    assert rank.json()["rank"] == {**rank.json()["rank"], "kind": "exact", "rank": 2}
