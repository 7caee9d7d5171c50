"""What a submission writes of a player's place (decision 0039), from what it read: a new
placement at the seat read (its first attempt), or one more attempt; refusals before anything."""

from __future__ import annotations

import pytest

from app.domain.cohorts import Placement
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board, Period, PeriodKind
from app.errors import AttemptsExhausted, EntrantsFull, NotJoined
from app.services.ports import SubmissionState
from app.services.submissions._entries import entry_writes

BOARD = Board("trivia", "cup", Period(PeriodKind.ALLTIME))
ID = BOARD.board_id


def state(placement: Placement | None = None, placed: int = 0) -> SubmissionState:
    return SubmissionState(
        record=None,
        rows={},
        leases={},
        erasing_until=None,
        placements={ID: placement},
        placed={ID: placed},
    )


def writes(definition: BoardDefinition, read: SubmissionState) -> list[tuple[Placement, bool]]:
    found = entry_writes(definition, [BOARD], read, player="ann", token="t")
    return [(w.placement, w.new) for w in found]


def test_an_ordinary_variant_writes_no_place() -> None:
    assert writes(BoardDefinition(), state()) == []


def test_a_first_submission_takes_the_next_seat_as_its_first_attempt() -> None:
    assert writes(BoardDefinition(cohort_size=5), state(placed=12)) == [
        (Placement("ann", ID, 12, "3", attempts=1, token="t"), True)
    ]


def test_a_later_submission_is_one_more_attempt() -> None:
    placed = Placement("ann", ID, 4, "1", attempts=2, token="x")
    assert writes(BoardDefinition(cohort_size=5, max_attempts=3), state(placed)) == [
        (Placement("ann", ID, 4, "1", attempts=3, token="x"), False)
    ]


def test_past_max_attempts_is_refused() -> None:
    placed = Placement("ann", ID, 4, "1", attempts=3)
    with pytest.raises(AttemptsExhausted, match="maxAttempts"):
        writes(BoardDefinition(max_attempts=3), state(placed))


def test_a_player_not_joined_is_refused_where_joins_are_required() -> None:
    with pytest.raises(NotJoined, match="joinRequired"):
        writes(BoardDefinition(join_required=True), state())


def test_a_new_player_on_a_full_board_is_refused() -> None:
    with pytest.raises(EntrantsFull, match="maxEntrants"):
        writes(BoardDefinition(max_entrants=10), state(placed=10))
    assert writes(BoardDefinition(max_entrants=10), state(placed=9))[0][0].seat == 9
