"""Seeding through the real adapter on the embedded backend: rows by the board rule, counters
rebuilt from the board (read first, or known absent), a day board's expiry and its registration;
and the helpers the seeding tests share. The file's checks: test_seed_files.py; the lease, and a
seeder that dies mid-way: test_seed_leases.py."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.bootstrap import Runtime, build_policies
from app.domain.buckets import BucketLayout
from app.domain.calendar import board_expires_at
from app.domain.clock import iso_ms, to_ms
from app.domain.keys import RankKey
from app.domain.periods import Board
from app.domain.seed_file import SeedFile, parse_seed_text
from app.domain.shards import partition_ids
from app.errors import InvalidInput
from app.services.operations import Operations, SeedReport
from app.services.policies import SeedPolicy
from app.services.work import Stage
from app.settings import Settings
from app.store.leases import lease_key
from app.store.tables import RANK_INDEX
from tests.conftest import Service
from tests.support import (
    counter_total,
    lasting,
    now_ms,
    operations,
    scores_items,
    submit,
    utc_start,
)

BOARD = Board.from_id("trivia#classic#alltime")
LAYOUT = BucketLayout()
HEADER = "playerId,score,achievedAt,displayName,country"


# ---- the recount the tests judge counters by ------------------------------------------------


@dataclass(frozen=True)
class Histogram:
    coarse: dict[int, int]
    fine: dict[tuple[int, int], int]

    @property
    def total(self) -> int:
        return sum(self.coarse.values())


async def index_keys(runtime: Runtime, board_id: str) -> list[RankKey]:
    """The board's entries as RankIndex holds them, read page by page (small pages on purpose)."""
    keys: list[RankKey] = []
    kwargs: dict[str, Any] = {
        "TableName": runtime.tables.scores,
        "IndexName": RANK_INDEX,
        "KeyConditionExpression": "leaderboardId = :b",
        "ExpressionAttributeValues": {":b": {"S": board_id}},
        "Limit": 7,
    }
    while True:
        page = await runtime.client.query(**kwargs)
        keys.extend(RankKey.decode(item["rankKey"]["S"]) for item in page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return keys
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def recount(runtime: Runtime, board_id: str) -> Histogram:
    """What the counters should say: the board's entries counted per bucket and per slot."""
    coarse: Counter[int] = Counter()
    fine: Counter[tuple[int, int]] = Counter()
    for key in await index_keys(runtime, board_id):
        bucket, slot = LAYOUT.slot_of(key.score)
        coarse[bucket] += 1
        fine[(bucket, slot)] += 1
    return Histogram(dict(coarse), dict(fine))


async def stored_histogram(runtime: Runtime, board_id: str) -> Histogram:
    """What the counters say: coarse summed over shards, fine per slot, zeros left out."""
    coarse: Counter[int] = Counter()
    fine: Counter[tuple[int, int]] = Counter()
    for item in await scores_items(runtime):
        pk, n = item["playerId"]["S"], int(item.get("n", {}).get("N", "0"))
        if "n" not in item:
            continue  # the mark of counters part-written
        if pk.startswith(f"hist#{board_id}#c"):
            coarse[int(item["leaderboardId"]["S"])] += n
        elif pk.startswith(f"hist#{board_id}#f"):
            fine[(int(pk.rsplit("#f", 1)[1]), int(item["leaderboardId"]["S"]))] += n
    return Histogram({b: n for b, n in coarse.items() if n}, {c: n for c, n in fine.items() if n})


async def assert_counters_match_board(runtime: Runtime, board_id: str) -> int:
    """The stored counters equal a recount of the board; returns the board's player count."""
    counted, stored = await recount(runtime, board_id), await stored_histogram(runtime, board_id)
    assert stored == counted
    assert await counter_total(runtime, board_id) == (counted.total, counted.total)
    return counted.total


async def assert_partitions_match_board(
    runtime: Runtime, board_id: str, shards: int
) -> dict[str, int]:
    """Each partition of a board of ``shards`` (``app.domain.shards``) as a board of its own: its
    counters equal a recount of its own index partition; a sharded board's own id holds no entry
    and no counter. Each partition's player count."""
    counts = {
        pid: await assert_counters_match_board(runtime, pid)
        for pid in partition_ids(board_id, shards)
    }
    if shards > 1:
        assert await index_keys(runtime, board_id) == []
        assert await stored_histogram(runtime, board_id) == Histogram({}, {})
    return counts


# ---- helpers ----------------------------------------------------------------------------------


def policy(settings: Settings, **overrides: Any) -> SeedPolicy:
    values: dict[str, Any] = {"grace_s": 0.0, "settle_delay_s": 0.0}
    values.update(overrides)
    return replace(build_policies(settings).seed, **values)


def seeding(runtime: Runtime, seed_policy: SeedPolicy) -> Operations:
    """The runtime's operations, seeding under ``seed_policy``."""
    return operations(runtime, seed=seed_policy)


def csv_text(rows: list[tuple[str, int, int]]) -> str:
    """A CSV seed file of ``(player, score, achieved ms)`` rows with names and countries."""
    lines = [HEADER]
    lines += [f"{p},{s},{iso_ms(t)},Player {p},GB" for p, s, t in rows]
    return "\n".join(lines) + "\n"


def parse(text: str, board: Board = BOARD) -> SeedFile:
    return parse_seed_text(text, board=board, now=datetime.now(UTC))


async def board_rows(runtime: Runtime, board_id: str) -> dict[str, dict[str, Any]]:
    return {
        item["playerId"]["S"]: item
        for item in await scores_items(runtime)
        if item["leaderboardId"]["S"] == board_id and "rankKey" in item
    }


async def lease_item(runtime: Runtime, board_id: str) -> dict[str, Any] | None:
    found = await runtime.client.get_item(
        TableName=runtime.tables.scores,
        Key=lease_key(board_id),
        ConsistentRead=True,
    )
    return found.get("Item")


async def wait_for_lease(runtime: Runtime, board_id: str) -> dict[str, Any]:
    for _ in range(200):
        item = await lease_item(runtime, board_id)
        if item is not None:
            return item
        await asyncio.sleep(0.02)
    raise AssertionError("the seeder never took the lease")


async def wait_for_expiry(runtime: Runtime, board_id: str) -> None:
    item = await lease_item(runtime, board_id)
    assert item is not None
    await asyncio.sleep(max(0.0, int(item["expiresAt"]["N"]) - time.time()) + 0.05)


def spread(count: int, base_ms: int) -> list[tuple[str, int, int]]:
    """``count`` players over many buckets, with equal scores broken by achievedAt and by id."""
    rows = []
    for i in range(count):
        score = [0, 1, 7, 42, 999, 12_345, 10**6, 10**9, 10**12 - 100][i % 9] + (i // 9) * (i % 3)
        rows.append((f"p{i:02d}", score, base_ms - (i % 4) * 1000))
    return rows


# ---- seeding ------------------------------------------------------------------------------------


async def test_seeding_writes_by_the_board_rule_reads_back_in_order_and_rebuilds_counters(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    t = now_ms() - 120_000
    # Already on the board: one player better than their file row, one worse.
    assert (await submit(service.http, player="p00", score=10**11, rankDelta=False)).is_success
    assert (await submit(service.http, player="p01", score=0, rankDelta=False)).is_success
    before = await board_rows(runtime, BOARD.board_id)
    rows = [*spread(40, t), ("p05", 1, t)]  # p05 twice: the better row wins
    seed = parse(csv_text(rows))
    seen: list[tuple[Stage, int, int | None]] = []

    def progress(stage: Stage, done: int, total: int | None) -> None:
        seen.append((stage, done, total))

    report = await seeding(runtime, policy(settings)).seed(BOARD, seed, progress=progress)

    assert report == SeedReport(
        board_id=BOARD.board_id,
        rows_read=41,
        duplicates=1,
        rows_written=39,
        rows_created=38,
        rows_replaced=1,
        rows_skipped=1,
        rows_unwritten=0,
        counters_rebuilt=report.counters_rebuilt,
        counter_conflicts=0,
        counters_unwritten=0,
        player_count=40,
        lease_released=True,
    )
    assert report.counters_rebuilt > 0
    rows_seen = [(done, total) for stage, done, total in seen if stage == "writing rows"]
    assert rows_seen == [(done, 40) for done in range(41)]
    # From start to end: the rows, then the recount (two passes that agree), then the counters.
    stages = list(dict.fromkeys(stage for stage, _, _ in seen))
    assert stages == ["writing rows", "recounting", "reading counters", "writing counters"]
    recounts = [(done, total) for stage, done, total in seen if stage == "recounting"]
    assert recounts[0] == (0, None)
    assert recounts[-1] == (40, 40)  # the second pass knows the size from the first
    written = [(done, total) for stage, done, total in seen if stage == "writing counters"]
    assert written[-1] == (report.counters_rebuilt, report.counters_rebuilt)
    assert await lease_item(runtime, BOARD.board_id) is None

    # The board reads back in rule order, with the file's profiles, and the right player count.
    best = {p: (s, a) for p, s, a in rows if p != "p05" or s != 1}
    best["p00"] = (10**11, int(before["p00"]["rankKey"]["S"].split("#")[1]))
    expected = sorted(best, key=lambda p: (-best[p][0], best[p][1], p))
    page = await service.http.get("/v1/leaderboards/trivia/classic/alltime?limit=100")
    assert page.status_code == 200, page.text
    body = page.json()
    assert body["playerCount"] == 40
    assert [e["playerId"] for e in body["entries"]] == expected
    assert [e["rank"] for e in body["entries"]] == list(range(1, 41))
    entry = {e["playerId"]: e for e in body["entries"]}
    assert (entry["p07"]["score"], entry["p07"]["achievedAt"]) == (
        best["p07"][0],
        iso_ms(best["p07"][1]),
    )
    assert (entry["p07"]["displayName"], entry["p07"]["country"]) == ("Player p07", "GB")
    assert entry["p00"]["displayName"] is None  # kept: the file's row was not better

    # Rows carry a version (bumped on the replaced row) and nothing from the last submission.
    after = await board_rows(runtime, BOARD.board_id)
    assert int(after["p01"]["version"]["N"]) == int(before["p01"]["version"]["N"]) + 1
    assert "lastRequest" not in after["p01"]
    assert after["p00"] == before["p00"]
    assert int(after["p02"]["version"]["N"]) == 1
    assert not any("expiresAt" in row for row in after.values())  # all-time rows never expire
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 40
    # Consolidated: every coarse count on shard 0.
    shards = {
        item["playerId"]["S"]
        for item in await scores_items(runtime)
        if item["playerId"]["S"].startswith(f"hist#{BOARD.board_id}#c")
    }
    assert shards == {f"hist#{BOARD.board_id}#c0"}


def _counter_reads(runtime: Runtime) -> list[str]:
    """The counter partitions read by Query from now on (recorded on the runtime's client)."""
    read: list[str] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        partition = params.get("ExpressionAttributeValues", {}).get(":p", {}).get("S", "")
        if partition.startswith("hist#"):
            read.append(partition)

    runtime.client.meta.events.register("provide-client-params.dynamodb.Query", record)
    return read


async def _seed_spread(
    runtime: Runtime, settings: Settings, players: int, *, counters_absent: bool
) -> SeedReport:
    """``players`` rows of ``spread`` seeded onto BOARD, two minutes back."""
    seed = parse(csv_text(spread(players, now_ms() - 120_000)))
    return await seeding(runtime, policy(settings, counters_absent=counters_absent)).seed(
        BOARD, seed
    )


async def test_a_board_known_to_have_no_counters_is_counted_without_reading_them(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    read = _counter_reads(runtime)
    report = await _seed_spread(runtime, settings, 30, counters_absent=True)
    assert (report.player_count, report.counter_conflicts) == (30, 0)
    assert read == []  # not one of the board's 132 counter partitions
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 30
    # Read as the default policy reads them, the same counters need nothing rewritten.
    again = await _seed_spread(runtime, settings, 30, counters_absent=False)
    assert (again.counters_rebuilt, again.counter_conflicts) == (0, 0)
    shards = runtime.stores.counters.coarse_shards(BOARD.board_id)
    assert len(read) == shards + LAYOUT.coarse  # the default reads every shard and fine partition


async def test_a_counter_that_was_there_after_all_sends_seeding_back_to_reading_them(
    service: Service, runtime: Runtime, settings: Settings
) -> None:
    # A submission in the moment before the lease: its row and its counters are on the board.
    assert (await submit(service.http, player="early", score=10**11, rankDelta=False)).is_success
    read = _counter_reads(runtime)
    report = await _seed_spread(runtime, settings, 10, counters_absent=True)
    # Its slot's counter was refused as not absent, so the counters were read whole and rebuilt.
    shards = runtime.stores.counters.coarse_shards(BOARD.board_id)
    assert len(read) == shards + LAYOUT.coarse
    assert report.counter_conflicts == 0
    assert report.player_count == 11
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 11


async def test_seeding_a_day_board_sets_its_expiry_on_rows_and_counters(
    runtime: Runtime, settings: Settings
) -> None:
    day = Board.from_id(f"trivia#classic#day#{(datetime.now(UTC) - timedelta(days=1)).date()}")
    noon = int((utc_start(day) + timedelta(hours=12)).timestamp() * 1000)
    report = await seeding(runtime, policy(settings)).seed(
        day, parse(csv_text(spread(12, noon)), board=day)
    )
    assert report.rows_written == 12
    expires = board_expires_at(day, lasting(settings.retention))
    assert expires is not None
    stamped = {
        int(item["expiresAt"]["N"])
        for item in await scores_items(runtime)
        if item["leaderboardId"]["S"] == day.board_id
        or item["playerId"]["S"].startswith(f"hist#{day.board_id}#")
    }
    assert stamped == {int(expires.timestamp())}
    assert await assert_counters_match_board(runtime, day.board_id) == 12


async def test_seeding_refuses_a_file_checked_for_another_board(
    runtime: Runtime, settings: Settings
) -> None:
    other = Board.from_id("trivia#other#alltime")
    with pytest.raises(InvalidInput, match="trivia#other#alltime"):
        await seeding(runtime, policy(settings)).seed(
            BOARD, parse(csv_text(spread(3, now_ms() - 60_000)), board=other)
        )


async def test_a_seeded_board_is_registered_so_its_closed_period_is_snapshotted(
    runtime: Runtime, settings: Settings
) -> None:
    """A day board filled only by seeding, whose period closed hours ago, gets its snapshot."""
    now = datetime.now(UTC)
    day = (now - timedelta(days=2)).date()
    board = Board.from_id(f"trivia#classic#day#{day.isoformat()}")
    noon = to_ms(datetime(day.year, day.month, day.day, 12, tzinfo=UTC))
    seed = parse(csv_text([("ann", 30, noon), ("bob", 20, noon)]), board=board)
    await seeding(runtime, policy(settings)).seed(board, seed)
    # The service's own job: a period closes ``max_lateness_seconds`` after its end.
    report = await runtime.leaderboard.operations.snapshot_closed_periods(now=now, top=100)
    assert [snapshot.board_id for snapshot in report.taken] == [board.board_id]
    assert [e.player_id for e in report.taken[0].entries] == ["ann", "bob"]


async def test_the_grace_period_is_told_second_by_second(
    runtime: Runtime, settings: Settings
) -> None:
    seen: list[tuple[Stage, int, int | None]] = []

    def progress(stage: Stage, done: int, total: int | None) -> None:
        seen.append((stage, done, total))

    seed = parse(csv_text(spread(2, now_ms() - 60_000)))
    await seeding(runtime, policy(settings, grace_s=2.5)).seed(BOARD, seed, progress=progress)
    waited = [(done, total) for stage, done, total in seen if stage == "waiting"]
    assert waited[0] == (0, 3)
    assert waited[-1] == (3, 3)
    assert [done for done, _ in waited] == sorted(done for done, _ in waited)
    assert {done for done, _ in waited} >= {0, 1, 2, 3}
