"""The close on the real adapter and the embedded backend (docs/operations.md, "The close"): the
closer closes a due board once, with its final snapshot (``closed``) and one ``board.closed``
event in the outbox; closers of two and three tasks racing close it once; DynamoDB's lost
answers (botocore's resend, with the token honoured or not), throttling and transaction
conflicts still give one close and one event; and claims racing the closers under the faithful
run's faults give one first claim."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest

from app.bootstrap import Runtime, open_runtime
from app.domain.storage_keys import membership_sk
from app.services.operations import Operations
from app.services.operations._close import keep_closing
from app.services.ports import Snapshot
from app.services.reads._snapshots import list_snapshots
from app.services.registry import register_board
from app.services.seasons import ClaimAsk
from app.settings import Settings
from app.store.outbox import DUE_PK
from tests.faults import Faithful, Faults, InFlightItems, cancelled_at, fail_first, install
from tests.integration.test_snapshots import KEPT, NOW, SETTLE, board, fill
from tests.support import operations, scores_items

DAY = board("day:2026-11-27")
OPEN = board("day")
SCORES = {"ann": 50, "bob": 70, "cat": 60}


async def _due(runtime: Runtime) -> None:
    """A closed day board and an open one, both registered, three players on each."""
    for target in (DAY, OPEN):
        await fill(runtime, target, SCORES)
        await register_board(registry=runtime.stores.registry, board=target, definition=KEPT)


def _ops(runtime: Runtime) -> Operations:
    return operations(runtime, settle=SETTLE)


async def _events(runtime: Runtime) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The outbox's event items (bodies parsed) and its due markers."""
    items = await scores_items(runtime)
    events = [json.loads(i["body"]["S"]) for i in items if i["playerId"]["S"] == "outbox#trivia"]
    due = [i for i in items if i["playerId"]["S"] == DUE_PK]
    return events, due


async def _closed_once(runtime: Runtime) -> Snapshot:
    """Exactly one snapshot of the closed board, ``closed``; none of the open one; exactly one
    event, which tells that snapshot; every player in it has a membership (erasure finds them)."""
    listed = await list_snapshots(snapshots=runtime.stores.snapshots, board=DAY)
    assert [s.reason for s in listed] == ["closed"]
    assert await list_snapshots(snapshots=runtime.stores.snapshots, board=OPEN) == []
    snapshot = await runtime.stores.snapshots.get_snapshot(DAY.board_id, listed[0].taken_at)
    assert snapshot is not None
    events, due = await _events(runtime)
    assert len(events) == 1, events
    assert len(due) == 1
    (event,) = events
    assert event["id"].startswith("evt_")
    assert due[0]["eventId"]["S"] == event["id"]
    assert {k: v for k, v in event.items() if k not in {"id", "top"}} == {
        "type": "board.closed",
        "leaderboardId": DAY.board_id,
        "period": {
            "id": "day:2026-11-27",
            "startsAt": "2026-11-27T00:00:00.000Z",
            "endsAt": "2026-11-28T00:00:00.000Z",
        },
        "closedAt": snapshot.taken_at,
        "playerCount": 3,
    }
    assert [(e["rank"], e["playerId"], e["score"]) for e in event["top"]] == [
        (1, "bob", 70),
        (2, "cat", 60),
        (3, "ann", 50),
    ]
    assert set(event["top"][0]) == {
        "rank",
        "playerId",
        "displayName",
        "country",
        "score",
        "achievedAt",
    }
    members = {
        i["playerId"]["S"]
        for i in await scores_items(runtime)
        if i["leaderboardId"]["S"] == membership_sk(DAY.board_id, snapshot.taken_at)
    }
    assert members == set(SCORES)
    registered = {r.board_id: r for r in await runtime.stores.registry.registered_boards()}
    assert registered[DAY.board_id].closed_snapshot_at == snapshot.taken_at
    return snapshot


async def test_the_closer_closes_a_due_board_once_with_one_event(runtime: Runtime) -> None:
    await _due(runtime)
    runs: list[int] = []
    ops, four_runs = _ops(runtime), asyncio.Event()

    async def close(now: Any) -> Any:
        counts = await ops.close_periods(now)
        runs.append(counts.closed)
        if len(runs) >= 4:
            four_runs.set()
        return counts

    closer = asyncio.create_task(keep_closing(close, interval_s=0.05, clock=lambda: NOW))
    await asyncio.wait_for(four_runs.wait(), timeout=30)
    closer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await closer
    assert sum(runs) == 1
    await _closed_once(runtime)


