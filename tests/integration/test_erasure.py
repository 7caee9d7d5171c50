"""Erasure in the real tables (the embedded DynamoDB), through the real submission path: a player on
many boards and in snapshots is removed everywhere, the counters equal a recount of the index,
the others' snapshot places are untouched, their idempotency records are gone; a second erasure finds nothing; the edge cases (a reused key, a snapshot never written, a
seeding lease, cancelled transactions) each behave."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from structlog.testing import capture_logs

from app.api.schemas import ErasureOut
from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.clock import from_ms
from app.domain.definitions import DEFAULT_PERIODS, BoardDefinition
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Entry, Standing, StandingWrite
from app.domain.periods import Board, Period
from app.domain.storage_keys import membership_sk
from app.errors import BoardBeingSeeded, InvalidInput
from app.services.operations import ErasureReport
from app.services.ports import Snapshot
from app.store.leases import lease_key
from app.store.tables import TableNames
from tests.conftest import OTHER_GAME_KEY, SUBMIT_KEY, Service, make_settings, serve
from tests.faults import cancelled, fail_first, install
from tests.support import now_ms, put_row, scores_items, submit

LAYOUT = BucketLayout()
RETENTION = timedelta(days=30)
DEFINITION = BoardDefinition(retention_days=RETENTION.days)
PLAYER = "leaver"
NAME = "Zebediah Quux-Erasable"
"""The leaver's display name: it must never reach a log line."""


