"""The seeding lease through the real adapter on the embedded backend: a second seeder is refused
while the first renews its lease, a lease held by another refuses a seeder, a seeder that loses its
lease stops, a submission meanwhile is refused and lands after it, and a seeder killed mid-way is
recovered by seeding again once its lease has expired."""

from __future__ import annotations

import asyncio
import time

import pytest

from app.bootstrap import Runtime
from app.errors import BoardBeingSeeded, Conflict
from app.services.work import Stage
from app.settings import Settings
from tests.conftest import Service
from tests.integration.test_seeding import (
    BOARD,
    assert_counters_match_board,
    board_rows,
    csv_text,
    lease_item,
    parse,
    policy,
    seeding,
    spread,
    wait_for_expiry,
    wait_for_lease,
)
from tests.support import counter_total, now_ms, submit


async def test_a_second_seeder_is_refused_while_the_first_renews_its_lease(
    runtime: Runtime, settings: Settings
) -> None:
    """The first seeder's lease lasts 1 s but it waits 2.5 s: only renewals keep it."""
    t = now_ms() - 60_000
    first = asyncio.create_task(
        seeding(runtime, policy(settings, lease_ttl_s=1.0, renew_every_s=0.2, grace_s=2.5)).seed(
            BOARD, parse(csv_text(spread(10, t)))
        )
    )
    held = await wait_for_lease(runtime, BOARD.board_id)
    await asyncio.sleep(1.8)  # past the first lease's own TTL
    with pytest.raises(BoardBeingSeeded) as refused:
        await seeding(runtime, policy(settings)).seed(
            BOARD, parse(csv_text([("intruder", 10**9, t)]))
        )
    assert held["holder"]["S"] in refused.value.detail  # the first seeder's
    assert refused.value.retry_after >= 1
    report = await first
    assert report.rows_written == 10
    assert report.lease_released
    assert "intruder" not in await board_rows(runtime, BOARD.board_id)
    assert await lease_item(runtime, BOARD.board_id) is None


async def test_a_lease_held_by_another_refuses_the_seeder_and_writes_nothing(
    runtime: Runtime, settings: Settings
) -> None:
    assert (
        await runtime.stores.leases.acquire_lease(
            BOARD.board_id, holder="other", expires_at=int(time.time()) + 30, now_s=int(time.time())
        )
        is None
    )
    with pytest.raises(BoardBeingSeeded, match="other"):
        await seeding(runtime, policy(settings)).seed(
            BOARD, parse(csv_text(spread(5, now_ms() - 60_000)))
        )
    assert await board_rows(runtime, BOARD.board_id) == {}
    held = await lease_item(runtime, BOARD.board_id)
    assert held is not None
    assert held["holder"]["S"] == "other"
    # An expired lease is taken over.
    assert (
        await runtime.stores.leases.acquire_lease(
            BOARD.board_id,
            holder="late",
            expires_at=int(time.time()) + 30,
            now_s=int(time.time()) + 31,
        )
        is None
    )


async def test_a_seeder_that_loses_its_lease_stops_before_writing(
    runtime: Runtime, settings: Settings
) -> None:
    running = asyncio.create_task(
        seeding(runtime, policy(settings, lease_ttl_s=5.0, renew_every_s=0.2, grace_s=2.0)).seed(
            BOARD, parse(csv_text(spread(10, now_ms() - 60_000)))
        )
    )
    lease = await wait_for_lease(runtime, BOARD.board_id)
    await runtime.client.put_item(
        TableName=runtime.tables.scores, Item={**lease, "holder": {"S": "usurper"}}
    )
    with pytest.raises(Conflict, match="lost the seeding lease"):
        await running
    assert await board_rows(runtime, BOARD.board_id) == {}


async def test_a_submission_during_seeding_is_409_and_lands_after_it(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    running = asyncio.create_task(
        seeding(runtime, policy(settings, grace_s=1.5)).seed(
            BOARD, parse(csv_text(spread(10, now_ms() - 60_000)))
        )
    )
    await wait_for_lease(runtime, BOARD.board_id)
    refused = await submit(
        service.http, player="late", score=5, idempotency_key="k1", rankDelta=False
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["type"] == "/problems/board-being-seeded"
    assert int(refused.headers["Retry-After"]) >= 1
    assert "late" not in await board_rows(runtime, BOARD.board_id)
    report = await running
    assert report.player_count == 10
    accepted = await submit(
        service.http, player="late", score=5, idempotency_key="k2", rankDelta=False
    )
    assert accepted.status_code == 200, accepted.text
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 11


class Killed(Exception):
    """The seeder's process dying, as far as the board can tell."""


@pytest.mark.parametrize("how", ["raise", "cancel"])
async def test_a_seeder_killed_mid_way_leaves_rows_uncounted_and_a_reseed_recovers(
    runtime: Runtime, settings: Settings, how: str
) -> None:
    rows = spread(50, now_ms() - 60_000)
    seed = parse(csv_text(rows))
    short = policy(settings, lease_ttl_s=1.0, concurrency=4)
    reached = asyncio.Event()

    def progress(stage: Stage, done: int, total: int | None) -> None:
        if stage == "writing rows" and done >= 12:
            reached.set()
            if how == "raise":
                raise Killed

    task = asyncio.create_task(seeding(runtime, short).seed(BOARD, seed, progress=progress))
    if how == "cancel":
        await reached.wait()
        task.cancel()
    with pytest.raises(asyncio.CancelledError if how == "cancel" else Killed):
        await task

    # Rows half-written, none of them counted; the lease is still there and refuses a re-run.
    assert 12 <= len(await board_rows(runtime, BOARD.board_id)) < 50
    assert await counter_total(runtime, BOARD.board_id) == (0, 0)
    with pytest.raises(BoardBeingSeeded):
        await seeding(runtime, short).seed(BOARD, seed)

    await wait_for_expiry(runtime, BOARD.board_id)
    written_before = len(await board_rows(runtime, BOARD.board_id))
    # The re-run keeps its lease for as long as it needs (a loaded machine renews late).
    report = await seeding(runtime, policy(settings)).seed(BOARD, seed)
    assert report.rows_skipped == written_before
    assert report.rows_written == 50 - written_before
    assert report.player_count == 50
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 50
    assert await lease_item(runtime, BOARD.board_id) is None
