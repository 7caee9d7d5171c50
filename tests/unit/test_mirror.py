"""A task's mirror of a hot board (``HotBoardMirrors``) over the in-memory fakes, written through
the real write path: cold, fresh, stale, a refresh that fails, a task restarted, the asking
player's own last write, and a move inside one bucket (which only the bucket's version shows)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import app.services.ranking.mirror as mirror_module
from app.domain.definitions import BoardDefinition
from app.domain.keys import Order, RankKey
from app.domain.periods import Board, Period, PeriodKind
from app.domain.ranks import ExactRank, RankQuery
from app.domain.shards import partition_ids
from app.services.ranking.mirror import HotBoardMirrors
from app.settings import Settings
from tests.fakes import MemoryStores
from tests.unit.test_use_cases import GAME, Service, _service

HOT, SHARDS = "show", 4
BOARD = Board(GAME, HOT, Period(PeriodKind.ALLTIME))
# Scores in few coarse buckets, several players a bucket, ties on one score.
SCORES = {f"p{i:02d}": 1_000 + (i % 7) * 3 + (i // 7) * 40 for i in range(30)} | {
    "tie1": 1_006,
    "tie2": 1_006,
}


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


async def _hot_service(order: Order = Order.DESC) -> Service:
    """A service whose own ranks are read live (no summary, no mirror): the tests' mirrors are
    their own, on clocks of their own."""
    service = _service(Settings(hot_board_summary_seconds=0))
    definition = BoardDefinition(order=order, periods=(PeriodKind.ALLTIME,), shards=SHARDS)
    await service.leaderboard.rules.define(GAME, HOT, definition, now=service.now)
    for player, score in SCORES.items():
        await service.submit(player, score, variant=HOT)
    return service


def _keys(fakes: MemoryStores) -> dict[str, RankKey]:
    """Every player's key on the board, as the table holds it now."""
    return {
        standing.entry.key.player_id: standing.entry.key
        for pid in partition_ids(BOARD.board_id, SHARDS)
        for _, standing in fakes.table.board(pid)
    }


def _truth(keys: dict[str, RankKey], key: RankKey) -> int:
    """``key``'s rank among every other player's key."""
    others = [k.encode() for p, k in keys.items() if p != key.player_id]
    return 1 + sum(1 for other in others if other < key.encode())


def _query(key: RankKey) -> RankQuery:
    return RankQuery(BOARD.board_id, key, shards=SHARDS)


def _mirrors(service: Service, clock: Clock) -> HotBoardMirrors:
    return HotBoardMirrors(
        service.fakes.stores,
        service.leaderboard.ranking.policy.layout,
        max_age_s=1.0,
        settle_s=2.0,
        clock=clock,
        wall=lambda: datetime.fromtimestamp(clock.t, UTC),
    )


async def _settled(mirrors: HotBoardMirrors) -> None:
    await mirrors.settled()


async def _ranks(mirrors: HotBoardMirrors, keys: dict[str, RankKey]) -> dict[str, int | None]:
    found = {}
    for player, key in keys.items():
        held = await mirrors.rank(_query(key))
        found[player] = None if held is None else held.rank.rank
    return found


@pytest.mark.parametrize("order", list(Order))
async def test_a_cold_task_reads_live_then_answers_every_rank_exactly_with_no_read(
    order: Order,
) -> None:
    service = await _hot_service(order)
    clock = Clock()
    mirrors = _mirrors(service, clock)
    keys = _keys(service.fakes)
    # Cold: nothing to answer from yet; the caller reads live while the mirror loads.
    assert await mirrors.rank(_query(keys["p00"])) is None
    await _settled(mirrors)
    calls = sum(service.fakes.table.calls.values())
    ranks = await _ranks(mirrors, keys)
    assert ranks == {player: _truth(keys, key) for player, key in keys.items()}
    assert sum(service.fakes.table.calls.values()) == calls  # a thousand readers: no read
    held = await mirrors.rank(_query(keys["tie1"]))
    assert held is not None
    assert held.read_at == datetime.fromtimestamp(100.0, UTC)
    assert isinstance(held.rank, ExactRank)


