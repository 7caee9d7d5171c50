"""The benchmark harness's pieces that need no backend: the unit arithmetic holds on known items,
round trips are counted as the longest chain of calls, the earlier Lambda design's arithmetic gives
its 29 write units, the plots and the CPU figures render. The full run is ``python -m bench`` (docs/benchmarks.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.harness import ab, calls, overhead, plots, report, session, units
from bench.harness.trace import Call, round_trip_levels


def test_item_sizes_follow_dynamodbs_rules() -> None:
    # Names count; a String is its UTF-8 bytes; a Number 1 byte per two significant digits + 1.
    item = {"playerId": {"S": "ada"}, "n": {"N": "12345"}, "é": {"S": "ü"}}
    assert units.item_size(item) == (8 + 3) + (1 + 4) + (2 + 2)
    assert units.number_size("1000") == 2  # trailing zeros trimmed: "1"
    assert units.number_size("-0.00120") == 2  # "12"
    assert units.value_size({"M": {"a": {"N": "1"}}}) == 3 + (1 + 2 + 1)
    assert units.value_size({"L": [{"S": "xy"}, {"BOOL": True}]}) == 3 + (2 + 1) + (1 + 1)


def test_write_units_standard_transactional_and_index() -> None:
    row = {
        "playerId": {"S": "ada"},
        "leaderboardId": {"S": "trivia#classic#alltime"},
        "rankKey": {"S": "0999999995000#1790000000000#ada"},
        "lastPlayedAt": {"S": "2026-12-01T00:00:00.000Z"},
    }
    moved = {**row, "rankKey": {"S": "0999999994000#1790000000000#ada"}}
    big = {**row, "context": {"S": "x" * 1500}}
    assert units.item_write_units(None, row, transactional=False) == units.WriteUnits(1, 1)
    assert units.item_write_units(None, row, transactional=True) == units.WriteUnits(2, 1)
    assert units.item_write_units(row, moved, transactional=True) == units.WriteUnits(2, 2)
    assert units.item_write_units(row, dict(row), transactional=True) == units.WriteUnits(2, 0)
    # lastPlayedAt is the row's alone: a play that moves nothing writes no index entry.
    played = {**row, "lastPlayedAt": {"S": "2026-12-02T00:00:00.000Z"}}
    assert units.item_write_units(row, played, transactional=True) == units.WriteUnits(2, 0)
    shown = {**row, "metadata": {"S": '{"car":"mk2"}'}}
    assert units.item_write_units(row, shown, transactional=True) == units.WriteUnits(2, 1)
    assert units.item_write_units(row, big, transactional=True).table == 4  # 2 KB, in a transaction
    assert units.item_write_units(None, None, transactional=True, checked_only=True).table == 2
    counter = {"playerId": {"S": "hist#b#c0"}, "leaderboardId": {"S": "0039"}, "n": {"N": "1"}}
    assert units.item_write_units(None, counter, transactional=True) == units.WriteUnits(2, 0)


def test_read_units_round_per_query_and_per_batch_item() -> None:
    entry = {"leaderboardId": {"S": "b"}, "rankKey": {"S": "k" * 163}}  # 13 + 1 + 7 + 163
    assert units.item_size(entry) == 184
    # 24 entries = 4,416 B: two 4 KB blocks; eventually consistent half a unit each.
    assert units.query_units([entry] * 24, consistent=False) == 1.0
    assert units.query_units([], consistent=False) == 0.5  # an empty Query costs the minimum
    assert units.batch_get_units([entry, entry], 3, consistent=True) == 5.0


def _call(seq: int, start: float, end: float) -> Call:
    return Call(seq, "GetItem", {}, start, None, end=end)


def test_round_trips_are_the_longest_chain_of_calls_that_do_not_overlap() -> None:
    # a; then b and c together; then d after both; e overlapping d.
    traced = [
        _call(0, 0, 1),
        _call(1, 1.1, 2),
        _call(2, 1.2, 2.5),
        _call(3, 2.6, 3),
        _call(4, 2.7, 3),
    ]
    assert round_trip_levels(traced) == [1, 2, 2, 3, 3]
    assert round_trip_levels([_call(0, 0, 1), _call(1, 0.5, 1.5)]) == [1, 1]


def test_the_seeds_new_player_costs_their_29_write_units() -> None:
    """The earlier Lambda design's new player costs its 29 write units."""
    assert session.seeds_write_units() == 29
    # Past the top 2,000 its rank read is a 2,000-entry COUNT and its counter row.
    assert session.seeds_rank_units(5_000, 1_513) == pytest.approx(42.0)


