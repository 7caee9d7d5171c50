"""``leaderboard serve --demo``: believable boards, loaded through the seeding path."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from app.bootstrap import Runtime
from app.domain.periods import Board, Period, PeriodKind
from app.services.demo import board_rows, demo_players, demo_rounds, load_demo
from app.services.seeding import SeedPorts
from app.settings import Settings
from tests.support import counter_total


async def test_demo_boards_are_full_ordered_counted_and_agree_with_each_other(
    runtime: Runtime, settings: Settings
) -> None:
    s = runtime.stores
    ports = SeedPorts(s.standings, s.index, s.counters, s.leases, s.registry)
    boards = await load_demo(ports=ports, definitions=runtime.definitions, players=20)
    assert len(boards) == 6
    people: dict[str, tuple[str | None, str | None]] = {}
    best: dict[tuple[str, str], dict[str, int]] = {}
    for board_id in boards:
        page = await runtime.stores.index.query_board(board_id, limit=50, start=None)
        keys = [entry.key.encode() for entry in page.entries]
        assert keys == sorted(keys)
        assert page.entries, board_id
        assert all(entry.display_name and entry.country for entry in page.entries)
        assert await counter_total(runtime, board_id) == (len(page.entries), len(page.entries))
        board = Board.from_id(board_id)
        best[(board.variant, board.period.kind)] = {e.player_id: e.score for e in page.entries}
        for entry in page.entries:
            # The same person on every board.
            found = (entry.display_name, entry.country)
            assert people.setdefault(entry.player_id, found) == found, entry.player_id
    for variant in ("alltopics", "sports"):
        alltime, week, day = (best[(variant, kind)] for kind in ("alltime", "week", "day"))
        assert len(alltime) == 20
        assert set(day) <= set(week) <= set(alltime)
        for player, score in week.items():
            assert alltime[player] >= score
        for player, score in day.items():
            assert week[player] >= score
    # Everyone played both variants, with their own results in each.
    assert best[("alltopics", "alltime")] != best[("sports", "alltime")]
    # And the registry has every board, for the closed-period snapshots.
    registered = {r.board_id for r in await runtime.stores.registry.registered_boards()}
    assert set(boards) <= registered


def test_the_roster_is_the_same_people_whatever_its_size() -> None:
    assert demo_players(30)[:10] == demo_players(10)


@pytest.mark.parametrize(
    "now",
    [datetime(2026, 12, 3, 15, 30, tzinfo=UTC), datetime(2026, 11, 30, 0, 0, 2, tzinfo=UTC)],
    ids=["a Thursday afternoon", "two seconds into a Monday"],
)
def test_each_board_holds_the_best_round_of_its_own_period(now: datetime) -> None:
    players = demo_players(40)
    rounds = demo_rounds(random.Random(1), players, now=now)
    rows = {
        kind: board_rows(rounds, Board("trivia", "alltopics", Period.containing(kind, now)))
        for kind in (PeriodKind.ALLTIME, PeriodKind.WEEK, PeriodKind.DAY)
    }
    parsed = {
        kind: {line.split(",")[0]: int(line.split(",")[1]) for line in text.splitlines()[1:]}
        for kind, text in rows.items()
    }
    alltime, week, day = parsed[PeriodKind.ALLTIME], parsed[PeriodKind.WEEK], parsed[PeriodKind.DAY]
    assert len(alltime) == 40
    assert day, "someone is always on today's board"
    assert set(day) <= set(week) <= set(alltime)
    assert all(alltime[p] >= s for p, s in week.items())
    assert all(week[p] >= s for p, s in day.items())
    if now.weekday() != 0:  # on a Monday the week so far is today
        assert len(day) < len(week) < len(alltime)
        assert len(set(rows.values())) == 3  # not copies of one another
