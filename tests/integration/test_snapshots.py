"""Snapshots in the real tables (the embedded DynamoDB): taken, listed newest first, read back; the
board registry; period-closed snapshots taken once per closed board, never for open periods or
all-time, and not for boards past their retention."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from app.api.schemas import PeriodOut, SnapshotListOut, SnapshotOut
from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.calendar import UTC_CALENDAR, board_expires_at
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Entry, Page, Standing, StandingWrite
from app.domain.periods import Board, Period, PeriodKind
from app.domain.storage_keys import REGISTRY_PK, membership_sk
from app.errors import Conflict, InvalidInput, NotFound
from app.services.operations import Operations
from app.services.operations._snapshots import take_snapshot
from app.services.ports import BoardIndex, IndexedKey, RegisteredBoard, SnapshotEntry, Stores
from app.services.reads._snapshots import get_snapshot, list_snapshots
from app.services.registry import BoardRegistrar, register_board
from app.store.tables import RANK_INDEX
from tests.support import lasting, operations, put_row, scores_items

RETENTION = timedelta(days=30)
KEPT = BoardDefinition(retention_days=RETENTION.days)
"""The boards' definition: kept ``RETENTION``."""
SETTLE = timedelta(hours=1)
LAYOUT = BucketLayout()
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def archive(runtime: Runtime) -> Stores:
    return runtime.stores


def ops(runtime: Runtime) -> Operations:
    """The runtime's operations, a period closing ``SETTLE`` after its end."""
    return operations(runtime, settle=SETTLE)


def board(period: str, *, game: str = "trivia", now: datetime = NOW) -> Board:
    return Board(game, "classic", UTC_CALENDAR.parse(period, now=now))


async def put_player(runtime: Runtime, board: Board, player: str, score: int) -> None:
    """A new standing (named ``name of <player>``, from NZ) with its counters, through the
    adapter's own write."""
    key = RankKey(score, 1_700_000_000_000, player)
    expires = board_expires_at(board, lasting(RETENTION))
    expires_s = None if expires is None else int(expires.timestamp())
    await put_row(
        runtime,
        StandingWrite(
            board_id=board.board_id,
            standing=Standing(
                board.board_id,
                Entry(key, f"name of {player}", "NZ"),
                version=1,
                expires_at=expires_s,
            ),
            expected_version=None,
            counters=(CounterDelta(*LAYOUT.slot_of(score), 1),),
            expires_at=expires_s,
        ),
    )


async def fill(runtime: Runtime, target: Board, scores: Mapping[str, int]) -> None:
    await asyncio.gather(*(put_player(runtime, target, p, s) for p, s in scores.items()))


async def test_a_snapshot_holds_the_top_and_the_count_and_reads_back(
    runtime: Runtime, archive: Stores
) -> None:
    alltime = board("alltime")
    await fill(runtime, alltime, {"ann": 50, "bob": 70, "cat": 60, "dan": 10, "eve": 30})
    taken = await ops(runtime).snapshot(alltime, KEPT, now=NOW, top=3)
    assert taken.taken_at == "2026-11-30T12:00:00.000Z"
    assert (taken.reason, taken.player_count, taken.top_n) == ("manual", 5, 3)
    assert [(e.rank, e.player_id, e.score) for e in taken.entries] == [
        (1, "bob", 70),
        (2, "cat", 60),
        (3, "ann", 50),
    ]
    assert taken.entries[0] == SnapshotEntry(
        1, "bob", "name of bob", "NZ", 70, "2023-11-14T22:13:20.000Z"
    )
    read = await get_snapshot(stores=archive, board=alltime, taken_at=taken.taken_at)
    assert read == taken
    document = SnapshotOut.of(read).model_dump(by_alias=True)
    assert {k: v for k, v in document.items() if k != "entries"} == {
        "leaderboardId": "trivia#classic#alltime",
        "snapshotTakenAt": "2026-11-30T12:00:00.000Z",
        "reason": "manual",
        "playerCount": 5,
        "topN": 3,
    }
    assert document["entries"][0] == {
        "rank": 1,
        "playerId": "bob",
        "displayName": "name of bob",
        "country": "NZ",
        "score": 70,
        "achievedAt": "2023-11-14T22:13:20.000Z",
    }
    # One membership row per player in the snapshot, and none reaches the board.
    memberships = sorted(
        i["playerId"]["S"]
        for i in await scores_items(runtime)
        if i["leaderboardId"]["S"] == membership_sk(alltime.board_id, taken.taken_at)
    )
    assert memberships == ["ann", "bob", "cat"]
    page = await runtime.stores.index.query_board(alltime.board_id, limit=100, start=None)
    assert len(page.entries) == 5


