"""A cohort's id names its league tier, where it has one (``gold-3``): the rank read on a cohort
variant answers the tier from the cohort row's board id, with no placement read."""

from __future__ import annotations

import pytest

from app.domain.periods import Board, Period, PeriodKind, tier_of_cohort

BOARD = Board("trivia", "cup", Period(PeriodKind.ALLTIME))


@pytest.mark.parametrize(
    ("cohort_id", "tier"), [("3", None), ("12", None), ("gold-3", "gold"), ("gold_2-41", "gold_2")]
)
def test_a_cohort_id_names_its_tier_in_a_league_only(cohort_id: str, tier: str | None) -> None:
    assert tier_of_cohort(cohort_id) == tier
    cohort = Board.from_id(BOARD.in_cohort(cohort_id).board_id).cohort
    assert cohort is not None
    assert tier_of_cohort(cohort) == tier
