"""``leaderboard serve --demo``: believable boards of every kind, loaded through the seeding path."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import UTC, datetime

import pytest

from app.bootstrap import Runtime
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition, Operator
from app.domain.keys import Order
from app.domain.periods import Board, Period, PeriodKind
from app.local.demo import (
    LAP_TIMES,
    SEASON_POINTS,
    TRIVIA_ROUNDS,
    board_rows,
    demo_players,
    demo_rounds,
    load_demo,
)
from app.settings import Settings
from tests.support import counter_total, utc_start

Scores = dict[str, int]


async def test_demo_boards_are_full_ordered_counted_and_agree_with_each_other(
    runtime: Runtime, settings: Settings
) -> None:
    s = runtime.stores
    boards = await load_demo(runtime.leaderboard, players=20)
    # trivia/alltopics and trivia/sports: all-time, day, week; kart/time-trial: all-time, week;
    # trivia/season: all-time, month.
    assert len(boards) == 10
    assert len(set(boards)) == 10
    people: dict[str, tuple[str | None, str | None]] = {}
    value: dict[tuple[str, str, str], Scores] = {}
    for board_id in boards:
        page = await runtime.stores.index.query_board(board_id, limit=50, start=None)
        keys = [entry.key.encode() for entry in page.entries]
        assert keys == sorted(keys)
        assert page.entries, board_id
        assert all(entry.display_name and entry.country for entry in page.entries)
        assert await counter_total(runtime, board_id) == (len(page.entries), len(page.entries))
        board = Board.from_id(board_id)
        value[(board.game, board.variant, board.period.kind)] = {
            e.player_id: e.score for e in page.entries
        }
        scores = [e.score for e in page.entries]
        if board.game == "kart":  # lower is better: the board reads lowest first
            assert scores == sorted(scores), board_id
        else:
            assert scores == sorted(scores, reverse=True), board_id
        for entry in page.entries:
            # The same person on every board.
            found = (entry.display_name, entry.country)
            assert people.setdefault(entry.player_id, found) == found, entry.player_id

    for variant in ("alltopics", "sports"):
        alltime, week, day = (value[("trivia", variant, k)] for k in ("alltime", "week", "day"))
        assert len(alltime) == 20
        assert set(day) <= set(week) <= set(alltime)
        for player, score in week.items():
            assert alltime[player] >= score
        for player, score in day.items():
            assert week[player] >= score
    # Everyone played both variants, with their own results in each.
    assert value[("trivia", "alltopics", "alltime")] != value[("trivia", "sports", "alltime")]

    # Lap times: an all-time best is at most the week's best.
    laps, laps_week = (
        value[("kart", "time-trial", "alltime")],
        value[("kart", "time-trial", "week")],
    )
    assert sorted(laps) == [f"demo-{i:04d}" for i in range(0, 20, 2)]  # half the roster races
    assert set(laps_week) <= set(laps)
    assert all(laps[p] <= t for p, t in laps_week.items())
    assert all(LAP_TIMES.floor <= t < 100_000 for t in laps.values())
    # Season points: an all-time total is at least the month's.
    season, month = value[("trivia", "season", "alltime")], value[("trivia", "season", "month")]
    assert sorted(season) == [f"demo-{i:04d}" for i in range(1, 20, 2)]  # the other half
    assert set(month) <= set(season)
    assert all(season[p] >= points for p, points in month.items())
    assert sum(season.values()) > sum(month.values())  # older rounds count all time only

    # Each variant is defined as its boards rank, and a variant left undefined follows the default.
    kart = await s.definitions.get_definition("kart", "time-trial")
    assert kart is not None
    assert (kart.definition.order, kart.definition.operator) == (Order.ASC, Operator.BEST)
    assert kart.definition.periods == (PeriodKind.ALLTIME, PeriodKind.WEEK)
    assert kart.definition.retention_days == settings.retention_days
    totals = await s.definitions.get_definition("trivia", "season")
    assert totals is not None
    assert (totals.definition.order, totals.definition.operator) == (Order.DESC, Operator.SUM)
    assert await s.definitions.get_definition("trivia", "alltopics") is None

    # And the registry has every board, for the closed-period snapshots.
    registered = {r.board_id for r in await runtime.stores.registry.registered_boards()}
    assert set(boards) <= registered


def test_the_roster_is_the_same_people_whatever_its_size() -> None:
    assert demo_players(30)[:10] == demo_players(10)


NOWS = pytest.mark.parametrize(
    "now",
    [
        datetime(2026, 12, 3, 15, 30, tzinfo=UTC),
        datetime(2026, 11, 30, 0, 0, 2, tzinfo=UTC),
        datetime(2026, 12, 1, 0, 0, 2, tzinfo=UTC),
    ],
    ids=["a Thursday afternoon", "two seconds into a Monday", "two seconds into a month"],
)


def _parsed(text: str) -> Scores:
    return {line.split(",")[0]: int(line.split(",")[1]) for line in text.splitlines()[1:]}


def _board(kind: PeriodKind, now: datetime) -> Board:
    return Board("g", "v", Period.containing(kind, now))


@NOWS
def test_each_board_holds_the_best_round_of_its_own_period(now: datetime) -> None:
    players = demo_players(40)
    rounds = demo_rounds(random.Random(1), players, now=now, play=TRIVIA_ROUNDS)
    kinds = (PeriodKind.ALLTIME, PeriodKind.WEEK, PeriodKind.DAY)
    rows = {kind: board_rows(rounds, _board(kind, now), BoardDefinition()) for kind in kinds}
    parsed = {kind: _parsed(text) for kind, text in rows.items()}
    alltime, week, day = parsed[PeriodKind.ALLTIME], parsed[PeriodKind.WEEK], parsed[PeriodKind.DAY]
    assert len(alltime) == 40
    assert day, "someone is always on today's board"
    assert set(day) <= set(week) <= set(alltime)
    assert all(alltime[p] >= s for p, s in week.items())
    assert all(week[p] >= s for p, s in day.items())
    if now.weekday() != 0:  # on a Monday the week so far is today
        assert len(day) < len(week) < len(alltime)
        assert len(set(rows.values())) == 3  # not copies of one another


@NOWS
def test_an_ascending_board_holds_the_lowest_time_of_its_own_period(now: datetime) -> None:
    definition = BoardDefinition(order=Order.ASC, periods=(PeriodKind.ALLTIME, PeriodKind.WEEK))
    players = demo_players(40)
    rounds = demo_rounds(random.Random(1), players, now=now, play=LAP_TIMES)
    laps = _parsed(board_rows(rounds, _board(PeriodKind.ALLTIME, now), definition))
    week = _parsed(board_rows(rounds, _board(PeriodKind.WEEK, now), definition))
    fastest: Scores = {}
    for played in rounds:
        player_id = played.player.player_id
        fastest[player_id] = min(played.score, fastest.get(player_id, played.score))
    assert laps == fastest  # the lowest, not the highest
    assert week
    assert set(week) <= set(laps)
    assert all(laps[p] <= t for p, t in week.items())
    assert any(laps[p] < t for p, t in week.items())  # an older round was faster for someone


@NOWS
def test_a_sum_board_holds_the_total_of_its_own_period(now: datetime) -> None:
    definition = BoardDefinition(
        operator=Operator.SUM, periods=(PeriodKind.ALLTIME, PeriodKind.MONTH)
    )
    players = demo_players(40)
    rounds = demo_rounds(random.Random(1), players, now=now, play=SEASON_POINTS)
    month_board = _board(PeriodKind.MONTH, now)
    season = board_rows(rounds, _board(PeriodKind.ALLTIME, now), definition)
    month = _parsed(board_rows(rounds, month_board, definition))
    totals: Scores = defaultdict(int)
    month_totals: Scores = defaultdict(int)
    last: dict[str, int] = {}
    start = to_ms(utc_start(month_board))
    for played in sorted(rounds, key=lambda r: r.achieved_ms):
        player_id = played.player.player_id
        totals[player_id] += played.score
        if played.score > 0 or player_id not in last:  # a round of no points adds nothing
            last[player_id] = played.achieved_ms
        if played.achieved_ms >= start:
            month_totals[player_id] += played.score
    assert _parsed(season) == totals
    assert month == month_totals
    assert month, "someone is always on this month's board"
    assert all(totals[p] >= points for p, points in month.items())
    # A total's time is that of the round that made it: the player's last one that scored.
    for line in season.splitlines()[1:]:
        player_id, _score, achieved = line.split(",")[:3]
        assert achieved == iso_ms(last[player_id])
