"""Seeding through the real adapter on the embedded backend: files checked whole before anything is
written, rows by the board rule under the board's lease, counters rebuilt from the board, and a
seeder that dies mid-way recovered by seeding again once its lease has expired."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.bootstrap import Runtime, build_policies
from app.cli.boards import parse_seed_file
from app.domain.buckets import BucketLayout
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.periods import Board
from app.domain.seed_file import SeedFile, parse_seed_text
from app.domain.shards import partition_ids
from app.errors import BoardBeingSeeded, Conflict, InvalidInput
from app.services.operations._seeding import SeedPorts, SeedReport, seed_board
from app.services.operations._snapshots import SnapshotPorts, snapshot_closed_periods
from app.services.policies import SeedPolicy
from app.services.work import Stage
from app.settings import Settings
from app.store.leases import lease_key
from app.store.tables import RANK_INDEX
from tests.conftest import Service
from tests.support import counter_total, now_ms, scores_items, submit

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
        bucket, slot = LAYOUT.fine_of(key.score)
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


@pytest.fixture
def ops(runtime: Runtime) -> SeedPorts:
    s = runtime.stores
    return SeedPorts(s.standings, s.index, s.counters, s.leases, s.registry)


def policy(settings: Settings, **overrides: Any) -> SeedPolicy:
    values: dict[str, Any] = {"grace_s": 0.0, "settle_delay_s": 0.0}
    values.update(overrides)
    return replace(build_policies(settings).seed, **values)


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


# ---- reading files ------------------------------------------------------------------------------


def test_csv_and_json_lines_read_the_same_rows() -> None:
    t = now_ms() - 60_000
    csv_file = parse(f'{HEADER}\na,10,{iso_ms(t)},"Smith, Ann",GB\n\nb,20,{iso_ms(t)},,\n')
    json_file = parse(
        f'{{"playerId": "a", "score": 10, "achievedAt": "{iso_ms(t)}", "displayName": "Smith, Ann", "country": "GB"}}\n'
        "\n"
        f'{{"playerId": "b", "score": 20, "achievedAt": "{iso_ms(t)}"}}\n'
    )
    assert [(r.player_id, r.score, r.display_name, r.country) for r in csv_file.rows] == [
        ("a", 10, "Smith, Ann", "GB"),
        ("b", 20, None, None),
    ]
    assert [(r.line, r.score) for r in csv_file.rows] == [(2, 10), (4, 20)]
    assert [(r.player_id, r.score, r.display_name) for r in json_file.rows] == [
        (r.player_id, r.score, r.display_name) for r in csv_file.rows
    ]
    assert [r.line for r in json_file.rows] == [1, 3]


def test_a_player_on_several_rows_keeps_the_best_by_the_board_rule() -> None:
    t = now_ms() - 60_000
    seed = parse(
        csv_text(
            [("a", 10, t), ("a", 30, t), ("a", 30, t - 5000), ("a", 30, t - 5000), ("b", 1, t)]
        )
    )
    best = {r.player_id: r for r in seed.rows}
    assert (best["a"].score, best["a"].achieved_at_ms, best["a"].line) == (30, t - 5000, 4)
    assert seed.rows_read == 5
    assert seed.duplicate_lines == [2, 3, 5]


def test_the_format_comes_from_the_suffix_of_a_file(tmp_path: Any) -> None:
    t = now_ms() - 60_000
    path = tmp_path / "scores.jsonl"
    path.write_text(f'{{"playerId": "a", "score": 5, "achievedAt": "{iso_ms(t)}"}}\n')
    seed = parse_seed_file(path, board=BOARD, now=datetime.now(UTC), definition=BoardDefinition())
    assert [(r.player_id, r.score) for r in seed.rows] == [("a", 5)]


async def test_bad_rows_are_all_reported_with_their_lines_and_nothing_is_written(
    runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    day = Board.from_id(f"trivia#classic#day#{(datetime.now(UTC) - timedelta(days=1)).date()}")
    inside = day.period.start() + timedelta(hours=12)
    good = inside.isoformat().replace("+00:00", "Z")
    text = "\n".join(
        [
            HEADER,
            f"ok1,10,{good},Fine,GB",  # 2
            f"bad#id,10,{good},,",  # 3: # in an id
            f"ok2,-1,{good},,",  # 4: negative score
            f"ok3,1000000000000,{good},,",  # 5: at the ceiling
            f"ok4,12.5,{good},,",  # 6: not an integer
            "ok5,10,2026-01-01T00:00:00,,",  # 7: naive time
            f"ok6,10,{good},,gb",  # 8: lower-case country
            f"ok7,10,{good},{'x' * 65},",  # 9: name too long
            f"ok8,10,{(inside + timedelta(days=1)).isoformat()},,",  # 10: outside the day
            f"ok9,10,{(datetime.now(UTC) + timedelta(hours=1)).isoformat()},,",  # 11: future
            f"ok10,10,{good}",  # 12: too few values
            f"ok11,10,{good},Fine,GB",  # 13
        ]
    )
    with pytest.raises(InvalidInput) as refused:
        parse(text, board=day)
    lines = sorted({e["line"] for e in refused.value.errors})
    assert lines == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12]
    fields = {e["line"]: e.get("field") for e in refused.value.errors}
    assert fields[3] == "playerId"
    assert fields[8] == "country"
    assert fields[10] == "achievedAt"
    assert "10 bad line(s)" in refused.value.detail
    assert "nothing was written" in refused.value.detail
    assert await scores_items(runtime) == []

    with pytest.raises(InvalidInput) as bad_json:
        parse(
            f'{{"playerId": "a", "score": 1, "achievedAt": "{good}"}}\n'
            "not json\n"
            f'{{"playerId": "b", "score": true, "achievedAt": "{good}", "extra": 1}}\n'
            "[1, 2]\n",
            board=day,
        )
    assert sorted({e["line"] for e in bad_json.value.errors}) == [2, 3, 4]
    assert {e.get("field") for e in bad_json.value.errors if e["line"] == 3} == {"score", "extra"}

    with pytest.raises(InvalidInput) as bad_header:
        parse("player,score,achievedAt\na,1,2026-01-01T00:00:00Z\n")
    assert bad_header.value.errors[0]["line"] == 1
    assert "playerId" in bad_header.value.errors[0]["message"]
    with pytest.raises(InvalidInput):
        parse(HEADER + "\n")  # no rows
    assert await scores_items(runtime) == []


# ---- seeding ------------------------------------------------------------------------------------


async def test_seeding_writes_by_the_board_rule_reads_back_in_order_and_rebuilds_counters(
    service: Service, runtime: Runtime, ops: SeedPorts, settings: Settings
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

    report = await seed_board(
        ports=ops, board=BOARD, seed=seed, policy=policy(settings), progress=progress
    )

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
    ops: SeedPorts, settings: Settings, players: int, *, counters_absent: bool
) -> SeedReport:
    """``players`` rows of ``spread`` seeded onto BOARD, two minutes back."""
    seed = parse(csv_text(spread(players, now_ms() - 120_000)))
    return await seed_board(
        ports=ops,
        board=BOARD,
        seed=seed,
        policy=policy(settings, counters_absent=counters_absent),
    )


async def test_a_board_known_to_have_no_counters_is_counted_without_reading_them(
    service: Service, runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    read = _counter_reads(runtime)
    report = await _seed_spread(ops, settings, 30, counters_absent=True)
    assert (report.player_count, report.counter_conflicts) == (30, 0)
    assert read == []  # not one of the board's 132 counter partitions
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 30
    # Read as the default policy reads them, the same counters need nothing rewritten.
    again = await _seed_spread(ops, settings, 30, counters_absent=False)
    assert (again.counters_rebuilt, again.counter_conflicts) == (0, 0)
    shards = runtime.stores.counters.coarse_shards(BOARD.board_id)
    assert len(read) == shards + LAYOUT.coarse  # the default reads every shard and fine partition


async def test_a_counter_that_was_there_after_all_sends_seeding_back_to_reading_them(
    service: Service, runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    # A submission in the moment before the lease: its row and its counters are on the board.
    assert (await submit(service.http, player="early", score=10**11, rankDelta=False)).is_success
    read = _counter_reads(runtime)
    report = await _seed_spread(ops, settings, 10, counters_absent=True)
    # Its slot's counter was refused as not absent, so the counters were read whole and rebuilt.
    shards = runtime.stores.counters.coarse_shards(BOARD.board_id)
    assert len(read) == shards + LAYOUT.coarse
    assert report.counter_conflicts == 0
    assert report.player_count == 11
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 11


async def test_seeding_a_day_board_sets_its_expiry_on_rows_and_counters(
    runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    day = Board.from_id(f"trivia#classic#day#{(datetime.now(UTC) - timedelta(days=1)).date()}")
    noon = int((day.period.start() + timedelta(hours=12)).timestamp() * 1000)
    report = await seed_board(
        ports=ops,
        board=day,
        seed=parse(csv_text(spread(12, noon)), board=day),
        policy=policy(settings),
    )
    assert report.rows_written == 12
    expires = day.period.expires_at(settings.retention)
    assert expires is not None
    stamped = {
        int(item["expiresAt"]["N"])
        for item in await scores_items(runtime)
        if item["leaderboardId"]["S"] == day.board_id
        or item["playerId"]["S"].startswith(f"hist#{day.board_id}#")
    }
    assert stamped == {int(expires.timestamp())}
    assert await assert_counters_match_board(runtime, day.board_id) == 12


async def test_a_second_seeder_is_refused_while_the_first_renews_its_lease(
    runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    """The first seeder's lease lasts 1 s but it waits 2.5 s: only renewals keep it."""
    t = now_ms() - 60_000
    first = asyncio.create_task(
        seed_board(
            ports=ops,
            board=BOARD,
            seed=parse(csv_text(spread(10, t))),
            policy=policy(settings, lease_ttl_s=1.0, renew_every_s=0.2, grace_s=2.5),
            holder="first-seeder",
        )
    )
    await wait_for_lease(runtime, BOARD.board_id)
    await asyncio.sleep(1.8)  # past the first lease's own TTL
    with pytest.raises(BoardBeingSeeded) as refused:
        await seed_board(
            ports=ops,
            board=BOARD,
            seed=parse(csv_text([("intruder", 10**9, t)])),
            policy=policy(settings),
            holder="second-seeder",
        )
    assert "first-seeder" in refused.value.detail
    assert refused.value.retry_after >= 1
    report = await first
    assert report.rows_written == 10
    assert report.lease_released
    assert "intruder" not in await board_rows(runtime, BOARD.board_id)
    assert await lease_item(runtime, BOARD.board_id) is None


