"""Moderation's items on the embedded backend (``ModerationItems``, decision 0036): the record,
the listing and the log written together; the listing and the log paged, the log newest first;
a row hidden off RankIndex and out of its counters, and shown again, each conditioned on the row
as read; the rows of one game found by one Query; a player's partition classified with its new
kinds; a submission's read sees the record and the hidden row."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Entry, Standing, StandingWrite
from app.domain.moderation import Action, Logged, Moderation, ModerationEvent
from app.errors import ConditionFailed, TransactionCancelled
from app.services.operations import ModerateAsk
from tests.support import counter_total, operations, put_row, scores_items

LAYOUT = BucketLayout()
BOARD = "trivia#classic#alltime"
T0 = 1_800_000_000_000


def _moderation(player: str, action: Action = Action.HIDE) -> Moderation:
    return Moderation(player, "trivia", action, "aimbot", T0, "ops")


def _event(player: str, at_ms: int, action: Logged = Logged.HIDE) -> ModerationEvent:
    return ModerationEvent("trivia", at_ms, f"e{at_ms}", action, player, "aimbot", "ops")


async def _row(runtime: Runtime, player: str, score: int, board: str = BOARD) -> Standing:
    standing = Standing(board, Entry(RankKey(score, T0, player), "N"), version=1)
    counters = (CounterDelta(*LAYOUT.slot_of(score), 1),)
    await put_row(runtime, StandingWrite(board, standing, None, counters))
    return standing


async def test_the_record_listing_and_log_go_together(runtime: Runtime) -> None:
    store = runtime.stores.moderation
    assert await store.moderation_of("p1", "trivia") is None
    for i, player in enumerate(["p1", "p2", "p3"]):
        await store.put_moderation(_moderation(player), _event(player, T0 + i))
    assert await store.moderation_of("p1", "trivia") == _moderation("p1")
    assert await store.moderation_of("p1", "chess") is None
    first = await store.moderated_players("trivia", after="", limit=2)
    assert [m.player_id for m in first.players] == ["p1", "p2"]
    assert first.last == "p2"
    rest = await store.moderated_players("trivia", after="p2", limit=2)
    assert [m.player_id for m in rest.players] == ["p3"]
    assert rest.last is None
    assert await store.remove_moderation("p2", "trivia", _event("p2", T0 + 5, Logged.RESTORE))
    assert not await store.remove_moderation("p2", "trivia", _event("p2", T0 + 6, Logged.RESTORE))
    assert await store.moderation_of("p2", "trivia") is None
    listed = await store.moderated_players("trivia", after="", limit=10)
    assert [m.player_id for m in listed.players] == ["p1", "p3"]
    log = await store.moderation_log("trivia", before="", limit=3)
    assert [(e.action, e.player_id) for e in log.events] == [
        (Logged.RESTORE, "p2"),
        (Logged.HIDE, "p3"),
        (Logged.HIDE, "p2"),
    ]
    assert log.last is not None
    older = await store.moderation_log("trivia", before=log.last, limit=3)
    assert [e.player_id for e in older.events] == ["p1"]
    assert older.last is None
    assert log.events[0] == _event("p2", T0 + 5, Logged.RESTORE)


async def test_a_row_hides_off_the_index_and_its_counters_and_comes_back(
    runtime: Runtime,
) -> None:
    stores = runtime.stores
    row = await _row(runtime, "cheat", 900)
    await _row(runtime, "honest", 800)
    await _row(runtime, "cheat", 5, board="chess#classic#alltime")
    assert await counter_total(runtime, BOARD) == (2, 2)
    bucket, slot = LAYOUT.slot_of(900)
    leaving = (CounterDelta(bucket, slot, -1),)
    with pytest.raises(ConditionFailed):  # a row is hidden only while its player is moderated
        await stores.moderation.hide_row(row, counters=leaving, since_ms=T0, now_s=T0 // 1000)
    await stores.moderation.put_moderation(_moderation("cheat"), _event("cheat", T0))
    await stores.moderation.hide_row(row, counters=leaving, since_ms=T0, now_s=T0 // 1000)
    assert await counter_total(runtime, BOARD) == (1, 1)
    page = await stores.index.query_board(BOARD, start=None, limit=10)
    assert [e.player_id for e in page.entries] == ["honest"]
    assert await stores.standings.read_standing(BOARD, "cheat") is None
    hidden = await stores.moderation.read_row(BOARD, "cheat")
    assert hidden is not None
    assert hidden.hidden_since_ms == T0
    assert hidden.entry.key == row.entry.key
    assert hidden.version == 2
    assert [r.board_id for r in await stores.moderation.rows_in_game("cheat", "trivia")] == [BOARD]
    with pytest.raises(TransactionCancelled):  # as read: no longer
        await stores.moderation.hide_row(row, counters=(), since_ms=T0, now_s=T0 // 1000)
    with pytest.raises(ConditionFailed):  # shown only once the record is gone
        await stores.moderation.show_row(hidden, counters=(), tie_mark=None, now_s=T0 // 1000)
    await stores.moderation.remove_moderation("cheat", "trivia", _event("cheat", T0 + 1))
    with pytest.raises(TransactionCancelled):
        await stores.moderation.show_row(row, counters=(), tie_mark=None, now_s=T0 // 1000)
    await stores.moderation.show_row(
        hidden, counters=(CounterDelta(bucket, slot, 1),), tie_mark=None, now_s=T0 // 1000
    )
    assert await counter_total(runtime, BOARD) == (2, 2)
    page = await stores.index.query_board(BOARD, start=None, limit=10)
    assert [e.player_id for e in page.entries] == ["cheat", "honest"]
    shown = await stores.standings.read_standing(BOARD, "cheat")
    assert shown == replace(row, version=3)
    items = [i for i in await scores_items(runtime) if i["playerId"]["S"] == "cheat"]
    assert all("hiddenKey" not in i and "hiddenSince" not in i for i in items)


async def test_a_player_s_partition_and_a_submission_s_read_see_moderation(
    runtime: Runtime,
) -> None:
    stores = runtime.stores
    row = await _row(runtime, "cheat", 900)
    await stores.moderation.put_moderation(_moderation("cheat", Action.BAN), _event("cheat", T0))
    await stores.moderation.hide_row(
        row, counters=(CounterDelta(*LAYOUT.slot_of(900), -1),), since_ms=T0, now_s=T0 // 1000
    )
    rows = await stores.standings.rows_of_player("cheat")
    assert rows.standings == []
    assert [r.board_id for r in rows.hidden] == [BOARD]
    assert rows.moderated_games == ["trivia"]
    assert rows.unknown == 0
    state = await stores.submissions.read_submission(
        "idem#c#k", "cheat", [BOARD], lease_board_ids=[]
    )
    assert state.moderation is Action.BAN
    found = state.rows[BOARD]
    assert found is not None
    assert found.hidden
    await stores.moderation.erase_moderation("cheat", "trivia")
    assert await stores.moderation.moderation_of("cheat", "trivia") is None
    assert (await stores.moderation.moderated_players("trivia", after="", limit=5)).players == []
    # The log is the audit's: an erasure of the record leaves it.
    assert len((await stores.moderation.moderation_log("trivia", before="", limit=5)).events) == 1


async def test_events_of_one_millisecond_read_back_newest_first(runtime: Runtime) -> None:
    ops = operations(runtime)
    moment = datetime(2026, 12, 6, 10, 0, tzinfo=UTC)
    try:
        for player in ("p1", "p2", "p3"):
            await ops.moderate(ModerateAsk(player, "trivia", Action.HIDE, "x", "ops", moment))
    finally:
        await ops.close()
    log = await runtime.stores.moderation.moderation_log("trivia", before="", limit=10)
    assert [e.player_id for e in log.events] == ["p3", "p2", "p1"]
    assert {e.at_ms for e in log.events} == {int(moment.timestamp() * 1000)}
