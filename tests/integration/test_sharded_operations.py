"""The operators' paths on a sharded board (``app.domain.shards``) through the real adapter on the
embedded backend: seeding puts each row on its player's partition under the board's one lease and
counts each partition on its own; the reconciler repairs one partition's counters and reports
them as the board's; erasure removes the player's row and fixes their partition's counters, and a
seeding lease on the board holds it back."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import pytest

from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.counts import CounterCell, CounterDifference
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.domain.seed_file import SeedFile, SeedRow, parse_seed_text
from app.domain.shards import partition_ids, player_partition
from app.domain.storage_keys import coarse_pk, fine_pk
from app.errors import BoardBeingSeeded
from app.services.operations import Operations, SeedReport
from app.services.ports import RowOutcome
from app.settings import Settings
from app.store.leases import lease_key
from tests.integration.test_erasure import erase
from tests.integration.test_seeding import (
    assert_partitions_match_board,
    csv_text,
    lease_item,
    policy,
    seeding,
    spread,
)
from tests.support import now_ms, operations, scores_items

BOARD = Board.from_id("trivia#sharded#alltime")
SHARDS = 4
DEFINITION = BoardDefinition(shards=SHARDS)
PARTITIONS = partition_ids(BOARD.board_id, SHARDS)
PLAYERS = 40
LAYOUT = BucketLayout()


@pytest.fixture
def ops(runtime: Runtime) -> Operations:
    """The runtime's operations, with no gap between a recount's passes."""
    return operations(runtime, pass_gap_s=0)


def sharded_seed(rows: list[tuple[str, int, int]]) -> SeedFile:
    return parse_seed_text(
        csv_text(rows), board=BOARD, now=datetime.now(UTC), definition=DEFINITION
    )


async def seeded(runtime: Runtime, settings: Settings) -> tuple[SeedReport, dict[str, int]]:
    """``PLAYERS`` rows of ``spread`` seeded onto the sharded board, new, its counters known
    absent (as on fresh tables); each row's score."""
    rows = spread(PLAYERS, now_ms() - 120_000)
    absent = policy(settings, counters_absent=True)
    report = await seeding(runtime, absent).seed(BOARD, sharded_seed(rows))
    return report, {player: score for player, score, _ in rows}


async def standing_rows(runtime: Runtime) -> dict[str, str]:
    """Each player's row: its ``leaderboardId``."""
    return {
        item["playerId"]["S"]: item["leaderboardId"]["S"]
        for item in await scores_items(runtime)
        if "rankKey" in item
    }


async def marks(runtime: Runtime) -> set[str]:
    """The partitions whose counters are marked part-written."""
    return {
        item["playerId"]["S"]
        for item in await scores_items(runtime)
        if item["leaderboardId"]["S"] == "incomplete"
    }


def by_partition(players: list[str]) -> Counter[str]:
    return Counter(player_partition(BOARD.board_id, p, SHARDS) for p in players)


async def add_to_counter(runtime: Runtime, pk: str, sk: int, delta: int) -> None:
    await runtime.client.update_item(
        TableName=runtime.tables.scores,
        Key={"playerId": {"S": pk}, "leaderboardId": {"S": f"{sk:04d}"}},
        UpdateExpression="ADD n :d",
        ExpressionAttributeValues={":d": {"N": str(delta)}},
    )


# ---- seeding ------------------------------------------------------------------------------------


