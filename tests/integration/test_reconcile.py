"""The reconciler through the real adapter on the embedded backend: it finds counters that drifted
from the board, changes nothing on a dry run, repairs only where its two passes agree, and never
overwrites a counter that changed after it read it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.counts import CounterCell, CounterDifference
from app.domain.models import Entry, Page
from app.domain.periods import Board
from app.domain.seed_file import parse_seed_text
from app.domain.storage_keys import coarse_pk, fine_pk
from app.errors import BoardBeingSeeded
from app.services.operations import ReconcileReport
from app.services.ports import (
    BoardIndex,
    CounterItem,
    CounterStore,
    IndexedKey,
    StoredCounters,
    StoredTies,
)
from app.services.work import Stage
from app.settings import Settings
from tests.conftest import Service
from tests.integration.test_seeding import (
    assert_counters_match_board,
    csv_text,
    recount,
    seeding,
    spread,
    wait_for_expiry,
)
from tests.support import counter_total, now_ms, reconciled, scores_items, submit

BOARD = Board.from_id("trivia#classic#alltime")
LAYOUT = BucketLayout()
SCORES = {"a": 5, "b": 5, "c": 900, "d": 70_000, "e": 70_001, "f": 3 * 10**9, "g": 0, "h": 42}


async def reconcile(
    runtime: Runtime,
    settings: Settings,
    *,
    apply: bool,
    index: BoardIndex | None = None,
    counters: CounterStore | None = None,
) -> ReconcileReport:
    return await reconciled(
        runtime, BOARD, settings.retention, apply=apply, index=index, counters=counters
    )


async def submitted_board(service: Service) -> None:
    """A board built by submissions, so its coarse counts are spread over random shards."""
    for player, score in SCORES.items():
        response = await submit(service.http, player=player, score=score, rankDelta=False)
        assert response.status_code == 200, response.text


async def add_to_counter(runtime: Runtime, pk: str, sk: int, delta: int) -> None:
    await runtime.client.update_item(
        TableName=runtime.tables.scores,
        Key={"playerId": {"S": pk}, "leaderboardId": {"S": f"{sk:04d}"}},
        UpdateExpression="ADD n :d",
        ExpressionAttributeValues={":d": {"N": str(delta)}},
    )


async def counter_items(runtime: Runtime) -> list[dict[str, Any]]:
    return sorted(
        (i for i in await scores_items(runtime) if i["playerId"]["S"].startswith("hist#")),
        key=lambda i: (i["playerId"]["S"], i["leaderboardId"]["S"]),
    )


async def test_drifted_counters_are_reported_dry_run_changes_nothing_and_apply_repairs(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    await submitted_board(service)
    assert await assert_counters_match_board(runtime, BOARD.board_id) == len(SCORES)
    c_bucket, _ = LAYOUT.slot_of(SCORES["c"])
    f_bucket, f_slot = LAYOUT.slot_of(SCORES["f"])
    ghost = LAYOUT.slot_of(123_456_789)
    # Drift: three players too many in c's bucket (on a shard of their own), f's fine counter
    # lost, and a fine counter where the board holds nobody.
    await add_to_counter(runtime, coarse_pk(BOARD.board_id, 1), c_bucket, 3)
    await add_to_counter(runtime, fine_pk(BOARD.board_id, f_bucket), f_slot, -1)
    await add_to_counter(runtime, fine_pk(BOARD.board_id, ghost[0]), ghost[1], 2)
    drifted = await counter_items(runtime)

    dry = await reconcile(runtime, settings, apply=False)
    expected = [
        CounterDifference(CounterCell(c_bucket), stored=4, counted=1),
        CounterDifference(CounterCell(f_bucket, f_slot), stored=0, counted=1),
        CounterDifference(CounterCell(*ghost), stored=2, counted=0),
    ]
    assert dry.differences == sorted(expected, key=lambda d: d.cell.sort_key)
    assert (dry.applied, dry.repaired, dry.skipped, dry.unsettled) == (False, [], [], [])
    assert dry.player_count == len(SCORES)
    assert await counter_items(runtime) == drifted
    page = await service.http.get("/v1/leaderboards/trivia/classic/alltime")
    assert page.json()["playerCount"] == len(SCORES) + 3  # the drift shows until repaired

    applied = await reconcile(runtime, settings, apply=True)
    assert applied.differences == dry.differences
    assert applied.repaired == dry.differences
    assert applied.skipped == []
    assert await assert_counters_match_board(runtime, BOARD.board_id) == len(SCORES)
    page = await service.http.get("/v1/leaderboards/trivia/classic/alltime")
    assert page.json()["playerCount"] == len(SCORES)

    again = await reconcile(runtime, settings, apply=True)
    assert (again.differences, again.repaired, again.unsettled) == ([], [], [])


class _FirstPassMisses:
    """The first pass does not see one entry (it reached the index between the passes)."""

    def __init__(self, index: BoardIndex, *, hidden: str) -> None:
        self._index = index
        self._hidden = hidden
        self._passes = 0

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page:
        return await self._index.query_board(board_id, limit=limit, start=start)

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        return await self._index.query_neighbours(board_id, key, ahead=ahead, limit=limit)

    async def board_keys(
        self, board_id: str, *, page_size: int, between: tuple[str, str] | None = None
    ) -> AsyncIterator[list[IndexedKey]]:
        self._passes += 1
        async for page in self._index.board_keys(board_id, page_size=page_size, between=between):
            hidden = self._hidden if self._passes == 1 else None
            yield [found for found in page if found.key.player_id != hidden]


async def test_where_the_passes_disagree_nothing_is_compared_or_repaired(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    await submitted_board(service)
    d_bucket, d_slot = LAYOUT.slot_of(SCORES["d"])
    h_bucket, _ = LAYOUT.slot_of(SCORES["h"])
    await add_to_counter(runtime, coarse_pk(BOARD.board_id, 1), d_bucket, 5)
    await add_to_counter(runtime, coarse_pk(BOARD.board_id, 1), h_bucket, 5)
    moving = _FirstPassMisses(runtime.stores.index, hidden="d")
    report = await reconcile(runtime, settings, apply=True, index=moving)
    assert report.unsettled == [CounterCell(d_bucket), CounterCell(d_bucket, d_slot)]
    assert [d.cell for d in report.differences] == [CounterCell(h_bucket)]
    assert [d.cell for d in report.repaired] == [CounterCell(h_bucket)]
    counted, stored = await recount(runtime, BOARD.board_id), await _stored_coarse(runtime)
    assert stored[h_bucket] == counted.coarse[h_bucket]
    assert stored[d_bucket] == counted.coarse[d_bucket] + 5  # left for a quieter moment


async def _stored_coarse(runtime: Runtime) -> dict[int, int]:
    totals: dict[int, int] = {}
    for item in await scores_items(runtime):
        if item["playerId"]["S"].startswith(f"hist#{BOARD.board_id}#c") and "n" in item:
            bucket = int(item["leaderboardId"]["S"])
            totals[bucket] = totals.get(bucket, 0) + int(item["n"]["N"])
    return totals


class _WritesAfterTheRead:
    """A submission's counter updates land just after the reconciler read the counters."""

    def __init__(self, runtime: Runtime, *, updates: list[tuple[str, int]]) -> None:
        self._runtime = runtime
        self._counters = runtime.stores.counters
        self._updates = updates

    def coarse_shards(self, board_id: str) -> int:
        return self._counters.coarse_shards(board_id)

    async def coarse_counts(self, board_id: str, *, consistent: bool = False) -> Mapping[int, int]:
        return await self._counters.coarse_counts(board_id, consistent=consistent)

    async def coarse_versions(self, board_id: str) -> Mapping[int, tuple[int, int]]:
        return await self._counters.coarse_versions(board_id)

    async def set_counter(
        self,
        board_id: str,
        item: CounterItem,
        *,
        n: int,
        expected: int | None,
        expires_at: int | None,
    ) -> None:
        await self._counters.set_counter(
            board_id, item, n=n, expected=expected, expires_at=expires_at
        )

    async def mark_incomplete(self, board_id: str, *, by: str, expires_at: int | None) -> None:
        await self._counters.mark_incomplete(board_id, by=by, expires_at=expires_at)

    async def clear_incomplete(self, board_id: str) -> None:
        await self._counters.clear_incomplete(board_id)

    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        return await self._counters.read_ties(board_id, bucket, slot)

    async def set_grain(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        grain: int,
        *,
        cuts: Mapping[str, int] | None = None,
        expires_at: int | None,
    ) -> bool:
        return await self._counters.set_grain(
            board_id, bucket, slot, grain, cuts=cuts, expires_at=expires_at
        )

    async def seal_ties(
        self, board_id: str, bucket: int, slot: int, *, expires_at: int | None
    ) -> None:
        await self._counters.seal_ties(board_id, bucket, slot, expires_at=expires_at)

    async def unseal_ties(self, board_id: str, bucket: int, slot: int) -> None:
        await self._counters.unseal_ties(board_id, bucket, slot)

    async def read_counters(self, board_id: str, *, buckets: Iterable[int]) -> StoredCounters:
        read = await self._counters.read_counters(board_id, buckets=buckets)
        for pk, sk in self._updates:
            await add_to_counter(self._runtime, pk, sk, 1)
        return read