async def test_a_lease_held_by_another_refuses_the_seeder_and_writes_nothing(
    runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    assert (
        await runtime.stores.leases.acquire_lease(
            BOARD.board_id, holder="other", expires_at=int(time.time()) + 30, now_s=int(time.time())
        )
        is None
    )
    with pytest.raises(BoardBeingSeeded, match="other"):
        await seed_board(
            ports=ops,
            board=BOARD,
            seed=parse(csv_text(spread(5, now_ms() - 60_000))),
            policy=policy(settings),
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
    runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    seeding = asyncio.create_task(
        seed_board(
            ports=ops,
            board=BOARD,
            seed=parse(csv_text(spread(10, now_ms() - 60_000))),
            policy=policy(settings, lease_ttl_s=5.0, renew_every_s=0.2, grace_s=2.0),
        )
    )
    lease = await wait_for_lease(runtime, BOARD.board_id)
    await runtime.client.put_item(
        TableName=runtime.tables.scores, Item={**lease, "holder": {"S": "usurper"}}
    )
    with pytest.raises(Conflict, match="lost the seeding lease"):
        await seeding
    assert await board_rows(runtime, BOARD.board_id) == {}


async def test_a_submission_during_seeding_is_409_and_lands_after_it(
    service: Service, runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    seeding = asyncio.create_task(
        seed_board(
            ports=ops,
            board=BOARD,
            seed=parse(csv_text(spread(10, now_ms() - 60_000))),
            policy=policy(settings, grace_s=1.5),
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
    report = await seeding
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
    runtime: Runtime, ops: SeedPorts, settings: Settings, how: str
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

    task = asyncio.create_task(
        seed_board(ports=ops, board=BOARD, seed=seed, policy=short, progress=progress)
    )
    if how == "cancel":
        await reached.wait()
        task.cancel()
    with pytest.raises(asyncio.CancelledError if how == "cancel" else Killed):
        await task

    # Rows half-written, none of them counted; the lease is still there and refuses a re-run.
    assert 12 <= len(await board_rows(runtime, BOARD.board_id)) < 50
    assert await counter_total(runtime, BOARD.board_id) == (0, 0)
    with pytest.raises(BoardBeingSeeded):
        await seed_board(ports=ops, board=BOARD, seed=seed, policy=short)

    await wait_for_expiry(runtime, BOARD.board_id)
    written_before = len(await board_rows(runtime, BOARD.board_id))
    # The re-run keeps its lease for as long as it needs (a loaded machine renews late).
    report = await seed_board(ports=ops, board=BOARD, seed=seed, policy=policy(settings))
    assert report.rows_skipped == written_before
    assert report.rows_written == 50 - written_before
    assert report.player_count == 50
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 50
    assert await lease_item(runtime, BOARD.board_id) is None


async def test_seeding_refuses_a_file_checked_for_another_board(
    ops: SeedPorts, settings: Settings
) -> None:
    other = Board.from_id("trivia#other#alltime")
    with pytest.raises(InvalidInput, match="trivia#other#alltime"):
        await seed_board(
            ports=ops,
            board=BOARD,
            seed=parse(csv_text(spread(3, now_ms() - 60_000)), board=other),
            policy=policy(settings),
        )


async def test_a_seeded_board_is_registered_so_its_closed_period_is_snapshotted(
    runtime: Runtime, ops: SeedPorts, settings: Settings
) -> None:
    """A day board filled only by seeding, whose period closed hours ago, gets its snapshot."""
    now = datetime.now(UTC)
    day = (now - timedelta(days=2)).date()
    board = Board.from_id(f"trivia#classic#day#{day.isoformat()}")
    noon = to_ms(datetime(day.year, day.month, day.day, 12, tzinfo=UTC))
    seed = parse(csv_text([("ann", 30, noon), ("bob", 20, noon)]), board=board)
    await seed_board(ports=ops, board=board, seed=seed, policy=policy(settings))
    s = runtime.stores
    report = await snapshot_closed_periods(
        ports=SnapshotPorts(s.index, s.counters, s.standings, s.snapshots, s.registry),
        now=now,
        definitions=runtime.definitions,
        settle=timedelta(seconds=settings.max_lateness_seconds),
    )
    assert [snapshot.board_id for snapshot in report.taken] == [board.board_id]
    assert [e.player_id for e in report.taken[0].entries] == ["ann", "bob"]


async def test_the_grace_period_is_told_second_by_second(
    ops: SeedPorts, settings: Settings
) -> None:
    seen: list[tuple[Stage, int, int | None]] = []

    def progress(stage: Stage, done: int, total: int | None) -> None:
        seen.append((stage, done, total))

    seed = parse(csv_text(spread(2, now_ms() - 60_000)))
    await seed_board(
        ports=ops, board=BOARD, seed=seed, policy=policy(settings, grace_s=2.5), progress=progress
    )
    waited = [(done, total) for stage, done, total in seen if stage == "waiting"]
    assert waited[0] == (0, 3)
    assert waited[-1] == (3, 3)
    assert [done for done, _ in waited] == sorted(done for done, _ in waited)
    assert {done for done, _ in waited} >= {0, 1, 2, 3}