async def test_an_answer_is_of_the_mirror_s_moment_and_a_stale_one_waits_for_the_refresh() -> None:
    service = await _hot_service()
    clock = Clock()
    mirrors = _mirrors(service, clock)
    await mirrors.rank(_query(_keys(service.fakes)["p00"]))
    await _settled(mirrors)
    before = _keys(service.fakes)
    # Another player jumps to the top after the mirror's reads.
    await service.submit("p00", 9_000, variant=HOT)
    after = _keys(service.fakes)
    asked = before["p10"]
    clock.t += 0.4  # fresh: the mirror's moment, without the jump
    held = await mirrors.rank(_query(asked))
    assert held is not None
    assert held.rank.rank == _truth(before, asked)
    clock.t += 0.7  # past the whole age: the answer waits for a refresh, and has the jump
    held = await mirrors.rank(_query(asked))
    assert held is not None
    assert held.rank.rank == _truth(after, asked) == _truth(before, asked) + 1
    assert held.read_at == datetime.fromtimestamp(clock.t, UTC)
    await mirrors.close()


async def test_the_asking_player_s_own_last_write_is_in_their_answer() -> None:
    service = await _hot_service()
    clock = Clock()
    mirrors = _mirrors(service, clock)
    await mirrors.rank(_query(_keys(service.fakes)["p00"]))
    await _settled(mirrors)
    # p03 improves past several players; the mirror still holds their old key.
    await service.submit("p03", 1_150, variant=HOT)
    now = _keys(service.fakes)
    held = await mirrors.rank(_query(now["p03"]))
    assert held is not None
    assert held.rank.rank == _truth(now, now["p03"])  # counted at their new key, once
    # Asked at the old key (a rank before the move), they are not counted ahead of themselves.
    old = RankKey(SCORES["p03"], now["p03"].achieved_at_ms, "p03")
    held = await mirrors.rank(_query(old))
    assert held is not None
    assert held.rank.rank == _truth(now, old)
    # Once the mirror holds their new key (ahead of the old one), asked at the old key they are
    # still counted there alone, not also at their new place.
    clock.t += 1.5
    await mirrors.rank(_query(now["p03"]))
    await _settled(mirrors)
    held = await mirrors.rank(_query(old))
    assert held is not None
    assert held.rank.rank == _truth(now, old)
    assert held.read_at == datetime.fromtimestamp(clock.t, UTC)


async def test_a_move_inside_one_bucket_is_seen_by_its_version() -> None:
    service = await _hot_service()
    clock = Clock()
    mirrors = _mirrors(service, clock)
    layout = service.leaderboard.ranking.policy.layout
    await mirrors.rank(_query(_keys(service.fakes)["p00"]))
    await _settled(mirrors)
    clock.t += 2.5  # past the first load's settling: a bucket is read again only when it moves
    await mirrors.rank(_query(_keys(service.fakes)["p00"]))
    await _settled(mirrors)
    # p00 (1,000) moves past p01 (1,003) and tie1/tie2 (1,006) without leaving its bucket: no
    # count of it moves, only its version.
    assert layout.coarse_of(1_007) == layout.coarse_of(SCORES["p00"])
    await service.submit("p00", 1_007, variant=HOT)
    now = _keys(service.fakes)
    clock.t += 1.0
    for player in ("p01", "tie1", "tie2"):
        held = await mirrors.rank(_query(now[player]))
        assert held is not None
        assert held.rank.rank == _truth(now, now[player]), player
    await mirrors.close()


async def test_a_refresh_that_fails_leaves_the_mirror_unused_once_too_old() -> None:
    service = await _hot_service()
    clock = Clock()
    mirrors = _mirrors(service, clock)
    keys = _keys(service.fakes)
    await mirrors.rank(_query(keys["p00"]))
    await _settled(mirrors)
    # A seed marks one shard's counters part-written: refreshes fail until it clears.
    shard = partition_ids(BOARD.board_id, SHARDS)[1]
    service.fakes.table.incomplete[shard] = "a seed"
    clock.t += 0.6
    assert await mirrors.rank(_query(keys["p05"])) is not None  # still within its age
    await _settled(mirrors)
    clock.t += 0.6
    assert await mirrors.rank(_query(keys["p05"])) is None  # too old: read live (or 503)
    await _settled(mirrors)
    del service.fakes.table.incomplete[shard]
    clock.t += 0.1
    await mirrors.rank(_query(keys["p05"]))
    await _settled(mirrors)
    held = await mirrors.rank(_query(keys["p05"]))
    assert held is not None
    assert held.rank.rank == _truth(keys, keys["p05"])