async def test_a_counter_changed_after_the_read_is_skipped_never_overwritten(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    await submitted_board(service)
    c_bucket, c_slot = LAYOUT.slot_of(SCORES["c"])
    d_bucket, _ = LAYOUT.slot_of(SCORES["d"])
    board = BOARD.board_id
    await add_to_counter(
        runtime, coarse_pk(board, 0), c_bucket, 4
    )  # c's bucket: 5 stored, 1 counted
    await add_to_counter(runtime, fine_pk(board, c_bucket), c_slot, 4)
    await add_to_counter(
        runtime, coarse_pk(board, 0), d_bucket, 2
    )  # d's bucket: 4 stored, 2 counted
    busy = _WritesAfterTheRead(
        runtime,
        updates=[
            (coarse_pk(board, 0), c_bucket),  # on the shard the repair writes: it must not land
            (fine_pk(board, c_bucket), c_slot),
            (coarse_pk(board, 1), d_bucket),  # on another shard: the repair lands around it
        ],
    )
    report = await reconcile(runtime, settings, apply=True, counters=busy)
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
    stored = await _stored_coarse(runtime)
    assert stored[c_bucket] == 1 + 4 + 1  # untouched: the concurrent +1 is still there
    assert stored[d_bucket] == 2 + 1  # repaired to the count, plus the concurrent +1 on shard 1


async def test_apply_is_refused_while_a_seeder_holds_the_board(
    runtime: Runtime, settings: Settings
) -> None:
    now = int(time.time())
    assert (
        await runtime.stores.leases.acquire_lease(
            BOARD.board_id, holder="seeder", expires_at=now + 30, now_s=now
        )
        is None
    )
    await add_to_counter(runtime, coarse_pk(BOARD.board_id, 0), 3, 1)
    with pytest.raises(BoardBeingSeeded, match="seeder"):
        await reconcile(runtime, settings, apply=True)
    dry = await reconcile(runtime, settings, apply=False)
    assert dry.differences == [CounterDifference(CounterCell(3), stored=1, counted=0)]
    assert await counter_total(runtime, BOARD.board_id) == (1, 0)


async def test_a_killed_seeders_board_is_restored_by_reconcile_apply(
    runtime: Runtime, settings: Settings
) -> None:
    seed = parse_seed_text(
        csv_text(spread(30, now_ms() - 60_000)), board=BOARD, now=datetime.now(UTC)
    )
    policy = replace(
        runtime.policies.seed, grace_s=0.0, settle_delay_s=0.0, lease_ttl_s=1.0, concurrency=2
    )

    def die(stage: Stage, done: int, total: int | None) -> None:
        if stage == "writing rows" and done >= 10:
            raise RuntimeError("killed")

    with pytest.raises(RuntimeError, match="killed"):
        await seeding(runtime, policy).seed(BOARD, seed, progress=die)
    assert await counter_total(runtime, BOARD.board_id) == (0, 0)
    await wait_for_expiry(runtime, BOARD.board_id)
    report = await reconcile(runtime, settings, apply=True)
    assert report.differences
    assert report.repaired == report.differences
    written = await assert_counters_match_board(runtime, BOARD.board_id)
    assert 10 <= written < 30
    assert (await reconcile(runtime, settings, apply=False)).differences == []