async def test_snapshots_are_listed_newest_first(runtime: Runtime, archive: Stores) -> None:
    alltime = board("alltime")
    await fill(runtime, alltime, {"ann": 5})
    times = [NOW + timedelta(minutes=m) for m in (0, 5, 1)]
    for moment in times:
        await ops(runtime).snapshot(alltime, KEPT, now=moment, top=100)
    listed = await list_snapshots(snapshots=archive.snapshots, board=alltime)
    period = PeriodOut.of(alltime.period, UTC_CALENDAR, NOW)
    assert SnapshotListOut.of(period, listed).model_dump(by_alias=True)["snapshots"] == [
        {"snapshotTakenAt": iso_ms(to_ms(m)), "reason": "manual", "playerCount": 1}
        for m in sorted(times, reverse=True)
    ]
    assert [
        s.taken_at
        for s in await list_snapshots(snapshots=archive.snapshots, board=alltime, limit=2)
    ] == [s.taken_at for s in listed[:2]]
    assert (
        await list_snapshots(snapshots=archive.snapshots, board=board("alltime", game="chess"))
        == []
    )


async def test_a_snapshot_that_is_not_there_is_not_found(runtime: Runtime, archive: Stores) -> None:
    alltime = board("alltime")
    await fill(runtime, alltime, {"ann": 5})
    taken = await ops(runtime).snapshot(alltime, KEPT, now=NOW, top=100)
    with pytest.raises(NotFound):
        await get_snapshot(stores=archive, board=alltime, taken_at="2026-11-30T12:00:00.001Z")
    with pytest.raises(NotFound):
        await get_snapshot(
            stores=archive,
            board=board("alltime", game="chess"),
            taken_at=taken.taken_at,
        )
    with pytest.raises(InvalidInput):
        await get_snapshot(stores=archive, board=alltime, taken_at="yesterday")
    # Another spelling of the same instant finds it.
    found = await get_snapshot(stores=archive, board=alltime, taken_at="2026-11-30T12:00:00Z")
    assert found == taken


async def test_two_snapshots_in_one_millisecond_both_land(
    runtime: Runtime, archive: Stores
) -> None:
    alltime = board("alltime")
    await fill(runtime, alltime, {"ann": 5, "bob": 6})
    first, second = await asyncio.gather(
        *(ops(runtime).snapshot(alltime, KEPT, now=NOW, top=100) for _ in range(2))
    )
    assert sorted([first.taken_at, second.taken_at]) == [
        "2026-11-30T12:00:00.000Z",
        "2026-11-30T12:00:00.001Z",
    ]
    assert len(await list_snapshots(snapshots=archive.snapshots, board=alltime)) == 2


async def test_an_empty_board_snapshots_as_empty(runtime: Runtime, archive: Stores) -> None:
    taken = await ops(runtime).snapshot(board("alltime"), KEPT, now=NOW, top=100)
    assert (taken.player_count, taken.entries) == (0, ())


async def test_a_snapshot_refuses_what_it_cannot_take(runtime: Runtime, archive: Stores) -> None:
    with pytest.raises(InvalidInput):
        await ops(runtime).snapshot(board("alltime"), KEPT, now=NOW, top=0)
    with pytest.raises(NotFound):  # past its retention: its rows are being deleted
        await ops(runtime).snapshot(board("day:2026-10-01"), KEPT, now=NOW, top=100)
    with pytest.raises(InvalidInput):  # the period is still open
        await take_snapshot(archive, board("day"), KEPT, now=NOW, settle=SETTLE)
    assert await list_snapshots(snapshots=archive.snapshots, board=board("day")) == []