def test_the_plots_render(tmp_path: Path) -> None:
    scenario = calls.Scenario("new player", 200)
    results: dict[str, Any] = {"calls": [scenario.summary()]}
    assert plots.all_plots(results, tmp_path) == ["calls.png", "timeline-new-player.png"]


def test_the_cpu_part_compares_only_requests_where_the_service_made_the_replayed_calls() -> None:
    samples = [
        ("top page", "measured-a", 0.004, 0.003),
        ("top page", "measured-b", 0.009, 0.003),  # the service re-read the player count
        ("rank read", "measured-c", 0.008, 0.006),
    ]
    planned = {"measured-a": 1, "measured-b": 1, "measured-c": 5}
    made = {"measured-a": 1, "measured-b": 3, "measured-c": 5}
    page, rank = overhead._compared(samples, planned, made, errors=0)
    assert (page.operation, page.requests, page.left_out) == ("top page", 1, 1)
    assert page.service_cpu_ms == pytest.approx(4.0)
    assert page.bare_cpu_ms == pytest.approx(3.0)
    assert (rank.requests, rank.left_out, rank.calls_per_request) == (1, 0, 5)
    (none,) = overhead._compared(samples[1:2], planned, made, errors=0)
    assert (none.requests, none.left_out, none.summary()["ratio"]) == (0, 1, None)
    rows = report.overhead_table({"overhead": [page.summary(), none.summary()]})
    assert rows[2].startswith("| top page | 1 (1) |")
    assert "| 1.33x |" in rows[2]
    assert rows[3].startswith("| top page | 0 (1) |")
    assert "| - |" in rows[3]


def test_the_cpu_ratio_comes_with_its_interval_and_says_which_side_of_the_target_it_is() -> None:
    steady = [(0.0011 * k, 0.001 * k) for k in range(1, 41)]  # every request at 1.1
    assert overhead.ratio_interval(steady) == pytest.approx((1.1, 1.1))
    spread = [(0.0010, 0.001), (0.0014, 0.001)] * 20  # requests at 1.0 and 1.4: 1.2 in all
    low, high = overhead.ratio_interval(spread) or (0.0, 0.0)
    assert low < 1.2 < high
    assert overhead.ratio_interval(spread) == (low, high)  # seeded: the same every run
    assert overhead.ratio_interval(steady[:1]) is None

    def figure_of(pairs: list[tuple[float, float]]) -> overhead.Overhead:
        samples = [("rank read", f"measured-{i}", s, b) for i, (s, b) in enumerate(pairs)]
        planned = {f"measured-{i}": 5 for i in range(len(pairs))}
        (figure,) = overhead._compared(samples, planned, planned, errors=0)
        return figure

    over = [(0.0013 * k, 0.001 * k) for k in range(1, 41)]
    verdicts = [figure_of(pairs).verdict for pairs in (steady, spread, over)]
    assert verdicts == ["met", "on the line", "not met"]
    (row,) = report.overhead_table({"overhead": [figure_of(spread).summary()]})[2:]
    assert f"| 1.20x | {low:.2f}-{high:.2f} | on the line |" in row


def test_the_floor_says_the_least_ratio_a_one_call_request_can_reach() -> None:
    floor = overhead.Floor(requests=10, bare_call_ms=3.0, service_ms=1.5, stack_ms=0.9)
    assert floor.least_ratio(floor.stack_ms) == pytest.approx(1.3)
    rows = report.floor_table({"overhead_floor": floor.summary()})
    assert rows[2].startswith("| the bare script's one Query")
    assert "| 0.90 | 1.30x |" in rows[3]
    assert "| 1.50 | 1.50x |" in rows[4]
    none = overhead.Floor(requests=0, bare_call_ms=0.0, service_ms=0.0, stack_ms=0.0)
    assert none.summary()["least_one_call_ratio_stack"] is None
    assert report.floor_table({"overhead_floor": none.summary()})[3].endswith("| - |")
    # No top page made one call (every one read the player count): no floor, not a failed part.
    nobody: Any = None
    assert overhead._floor(nobody, 0, nobody, [], Path("."), n=10, warm=1).requests == 0


def test_the_ab_comparison_refuses_an_operation_it_does_not_know() -> None:
    with pytest.raises(SystemExit):
        ab.main(["--operations", "around,leaderboard"])