async def test_a_task_restarted_mid_round_starts_cold_and_catches_up() -> None:
    service = await _hot_service()
    clock = Clock()
    first = _mirrors(service, clock)
    await first.rank(_query(_keys(service.fakes)["p00"]))
    await _settled(first)
    for i in range(5):
        await service.submit(f"late{i}", 1_004 + i, variant=HOT)
    restarted = _mirrors(service, clock)
    now = _keys(service.fakes)
    assert await restarted.rank(_query(now["late0"])) is None
    await _settled(restarted)
    assert await _ranks(restarted, now) == {p: _truth(now, k) for p, k in now.items()}


async def test_the_service_answers_a_hot_board_s_rank_from_its_mirror_and_says_when() -> None:
    service = await _hot_service()
    ranking = service.leaderboard.ranking
    live = HotBoardMirrors(service.fakes.stores, ranking.policy.layout, max_age_s=1.0)
    ranking.mirrors = live
    keys = _keys(service.fakes)
    rank, read_at = await ranking.rank_at(_query(keys["p07"]))
    assert read_at is None  # cold: read live, now
    assert isinstance(rank, ExactRank)
    assert rank.rank == _truth(keys, keys["p07"])
    await _settled(live)
    ranks, read_at = await ranking.rank_many_at([_query(keys[p]) for p in ("p07", "tie2")])
    assert read_at is not None
    assert [r.rank for r in ranks if isinstance(r, ExactRank)] == [
        _truth(keys, keys["p07"]),
        _truth(keys, keys["tie2"]),
    ]


async def test_a_board_past_what_a_task_may_hold_is_read_live_and_never_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = await _hot_service()
    monkeypatch.setattr(mirror_module, "MAX_KEYS", len(SCORES) - 1)
    clock = Clock()
    mirrors = _mirrors(service, clock)
    keys = _keys(service.fakes)
    assert await mirrors.rank(_query(keys["p00"])) is None
    await _settled(mirrors)
    walked = service.fakes.table.calls["board_keys"]
    clock.t += 5
    assert await mirrors.rank(_query(keys["p00"])) is None
    await _settled(mirrors)
    assert walked == 0
    assert service.fakes.table.calls["board_keys"] == 0  # not even a refresh: nothing is read


async def test_mirrors_past_what_a_task_may_hold_let_the_least_recently_read_go(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    service = await _hot_service()
    definition = BoardDefinition(periods=(PeriodKind.ALLTIME,), shards=SHARDS)
    await service.leaderboard.rules.define(GAME, "encore", definition, now=service.now)
    for i in range(10):
        await service.submit(f"e{i}", 50 + i, variant="encore")
    encore = RankQuery("trivia#encore#alltime", RankKey(55, 1, "e5"), shards=SHARDS)
    monkeypatch.setattr(mirror_module, "MAX_KEYS", len(SCORES) + 5)
    clock = Clock()
    mirrors = _mirrors(service, clock)
    await mirrors.rank(encore)  # read first: the least recently read once the show's is
    await _settled(mirrors)
    await mirrors.rank(_query(_keys(service.fakes)["p00"]))
    await _settled(mirrors)
    # 10 + 32 keys past 37: the encore's mirror goes, the show's (32, within) stays.
    assert [m.board_id for m in mirrors.held()] == [BOARD.board_id]
    assert all(not m.too_large for m in mirrors.held())


async def test_a_mirror_no_one_reads_for_ten_minutes_is_let_go() -> None:
    service = await _hot_service()
    clock = Clock()
    mirrors = _mirrors(service, clock)
    keys = _keys(service.fakes)
    await mirrors.rank(_query(keys["p00"]))
    await _settled(mirrors)
    clock.t += mirror_module.IDLE_S - 1
    other = RankQuery("trivia#encore#alltime", RankKey(55, 1, "e5"), shards=SHARDS)
    await mirrors.rank(other)
    assert [m.board_id for m in mirrors.held()] == [BOARD.board_id, "trivia#encore#alltime"]
    clock.t += 2  # the show's mirror, unread for IDLE_S, goes at the next ask
    await mirrors.rank(other)
    await _settled(mirrors)
    assert [m.board_id for m in mirrors.held()] == ["trivia#encore#alltime"]