class _IndexThatLags:
    """Reads the board as the index would just after a player's row was deleted: still there."""

    def __init__(self, index: BoardIndex, ghost: Entry) -> None:
        self._index = index
        self._ghost = ghost

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page:
        page = await self._index.query_board(board_id, limit=limit, start=start)
        entries = sorted([*page.entries, self._ghost], key=lambda e: e.key.order)
        return Page(entries=entries[:limit], next_start=page.next_start)

    async def query_neighbours(
        self, board_id: str, key: str, *, ahead: bool, limit: int
    ) -> list[Entry]:
        return await self._index.query_neighbours(board_id, key, ahead=ahead, limit=limit)

    def board_keys(
        self, board_id: str, *, page_size: int, between: tuple[str, str] | None = None
    ) -> AsyncIterator[list[IndexedKey]]:
        return self._index.board_keys(board_id, page_size=page_size, between=between)


async def test_a_player_gone_from_the_table_is_left_out(runtime: Runtime, archive: Stores) -> None:
    alltime = board("alltime")
    await fill(runtime, alltime, {"ann": 50, "cat": 30})
    ghost = Entry(RankKey(40, 1_700_000_000_000, "gone"), "the ghost", "NZ")
    lagging = replace(archive, index=_IndexThatLags(archive.index, ghost))
    taken = await operations(runtime, stores=lagging).snapshot(alltime, KEPT, now=NOW, top=100)
    assert [(e.rank, e.player_id) for e in taken.entries] == [(1, "ann"), (2, "cat")]
    stored = await get_snapshot(stores=archive, board=alltime, taken_at=taken.taken_at)
    assert "gone" not in {e.player_id for e in stored.entries}
    assert not [i for i in await scores_items(runtime) if i["playerId"]["S"] == "gone"]


async def test_a_board_is_registered_once(runtime: Runtime, archive: Stores) -> None:
    day, alltime = board("day:2026-11-29"), board("alltime")
    assert (
        await register_board(registry=archive.registry, board=day, definition=lasting(RETENTION))
        is True
    )
    assert (
        await register_board(registry=archive.registry, board=day, definition=lasting(RETENTION))
        is False
    )
    assert (
        await register_board(
            registry=archive.registry, board=alltime, definition=lasting(RETENTION)
        )
        is True
    )
    registered = {r.board_id: r for r in await runtime.stores.registry.registered_boards()}
    assert set(registered) == {day.board_id, alltime.board_id}
    expires = board_expires_at(day, lasting(RETENTION))
    assert expires is not None
    assert registered[day.board_id].expires_at == int(expires.timestamp())
    assert registered[alltime.board_id].expires_at is None
    assert registered[day.board_id].closed_snapshot_at is None
    rows = [i for i in await scores_items(runtime) if i["playerId"]["S"] == REGISTRY_PK]
    assert len(rows) == 2
    assert all("rankKey" not in row for row in rows)
    index = await runtime.client.scan(TableName=runtime.tables.scores, IndexName=RANK_INDEX)
    assert index["Items"] == []


async def test_the_registrar_registers_each_board_once_per_process(
    runtime: Runtime, archive: Stores
) -> None:
    calls: list[str] = []

    class Counting:
        async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
            calls.append(board_id)
            return await runtime.stores.registry.register_board(board_id, expires_at=expires_at)

        async def registered_boards(self, *, prefix: str = "") -> list[RegisteredBoard]:
            return await runtime.stores.registry.registered_boards(prefix=prefix)

    registrar = BoardRegistrar(Counting(), max_remembered=2)
    day, week, alltime = board("day"), board("week"), board("alltime")
    for target in (day, week, alltime):
        await registrar.ensure(target, definition=lasting(RETENTION))
    await registrar.ensure_all([week, alltime], definition=lasting(RETENTION))
    assert sorted(calls) == sorted([day.board_id, week.board_id, alltime.board_id])
    await registrar.ensure(
        day, definition=lasting(RETENTION)
    )  # the oldest was forgotten past the bound: asked again
    assert calls.count(day.board_id) == 2
    assert {r.board_id for r in await runtime.stores.registry.registered_boards()} == set(calls)


