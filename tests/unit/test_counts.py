"""The reconciler's comparison, on counts given by hand."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.domain.counts import CounterCell, CounterDifference, compare_counts


@dataclass
class Count:
    coarse: dict[int, int] = field(default_factory=dict)
    fine: dict[tuple[int, int], int] = field(default_factory=dict)


def test_a_counter_differs_only_where_both_passes_agree() -> None:
    first = Count({1: 3, 2: 1}, {(1, 0): 2, (1, 5): 1, (2, 9): 1})
    second = Count({1: 3, 2: 2}, {(1, 0): 2, (1, 5): 1, (2, 9): 2})
    differences, unsettled = compare_counts(
        first,
        second,
        stored_coarse={1: 4, 2: 7, 3: 1},
        stored_fine={(1, 0): 2, (1, 5): 0, (4, 4): 2},
    )
    assert differences == [
        CounterDifference(CounterCell(1), stored=4, counted=3),
        CounterDifference(CounterCell(1, 5), stored=0, counted=1),
        CounterDifference(CounterCell(3), stored=1, counted=0),  # a ghost: none counted
        CounterDifference(CounterCell(4, 4), stored=2, counted=0),
    ]
    # The board changed between the passes there: not compared.
    assert unsettled == [CounterCell(2), CounterCell(2, 9)]


def test_counters_that_match_the_count_give_no_differences() -> None:
    count = Count({0: 2}, {(0, 1): 2})
    assert compare_counts(count, count, stored_coarse={0: 2}, stored_fine={(0, 1): 2}) == ([], [])
