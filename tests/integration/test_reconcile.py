"""The reconciler through the real adapter on the embedded backend: it finds counters that drifted
from the board, changes nothing on a dry run, repairs only where its two passes agree, and never
overwrites a counter that changed after it read it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable
from datetime import UTC, datetime
from typing import Any

import pytest

from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey
from app.domain.periods import Board
from app.errors import BoardBeingSeeded
from app.services.reconcile import (
    CounterCell,
    CounterDifference,
    ReconcileReport,
    StoredCounters,
    reconcile_board,
)
from app.services.seeding import SeedPolicy, parse_seed_text, seed_board
from app.settings import Settings
from app.store.dynamo import DynamoStore, coarse_pk, fine_pk
from app.store.operations import BoardOperations
from tests.conftest import Service
from tests.integration.test_seeding import (
    assert_counters_match_board,
    csv_text,
    recount,
    spread,
    wait_for_expiry,
)
from tests.support import counter_total, now_ms, scores_items, submit

BOARD = Board.from_id("trivia#classic#alltime")
LAYOUT = BucketLayout()
SCORES = {"a": 5, "b": 5, "c": 900, "d": 70_000, "e": 70_001, "f": 3 * 10**9, "g": 0, "h": 42}


@pytest.fixture
def ops(store: DynamoStore, settings: Settings) -> BoardOperations:
    return BoardOperations(store.client, store.tables, counter_shards=settings.counter_shards)


async def reconcile(ops: BoardOperations, settings: Settings, *, apply: bool) -> ReconcileReport:
    return await reconcile_board(
        store=ops,
        board=BOARD,
        layout=LAYOUT,
        retention=settings.retention,
        apply=apply,
        pass_gap_s=0,
    )


async def submitted_board(service: Service) -> None:
    """A board built by submissions, so its coarse counts are spread over random shards."""
    for player, score in SCORES.items():
        response = await submit(service.http, player=player, score=score, rankDelta=False)
        assert response.status_code == 200, response.text


async def add_to_counter(store: DynamoStore, pk: str, sk: int, delta: int) -> None:
    await store.client.update_item(
        TableName=store.tables.scores,
        Key={"playerId": {"S": pk}, "leaderboardId": {"S": f"{sk:04d}"}},
        UpdateExpression="ADD n :d",
        ExpressionAttributeValues={":d": {"N": str(delta)}},
    )


async def counter_items(store: DynamoStore) -> list[dict[str, Any]]:
    return sorted(
        (i for i in await scores_items(store) if i["playerId"]["S"].startswith("hist#")),
        key=lambda i: (i["playerId"]["S"], i["leaderboardId"]["S"]),
    )


async def test_drifted_counters_are_reported_dry_run_changes_nothing_and_apply_repairs(
    service: Service, store: DynamoStore, ops: BoardOperations, settings: Settings
) -> None:
    await submitted_board(service)
    assert await assert_counters_match_board(store, BOARD.board_id) == len(SCORES)
    c_bucket, _ = LAYOUT.fine_of(SCORES["c"])
    f_bucket, f_slot = LAYOUT.fine_of(SCORES["f"])
    ghost = LAYOUT.fine_of(123_456_789)
    # Drift: three players too many in c's bucket (on a shard of their own), f's fine counter
    # lost, and a fine counter where the board holds nobody.
    await add_to_counter(store, coarse_pk(BOARD.board_id, 2), c_bucket, 3)
    await add_to_counter(store, fine_pk(BOARD.board_id, f_bucket), f_slot, -1)
    await add_to_counter(store, fine_pk(BOARD.board_id, ghost[0]), ghost[1], 2)
    drifted = await counter_items(store)

    dry = await reconcile(ops, settings, apply=False)
    expected = [
        CounterDifference(CounterCell(c_bucket), stored=4, counted=1),
        CounterDifference(CounterCell(f_bucket, f_slot), stored=0, counted=1),
        CounterDifference(CounterCell(*ghost), stored=2, counted=0),
    ]
    assert dry.differences == sorted(expected, key=lambda d: d.cell.sort_key)
    assert (dry.applied, dry.repaired, dry.skipped, dry.unsettled) == (False, [], [], [])
    assert dry.player_count == len(SCORES)
    assert await counter_items(store) == drifted
    page = await service.http.get("/v1/leaderboards/trivia/classic/alltime")
    assert page.json()["playerCount"] == len(SCORES) + 3  # the drift shows until repaired

    applied = await reconcile(ops, settings, apply=True)
    assert applied.differences == dry.differences
    assert applied.repaired == dry.differences
    assert applied.skipped == []
    assert await assert_counters_match_board(store, BOARD.board_id) == len(SCORES)
    page = await service.http.get("/v1/leaderboards/trivia/classic/alltime")
    assert page.json()["playerCount"] == len(SCORES)

    again = await reconcile(ops, settings, apply=True)
    assert (again.differences, again.repaired, again.unsettled) == ([], [], [])


class _FirstPassMisses(BoardOperations):
    """The first pass does not see one entry (it reached the index between the passes)."""

    def __init__(self, *args: Any, hidden: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hidden = hidden
        self._passes = 0

    async def board_keys(self, board_id: str, *, page_size: int) -> AsyncIterator[list[RankKey]]:
        self._passes += 1
        async for page in super().board_keys(board_id, page_size=page_size):
            hidden = self._hidden if self._passes == 1 else None
            yield [key for key in page if key.player_id != hidden]


async def test_where_the_passes_disagree_nothing_is_compared_or_repaired(
    service: Service, store: DynamoStore, settings: Settings
) -> None:
    await submitted_board(service)
    d_bucket, d_slot = LAYOUT.fine_of(SCORES["d"])
    h_bucket, _ = LAYOUT.fine_of(SCORES["h"])
    await add_to_counter(store, coarse_pk(BOARD.board_id, 1), d_bucket, 5)
    await add_to_counter(store, coarse_pk(BOARD.board_id, 1), h_bucket, 5)
    moving = _FirstPassMisses(
        store.client, store.tables, counter_shards=settings.counter_shards, hidden="d"
    )
    report = await reconcile(moving, settings, apply=True)
    assert report.unsettled == [CounterCell(d_bucket), CounterCell(d_bucket, d_slot)]
    assert [d.cell for d in report.differences] == [CounterCell(h_bucket)]
    assert [d.cell for d in report.repaired] == [CounterCell(h_bucket)]
    counted, stored = await recount(store, BOARD.board_id), await _stored_coarse(store)
    assert stored[h_bucket] == counted.coarse[h_bucket]
    assert stored[d_bucket] == counted.coarse[d_bucket] + 5  # left for a quieter moment


async def _stored_coarse(store: DynamoStore) -> dict[int, int]:
    totals: dict[int, int] = {}
    for item in await scores_items(store):
        if item["playerId"]["S"].startswith(f"hist#{BOARD.board_id}#c"):
            bucket = int(item["leaderboardId"]["S"])
            totals[bucket] = totals.get(bucket, 0) + int(item["n"]["N"])
    return totals


class _WritesAfterTheRead(BoardOperations):
    """A submission's counter updates land just after the reconciler read the counters."""

    def __init__(
        self, *args: Any, store: DynamoStore, updates: list[tuple[str, int]], **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._store = store
        self._updates = updates

    async def read_counters(self, board_id: str, *, buckets: Iterable[int]) -> StoredCounters:
        read = await super().read_counters(board_id, buckets=buckets)
        for pk, sk in self._updates:
            await add_to_counter(self._store, pk, sk, 1)
        return read


async def test_a_counter_changed_after_the_read_is_skipped_never_overwritten(
    service: Service, store: DynamoStore, settings: Settings
) -> None:
    await submitted_board(service)
    c_bucket, c_slot = LAYOUT.fine_of(SCORES["c"])
    d_bucket, _ = LAYOUT.fine_of(SCORES["d"])
    board = BOARD.board_id
    await add_to_counter(store, coarse_pk(board, 0), c_bucket, 4)  # c's bucket: 5 stored, 1 counted
    await add_to_counter(store, fine_pk(board, c_bucket), c_slot, 4)
    await add_to_counter(store, coarse_pk(board, 0), d_bucket, 2)  # d's bucket: 4 stored, 2 counted
    busy = _WritesAfterTheRead(
        store.client,
        store.tables,
        counter_shards=settings.counter_shards,
        store=store,
        updates=[
            (coarse_pk(board, 0), c_bucket),  # on the shard the repair writes: it must not land
            (fine_pk(board, c_bucket), c_slot),
            (coarse_pk(board, 3), d_bucket),  # on another shard: the repair lands around it
        ],
    )
    report = await reconcile(busy, settings, apply=True)
    assert [d.cell for d in report.differences] == [
        CounterCell(c_bucket),
        CounterCell(c_bucket, c_slot),
        CounterCell(d_bucket),
    ]
    assert [d.cell for d in report.skipped] == [
        CounterCell(c_bucket),
        CounterCell(c_bucket, c_slot),
    ]
    assert [d.cell for d in report.repaired] == [CounterCell(d_bucket)]
    stored = await _stored_coarse(store)
    assert stored[c_bucket] == 1 + 4 + 1  # untouched: the concurrent +1 is still there
    assert stored[d_bucket] == 2 + 1  # repaired to the count, plus the concurrent +1 on shard 3


async def test_apply_is_refused_while_a_seeder_holds_the_board(
    store: DynamoStore, ops: BoardOperations, settings: Settings
) -> None:
    now = int(time.time())
    assert (
        await ops.acquire_lease(BOARD.board_id, holder="seeder", expires_at=now + 30, now_s=now)
        is None
    )
    await add_to_counter(store, coarse_pk(BOARD.board_id, 0), 3, 1)
    with pytest.raises(BoardBeingSeeded, match="seeder"):
        await reconcile(ops, settings, apply=True)
    dry = await reconcile(ops, settings, apply=False)
    assert dry.differences == [CounterDifference(CounterCell(3), stored=1, counted=0)]
    assert await counter_total(store, BOARD.board_id) == (1, 0)


async def test_a_killed_seeders_board_is_restored_by_reconcile_apply(
    store: DynamoStore, ops: BoardOperations, settings: Settings
) -> None:
    seed = parse_seed_text(
        csv_text(spread(30, now_ms() - 60_000)), board=BOARD, now=datetime.now(UTC)
    )
    policy = SeedPolicy.from_settings(
        settings, grace_s=0.0, settle_delay_s=0.0, lease_ttl_s=1.0, concurrency=2
    )

    def die(done: int, total: int) -> None:
        if done >= 10:
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        await seed_board(store=ops, board=BOARD, seed=seed, policy=policy, progress=die)
    assert await counter_total(store, BOARD.board_id) == (0, 0)
    await wait_for_expiry(store, BOARD.board_id)
    report = await reconcile(ops, settings, apply=True)
    assert report.differences
    assert report.repaired == report.differences
    written = await assert_counters_match_board(store, BOARD.board_id)
    assert 10 <= written < 30
    assert (await reconcile(ops, settings, apply=False)).differences == []