async def test_seeding_a_sharded_board_puts_each_row_on_its_players_partition_and_counts_each(
    runtime: Runtime, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    standings = runtime.stores.standings
    put_seed_row = standings.put_seed_row
    marked_before_rows: list[set[str]] = []

    async def first_looks(partition: str, row: SeedRow, **kwargs: Any) -> RowOutcome:
        if row.player_id == "p00":  # the first row of the file, so the first row written
            marked_before_rows.append(await marks(runtime))
        return await put_seed_row(partition, row, **kwargs)

    monkeypatch.setattr(standings, "put_seed_row", first_looks)
    report, scores = await seeded(runtime, settings)

    assert (report.board_id, report.shards, report.player_count) == (BOARD.board_id, SHARDS, 40)
    assert (report.rows_created, report.counter_conflicts, report.counters_unwritten) == (40, 0, 0)
    assert report.lease_released
    # Before the first row, every partition's counters were marked part-written; none is now.
    assert marked_before_rows == [{f"hist#{pid}#c0" for pid in PARTITIONS}]
    assert await marks(runtime) == set()
    # Each row is on its player's partition, and every partition holds some of them.
    rows = await standing_rows(runtime)
    assert rows == {p: player_partition(BOARD.board_id, p, SHARDS) for p in scores}
    assert set(rows.values()) == set(PARTITIONS)
    # Each partition's counters are a count of its own index partition.
    assert await assert_partitions_match_board(runtime, BOARD.board_id, SHARDS) == dict(
        by_partition(list(scores))
    )
    # One lease, the board's, taken and let go; the board is registered, not its partitions.
    assert await lease_item(runtime, BOARD.board_id) is None
    registered = [r.board_id for r in await runtime.stores.registry.registered_boards()]
    assert registered == [BOARD.board_id]

    # Seeded again (its counters read first, this time), the same rows are all kept and every
    # partition's counters read as right.
    again = await seeding(runtime, policy(settings)).seed(
        BOARD, sharded_seed([(p, s, now_ms() - 120_000) for p, s in scores.items()])
    )
    assert (again.rows_skipped, again.counters_rebuilt, again.player_count) == (40, 0, 40)
    assert await marks(runtime) == set()


# ---- reconciling --------------------------------------------------------------------------------


async def test_the_reconciler_repairs_a_damaged_counter_on_one_shard_and_reports_it(
    runtime: Runtime, ops: Operations, settings: Settings
) -> None:
    _, scores = await seeded(runtime, settings)
    counts = await assert_partitions_match_board(runtime, BOARD.board_id, SHARDS)
    damaged = player_partition(BOARD.board_id, "p07", SHARDS)
    bucket, slot = LAYOUT.slot_of(scores["p07"])
    on_slot = sum(
        1
        for p, s in scores.items()
        if LAYOUT.slot_of(s) == (bucket, slot)
        and player_partition(BOARD.board_id, p, SHARDS) == damaged
    )
    in_bucket = sum(
        1
        for p, s in scores.items()
        if LAYOUT.slot_of(s)[0] == bucket and player_partition(BOARD.board_id, p, SHARDS) == damaged
    )
    await add_to_counter(runtime, coarse_pk(damaged, 0), bucket, 2)
    await add_to_counter(runtime, fine_pk(damaged, bucket), slot, -1)
    expected = [
        CounterDifference(CounterCell(bucket), stored=in_bucket + 2, counted=in_bucket),
        CounterDifference(CounterCell(bucket, slot), stored=on_slot - 1, counted=on_slot),
    ]

    dry = await ops.reconcile(BOARD, DEFINITION, apply=False)
    assert (dry.board_id, dry.player_count, dry.applied) == (BOARD.board_id, PLAYERS, False)
    assert dry.differences == expected
    assert (dry.repaired, dry.unsettled) == ([], [])
    # Each partition's own report says where: only the damaged one differs.
    assert [s.board_id for s in dry.shards] == PARTITIONS
    assert {s.board_id: s.player_count for s in dry.shards} == counts
    assert [s.board_id for s in dry.shards if s.differences] == [damaged]

    applied = await ops.reconcile(BOARD, DEFINITION, apply=True)
    assert applied.board_id == BOARD.board_id
    assert applied.repaired == expected
    assert (applied.skipped, applied.unwritten) == ([], [])
    assert await assert_partitions_match_board(runtime, BOARD.board_id, SHARDS) == counts
    assert await marks(runtime) == set()

    # The board's one lease holds every partition back from repairs.
    await runtime.stores.leases.acquire_lease(
        BOARD.board_id, holder="seeder", expires_at=int(now_ms() / 1000) + 60, now_s=0
    )
    with pytest.raises(BoardBeingSeeded) as held:
        await ops.reconcile(BOARD, DEFINITION, apply=True)
    assert f"board {BOARD.board_id} is being seeded" in held.value.detail


async def test_the_live_reconciler_reconciles_a_sharded_board_by_its_definition(
    runtime: Runtime, settings: Settings
) -> None:
    await runtime.stores.definitions.put_definition(BOARD.game, BOARD.variant, DEFINITION)
    _, scores = await seeded(runtime, settings)
    counts = await assert_partitions_match_board(runtime, BOARD.board_id, SHARDS)
    damaged = player_partition(BOARD.board_id, "p11", SHARDS)
    bucket, slot = LAYOUT.slot_of(scores["p11"])
    await add_to_counter(runtime, fine_pk(damaged, bucket), slot, 5)

    live = await runtime.leaderboard.operations.reconcile_live(apply=True, now=datetime.now(UTC))
    assert [r.board_id for r in live.boards] == [BOARD.board_id]
    assert (live.failed, live.held) == ({}, [])
    (report,) = live.drifted
    assert [d.cell for d in report.repaired] == [CounterCell(bucket, slot)]
    assert [s.board_id for s in report.shards if s.drift] == [damaged]
    assert await assert_partitions_match_board(runtime, BOARD.board_id, SHARDS) == counts


# ---- erasure ------------------------------------------------------------------------------------


async def test_erasing_a_player_of_a_sharded_board_fixes_their_partitions_counters(
    runtime: Runtime, settings: Settings
) -> None:
    _, scores = await seeded(runtime, settings)
    counts = await assert_partitions_match_board(runtime, BOARD.board_id, SHARDS)
    leaver = "p07"
    partition = player_partition(BOARD.board_id, leaver, SHARDS)

    # The board's seeding lease (not one of a partition's) holds the erasure back, and the
    # problem names the board.
    lease = {**lease_key(BOARD.board_id), "expiresAt": {"N": str(now_ms() // 1000 + 60)}}
    await runtime.client.put_item(TableName=runtime.tables.scores, Item=lease)
    with pytest.raises(BoardBeingSeeded) as held:
        await erase(runtime, leaver)
    assert held.value.detail.startswith(f"board {BOARD.board_id} is being seeded;")
    assert (await standing_rows(runtime))[leaver] == partition
    await runtime.client.delete_item(TableName=runtime.tables.scores, Key=lease_key(BOARD.board_id))

    report = await erase(runtime, leaver)
    assert (report.boards, report.snapshots, report.complete) == (1, 0, True)
    assert leaver not in await standing_rows(runtime)
    after = await assert_partitions_match_board(runtime, BOARD.board_id, SHARDS)
    assert after == {**counts, partition: counts[partition] - 1}
    assert (await erase(runtime, leaver)).boards == 0
    assert len(scores) - 1 == sum(after.values())