@pytest.fixture
async def running(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> AsyncIterator[Service]:
    """The app, accepting scores achieved days ago (to reach past day and week boards)."""
    settings = make_settings(dynamo_endpoint, table_names, max_lateness_seconds=5 * 86_400)
    async with serve(settings) as service:
        yield service


def boards_of(game: str, *moments_ms: int) -> set[str]:
    return {
        Board(game, "classic", Period.containing(kind, from_ms(ms))).board_id
        for ms in moments_ms
        for kind in DEFAULT_PERIODS
    }


async def index_entries(runtime: Runtime, board_id: str) -> list[Entry]:
    entries: list[Entry] = []
    start = None
    while True:
        page = await runtime.stores.index.query_board(board_id, limit=100, start=start)
        entries.extend(page.entries)
        start = page.next_start
        if start is None:
            return entries


async def assert_counters_match_index(runtime: Runtime, board_id: str) -> None:
    """The stored sums per coarse bucket and per fine slot equal a recount of the index."""
    entries = await index_entries(runtime, board_id)
    coarse = Counter(LAYOUT.coarse_of(e.score) for e in entries)
    fine = Counter(LAYOUT.slot_of(e.score) for e in entries)
    stored_fine: Counter[tuple[int, int]] = Counter()
    prefix = f"hist#{board_id}#f"
    for item in await scores_items(runtime):
        pk = item["playerId"]["S"]
        if pk.startswith(prefix):
            stored_fine[(int(pk[len(prefix) :]), int(item["leaderboardId"]["S"]))] += int(
                item["n"]["N"]
            )
    stored_coarse = {
        b: n for b, n in (await runtime.stores.counters.coarse_counts(board_id)).items() if n
    }
    assert stored_coarse == dict(coarse), board_id
    assert {k: n for k, n in stored_fine.items() if n} == dict(fine), board_id


async def rows_of(runtime: Runtime, player: str) -> list[dict[str, Any]]:
    return [i for i in await scores_items(runtime) if i["playerId"]["S"] == player]


async def put_player(runtime: Runtime, board: Board, player: str, score: int) -> None:
    key = RankKey(score, 1_700_000_000_000, player)
    await put_row(
        runtime,
        StandingWrite(
            board_id=board.board_id,
            standing=Standing(
                board.board_id,
                Entry(key, NAME, "NZ"),
                version=1,
            ),
            expected_version=None,
            counters=(CounterDelta(*LAYOUT.slot_of(score), 1),),
        ),
    )


async def erase(runtime: Runtime, player: str = PLAYER) -> ErasureReport:
    return await runtime.leaderboard.operations.erase(player, now=datetime.now(UTC))


async def test_a_player_on_many_boards_and_in_snapshots_is_erased_everywhere(
    running: Service, runtime: Runtime
) -> None:
    http, now = running.http, now_ms()
    three_days_ago = now - 3 * 86_400_000
    sent: list[tuple[str, dict[str, Any]]] = []  # the leaver's submissions: (key, body)

    async def leaver(score: int, achieved: int, *, game: str = "trivia") -> None:
        idem = uuid.uuid4().hex
        response = await submit(
            http,
            player=PLAYER,
            score=score,
            achieved_ms=achieved,
            key=SUBMIT_KEY if game == "trivia" else OTHER_GAME_KEY,
            idempotency_key=idem,
            game=game,
            displayName=NAME,
            country="NZ",
        )
        assert response.status_code == 200, response.text
        sent.append((idem, {"score": score, "achieved": achieved}))

    await leaver(500, now - 2000)
    await leaver(900, now - 1000)  # improves: the counters moved from 500's bucket to 900's
    await leaver(300, three_days_ago)  # a past day (and perhaps week) board
    await leaver(40, now - 1000, game="chess")
    for player, score in {"a1": 1000, "a2": 700, "a3": 900, "a4": 100}.items():
        assert (await submit(http, player=player, score=score, achieved_ms=now)).status_code == 200
    assert (
        await submit(http, player="a5", score=301, achieved_ms=three_days_ago)
    ).status_code == 200
    for player, score in {"b1": 50, "b2": 30}.items():
        response = await submit(http, player=player, score=score, key=OTHER_GAME_KEY, game="chess")
        assert response.status_code == 200
    leaver_boards = boards_of("trivia", now, three_days_ago) | boards_of("chess", now)
    all_boards = leaver_boards | boards_of("trivia", three_days_ago)
    assert {r["leaderboardId"]["S"] for r in await rows_of(runtime, PLAYER) if "rankKey" in r} == (
        leaver_boards
    )
    for board_id in all_boards:
        await assert_counters_match_index(runtime, board_id)

    # Snapshots: the leaver is 2nd on both all-time boards (at 900 before a3, who got there
    # later), and not in chess's top 1.
    trivia, chess = Board.from_id("trivia#classic#alltime"), Board.from_id("chess#classic#alltime")
    taken_now = datetime.now(UTC)
    operations = runtime.leaderboard.operations
    before: list[Snapshot] = [
        await operations.snapshot(trivia, DEFINITION, now=taken_now, top=100),
        await operations.snapshot(chess, DEFINITION, now=taken_now, top=100),
    ]
    top_one = await operations.snapshot(
        chess, DEFINITION, now=taken_now + timedelta(seconds=1), top=1
    )
    assert [e.player_id for e in before[0].entries] == ["a1", PLAYER, "a3", "a2", "a5", "a4"]
    assert [e.player_id for e in before[1].entries] == ["b1", PLAYER, "b2"]
    assert [e.player_id for e in top_one.entries] == ["b1"]

    with capture_logs() as logs:
        report = await erase(runtime)
    assert ErasureOut.of(report).model_dump(by_alias=True) == {
        "playerId": PLAYER,
        "removed": {
            "boards": len(leaver_boards),
            "snapshots": 2,
            "idempotencyRecords": len(sent),
        },
    }
    assert report.complete
    assert NAME not in json.dumps(logs, default=str)
    assert any(e.get("player") == PLAYER for e in logs)

    # Nothing of the leaver's is left in the Scores table, on any board, or in the counters.
    assert await rows_of(runtime, PLAYER) == []
    for board_id in all_boards:
        assert PLAYER not in {e.player_id for e in await index_entries(runtime, board_id)}
        await assert_counters_match_index(runtime, board_id)

    # The snapshots keep every place: the leaver's is scrubbed, the others' are as they were.
    for old in before:
        new = await runtime.stores.snapshots.get_snapshot(old.board_id, old.taken_at)
        assert new is not None
        assert [e.rank for e in new.entries] == [e.rank for e in old.entries]
        for was, now_is in zip(old.entries, new.entries, strict=True):
            if was.player_id == PLAYER:
                assert dataclasses.asdict(now_is) == {
                    "rank": was.rank,
                    "player_id": None,
                    "display_name": None,
                    "country": None,
                    "score": was.score,
                    "achieved_at": None,
                }
            else:
                assert now_is == was
        assert NAME not in json.dumps(dataclasses.asdict(new))
    assert (
        await runtime.stores.snapshots.get_snapshot(top_one.board_id, top_one.taken_at) == top_one
    )

    # Their idempotency records are gone with them (they lived in the player's partition).
    items = await scores_items(runtime)
    assert not [i for idem, _ in sent for i in items if i["leaderboardId"]["S"].endswith(idem)]
    assert NAME not in json.dumps(items)
    assert PLAYER not in json.dumps(items)

    # Erasure is idempotent: a second run finds nothing.
    again = await erase(runtime)
    assert ErasureOut.of(again).model_dump(by_alias=True)["removed"] == {
        "boards": 0,
        "snapshots": 0,
        "idempotencyRecords": 0,
    }


async def test_an_unknown_player_is_erased_as_nothing(runtime: Runtime) -> None:
    await put_player(runtime, Board.from_id("trivia#classic#alltime"), "someone", 10)
    report = await erase(runtime, "nobody")
    assert report == ErasureReport("nobody", 0, 0, 0)
    assert len(await rows_of(runtime, "someone")) == 1


async def test_an_id_that_is_no_player_id_is_refused(runtime: Runtime) -> None:
    """Bookkeeping partitions hold ``#``: an erasure must never reach them."""
    await put_player(runtime, Board.from_id("trivia#classic#alltime"), "someone", 10)
    items = await scores_items(runtime)
    for bad in ("hist#trivia#classic#alltime#c0", "registry#boards", ""):
        with pytest.raises(InvalidInput):
            await erase(runtime, bad)
    assert await scores_items(runtime) == items


async def test_another_players_record_with_the_same_key_is_left_alone(
    runtime: Runtime, running: Service
) -> None:
    """Keys are scoped to the client and the player: erasing one player leaves the record another
    player's submission made with the same key, and it still replays."""
    t = now_ms() - 1000
    theirs = await submit(running.http, player="other", score=7, achieved_ms=t, idempotency_key="k")
    mine = await submit(running.http, player=PLAYER, score=9, achieved_ms=t, idempotency_key="k")
    assert theirs.status_code == mine.status_code == 200
    assert (await erase(runtime)).idempotency_records == 1
    assert await rows_of(runtime, PLAYER) == []
    again = await submit(running.http, player="other", score=7, achieved_ms=t, idempotency_key="k")
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == theirs.json()


async def test_a_membership_of_a_snapshot_never_written(runtime: Runtime) -> None:
    """Old: its writer failed, it is removed. Young: its snapshot may be being written, so it is
    left for a later run and reported pending."""
    board_id = "trivia#classic#alltime"
    now_s = int(datetime.now(UTC).timestamp())
    for taken_at, created in (("2026-01-01T00:00:00.000Z", now_s - 3600), ("young", now_s)):
        await runtime.client.put_item(
            TableName=runtime.tables.scores,
            Item={
                "playerId": {"S": PLAYER},
                "leaderboardId": {"S": membership_sk(board_id, taken_at)},
                "createdAt": {"N": str(created)},
            },
        )
    report = await erase(runtime)
    assert (report.snapshots, report.pending_snapshots, report.complete) == (0, 1, False)
    remaining = [r["leaderboardId"]["S"] for r in await rows_of(runtime, PLAYER)]
    assert remaining == [membership_sk(board_id, "young")]


async def test_a_seeding_lease_holds_the_erasure_back(runtime: Runtime) -> None:
    board = Board.from_id("trivia#classic#alltime")
    await put_player(runtime, board, PLAYER, 10)
    await runtime.client.put_item(
        TableName=runtime.tables.scores,
        Item={
            "playerId": lease_key(board.board_id)["playerId"],
            "leaderboardId": {"S": board.board_id},
            "expiresAt": {"N": str(int(datetime.now(UTC).timestamp()) + 60)},
        },
    )
    with pytest.raises(BoardBeingSeeded):
        await erase(runtime)
    assert len(await rows_of(runtime, PLAYER)) == 1
    await runtime.client.delete_item(
        TableName=runtime.tables.scores,
        Key={
            "playerId": lease_key(board.board_id)["playerId"],
            "leaderboardId": {"S": board.board_id},
        },
    )
    assert (await erase(runtime)).boards == 1
    await assert_counters_match_index(runtime, board.board_id)


async def test_cancelled_transactions_are_retried_after_a_re_read(
    runtime: Runtime, dynamo_endpoint: str
) -> None:
    board = Board.from_id("trivia#classic#alltime")
    await put_player(runtime, board, PLAYER, 10)
    await put_player(runtime, board, "stays", 10)
    faults = install(runtime.client, dynamo_endpoint)
    faults.rules.append(
        fail_first(
            "TransactWriteItems",
            3,
            lambda _: cancelled(["None", "TransactionConflict", "None", "None"]),
        )
    )
    assert (await erase(runtime)).boards == 1
    assert faults.seen["TransactWriteItems"] == 4
    assert await rows_of(runtime, PLAYER) == []
    await assert_counters_match_index(runtime, board.board_id)


async def test_a_row_changed_under_the_erasure_is_re_read(runtime: Runtime) -> None:
    """The row improves between the Query and the delete: the decrement follows the new score."""
    board = Board.from_id("trivia#classic#alltime")
    await put_player(runtime, board, PLAYER, 10)
    real_delete = runtime.stores.standings.delete_standing
    improved: list[bool] = []

    async def improve_first(*args: Any, **kwargs: Any) -> None:
        if not improved:
            improved.append(True)
            better = RankKey(10**9, 1_700_000_000_001, PLAYER)
            await put_row(
                runtime,
                StandingWrite(
                    board_id=board.board_id,
                    standing=Standing(board.board_id, Entry(better), version=2),
                    expected_version=1,
                    counters=(
                        CounterDelta(*LAYOUT.slot_of(10), -1),
                        CounterDelta(*LAYOUT.slot_of(10**9), 1),
                    ),
                ),
            )
        await real_delete(*args, **kwargs)

    runtime.stores.standings.delete_standing = improve_first  # type: ignore[method-assign]
    assert (await erase(runtime)).boards == 1
    assert improved
    assert await rows_of(runtime, PLAYER) == []
    await assert_counters_match_index(runtime, board.board_id)
