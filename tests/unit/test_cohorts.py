"""Cohorts' arithmetic and ids (decision 0039): seats handed out densely make cohorts of at most
their size, all full but the last; a cohort's board id round-trips and begins no other key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain import storage_keys as scheme
from app.domain.cohorts import Seating, cohort_of_seat, cohort_sizes
from app.domain.periods import Board, Period, PeriodKind
from app.domain.shards import board_of_partition, is_shard_partition, partition_ids

BOARDS = [
    Board("trivia", "cup", Period(PeriodKind.ALLTIME)),
    Board("trivia", "cup", Period(PeriodKind.DAY, "2026-12-06")),
    Board("trivia", "cup", Period(PeriodKind.WEEK, "2026-W49")),
    Board("trivia", "cup", Period(PeriodKind.MONTH, "2026-12")),
    Board("trivia", "cup", Period(PeriodKind.SEASON, "s1")),
]


def test_the_first_seats_fill_cohort_one_then_two() -> None:
    assert [cohort_of_seat(seat, 3) for seat in range(7)] == ["1", "1", "1", "2", "2", "2", "3"]


@given(st.integers(0, 10**6), st.integers(2, 1000))
def test_no_cohort_over_its_size_and_all_but_the_last_full(placed: int, size: int) -> None:
    sizes = cohort_sizes(placed, size)
    assert sum(sizes) == placed
    assert all(s == size for s in sizes[:-1])
    assert all(1 <= s <= size for s in sizes)
    if placed:
        assert cohort_of_seat(placed - 1, size) == str(len(sizes))


def test_ten_thousand_seats_make_two_hundred_full_cohorts_of_fifty() -> None:
    seats = [cohort_of_seat(seat, 50) for seat in range(10_000)]
    counts = {cohort: seats.count(cohort) for cohort in set(seats)}
    assert len(counts) == 200
    assert set(counts.values()) == {50}


def test_seating_is_full_at_max_entrants_only() -> None:
    seating = Seating(cohort_size=7, max_entrants=10)
    assert not seating.full(9)
    assert seating.full(10)
    assert not Seating(cohort_size=7, max_entrants=None).full(10**7)
    assert seating.placement("ann", "b", 7).cohort_id == "2"
    assert Seating(cohort_size=None, max_entrants=10).placement("ann", "b", 7).cohort_id is None


@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.board_id)
def test_a_cohort_board_id_round_trips(board: Board) -> None:
    cohort = board.in_cohort("12")
    assert cohort.board_id == f"{board.board_id}#~12"
    assert Board.from_id(cohort.board_id) == cohort
    assert cohort.whole == board
    assert Board.from_id(board.board_id) == board


@pytest.mark.parametrize("board", BOARDS, ids=lambda b: b.board_id)
def test_a_cohort_board_id_begins_no_key_of_its_board(board: Board) -> None:
    cohort_id = board.in_cohort("3").board_id
    whole = board.board_id
    derived = [
        *partition_ids(whole, 4),
        scheme.coarse_pk(whole, 0),
        scheme.fine_pk(whole, 3),
        scheme.tie_pk(whole, 3, 1),
        scheme.lease_pk(whole),
        scheme.placement_sk(whole),
        scheme.placed_pk(whole),
    ]
    assert not any(cohort_id.startswith(key) or key.startswith(cohort_id) for key in derived)
    assert not is_shard_partition(cohort_id)
    assert board_of_partition(cohort_id) == cohort_id
    # The counters of the cohort begin with the cohort's id, never with a shard's or a counter's.
    assert not scheme.coarse_pk(cohort_id, 0).startswith(scheme.coarse_pk(whole, 0))


@pytest.mark.parametrize("bad", ["0", "01", "", "a", "-1", "1#2", "1234567890"])
def test_a_malformed_cohort_id_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="cohort"):
        BOARDS[0].in_cohort(bad)
    with pytest.raises(ValueError, match=r"cohort|board"):
        Board.from_id(f"{BOARDS[0].board_id}#~{bad}")