async def test_closed_periods_are_snapshotted_once(runtime: Runtime, archive: Stores) -> None:
    closed_day = board("day:2026-11-27")
    closed_week = board("week:2026-W46")
    just_ended = board("day:2026-11-29")  # ended 12 h ago: closed with a 1 h settle
    open_day, open_week, alltime = board("day"), board("week"), board("alltime")
    boards = [closed_day, closed_week, just_ended, open_day, open_week, alltime]
    for target in boards:
        await fill(runtime, target, {"ann": 10, "bob": 20})
        await register_board(registry=archive.registry, board=target, definition=lasting(RETENTION))

    async def run() -> list[str]:
        report = await ops(runtime).snapshot_closed_periods(now=NOW, top=100)
        assert report.failed == []
        assert report.expired == []
        return [s.board_id for s in report.taken]

    # Two runs at once, and one after: each closed board gets one period-closed snapshot.
    first, second = await asyncio.gather(run(), run())
    third = await run()
    closed = sorted(b.board_id for b in (closed_day, closed_week, just_ended))
    assert sorted(first + second) == closed
    assert third == []
    for target in boards:
        listed = await list_snapshots(snapshots=archive.snapshots, board=target)
        if target.board_id in closed:
            assert [(s.reason, s.player_count) for s in listed] == [("closed", 2)]
            snapshot = await get_snapshot(stores=archive, board=target, taken_at=listed[0].taken_at)
            assert [e.player_id for e in snapshot.entries] == ["bob", "ann"]
        else:
            assert listed == []
    registered = {
        r.board_id: r.closed_snapshot_at for r in await runtime.stores.registry.registered_boards()
    }
    assert sorted(b for b, at in registered.items() if at is not None) == closed
    # A period-closed snapshot on demand for a board that has one is refused, not repeated.
    with pytest.raises(Conflict):
        await take_snapshot(archive, closed_day, KEPT, now=NOW, settle=SETTLE)
    assert len(await list_snapshots(snapshots=archive.snapshots, board=closed_day)) == 1


async def test_a_period_is_closed_only_after_the_lateness_allowed(
    runtime: Runtime, archive: Stores
) -> None:
    yesterday = board("day:2026-11-29")
    await fill(runtime, yesterday, {"ann": 10})
    await register_board(registry=archive.registry, board=yesterday, definition=lasting(RETENTION))
    half_hour_in = datetime(2026, 11, 30, 0, 30, tzinfo=UTC)
    early = await ops(runtime).snapshot_closed_periods(now=half_hour_in, top=100)
    assert early.taken == []
    later = await ops(runtime).snapshot_closed_periods(
        now=half_hour_in + timedelta(hours=1), top=100
    )
    assert [s.board_id for s in later.taken] == [yesterday.board_id]


async def test_a_closed_board_past_its_retention_is_reported_not_snapshotted(
    runtime: Runtime, archive: Stores
) -> None:
    old = board("day:2026-10-01")
    await fill(runtime, old, {"ann": 10})
    await register_board(registry=archive.registry, board=old, definition=lasting(RETENTION))
    report = await ops(runtime).snapshot_closed_periods(now=NOW, top=100)
    assert (report.taken, report.expired) == ([], [old.board_id])
    assert await list_snapshots(snapshots=archive.snapshots, board=old) == []


async def test_a_board_seen_first_through_a_submission_is_closed_later(
    runtime: Runtime, archive: Stores
) -> None:
    """The registrar as the submission path uses it, with the real clock."""
    now = datetime.now(UTC)
    day = Board("trivia", "classic", Period.containing(PeriodKind.DAY, now - timedelta(days=2)))
    await fill(runtime, day, {"ann": 10})
    await BoardRegistrar(archive.registry).ensure(day, definition=lasting(RETENTION))
    report = await ops(runtime).snapshot_closed_periods(now=now, top=100)
    assert [s.board_id for s in report.taken] == [day.board_id]