@asynccontextmanager
async def _tasks(settings: Settings, count: int) -> AsyncIterator[list[Runtime]]:
    """``count`` tasks' parts on the same tables, their transactions conflicting per item as
    DynamoDB's do."""
    shared = InFlightItems()
    async with AsyncExitStack() as stack:
        tasks = [await stack.enter_async_context(open_runtime(settings)) for _ in range(count)]
        for task in tasks:
            install(task.client, settings.dynamodb_endpoint or "", in_flight=shared)
        yield tasks


@pytest.mark.parametrize("closers", [2, 3])
async def test_closers_of_several_tasks_racing_close_a_board_once(
    runtime: Runtime, settings: Settings, closers: int
) -> None:
    await _due(runtime)
    async with _tasks(settings, closers) as tasks:
        counts = await asyncio.gather(
            *(_ops(task).close_periods(NOW) for task in tasks for _ in range(2))
        )
    assert sum(c.closed for c in counts) == 1
    assert sum(c.failed for c in counts) == 0
    await _closed_once(runtime)
    # And later runs find it closed.
    assert (await _ops(runtime).close_periods(NOW)).closed == 0


def _token_honoured(faults: Faults) -> None:
    faults.lose_responses = 1


def _token_ignored(faults: Faults) -> None:
    # Applied, the answer lost, and the resend sent on as moto takes it: the mark is there.
    faults.lose["TransactWriteItems"] = 1


def _throttled(faults: Faults) -> None:
    faults.rules.append(
        fail_first("TransactWriteItems", 2, lambda b: cancelled_at(b, "ThrottlingError", index=1))
    )


def _conflicts(faults: Faults) -> None:
    faults.rules.append(
        fail_first(
            "TransactWriteItems", 2, lambda b: cancelled_at(b, "TransactionConflict", index=2)
        )
    )


@pytest.mark.parametrize(
    "fault",
    [_token_honoured, _token_ignored, _throttled, _conflicts],
    ids=["lost-answer-token-honoured", "lost-answer-token-ignored", "throttled", "conflict"],
)
async def test_faults_on_the_close_still_close_once(
    runtime: Runtime, dynamo_endpoint: str, fault: Callable[[Faults], None]
) -> None:
    await _due(runtime)
    faults = install(runtime.client, dynamo_endpoint)
    fault(faults)
    report = await _ops(runtime).snapshot_closed_periods(now=NOW, top=100)
    assert ([s.board_id for s in report.taken], report.failed) == ([DAY.board_id], [])
    assert faults.lose_responses == 0
    assert faults.lose["TransactWriteItems"] == 0
    snapshot = await _closed_once(runtime)
    assert snapshot.taken_at == report.taken[0].taken_at
    again = await _ops(runtime).snapshot_closed_periods(now=NOW, top=100)
    assert (again.taken, again.already_taken) == ([], [DAY.board_id])


async def test_closers_and_claims_racing_under_faults_close_once_and_claim_once(
    runtime: Runtime, settings: Settings, faithful_run: Faithful
) -> None:
    with faithful_run.quietly():
        await _due(runtime)
    after = NOW  # the day closed long before NOW; the claims and closers share it
    async with _tasks(settings, 3) as tasks:

        async def claim(i: int) -> bool:
            task = tasks[i % len(tasks)]
            ask = ClaimAsk(DAY, KEPT, "cat", after, f"request-{i}")
            for _ in range(10):
                try:
                    return (await task.leaderboard.claims.claim(ask)).first
                except Exception as exc:  # a 503 the client would retry after Retry-After
                    if getattr(exc, "status", None) != 503:
                        raise
                    await asyncio.sleep(0.05)
            raise AssertionError("the claim never got an answer")

        closes, firsts = await asyncio.gather(
            asyncio.gather(*(_ops(task).close_periods(NOW) for task in tasks)),
            asyncio.gather(*(claim(i) for i in range(50))),
        )
    assert sum(faithful_run.injected.values()) > 0, "no fault struck: the test proves nothing"
    with faithful_run.quietly():
        closed = sum(c.closed for c in closes)
        if closed == 0:  # every closer failed under the faults: the next run closes it
            assert sum(c.failed for c in closes) > 0
            closed = (await _ops(runtime).close_periods(NOW)).closed
        assert closed == 1
        assert sorted(firsts) == [False] * 49 + [True]
        await _closed_once(runtime)
