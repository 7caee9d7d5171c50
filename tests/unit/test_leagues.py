"""A league's rules (decision 0040): who moves of a cohort at the close, where a tier's move
leads, and the definitions a league refuses."""

from __future__ import annotations

import pytest

from app.domain.cohorts import CohortMoves, League, LeagueRecord, Tier
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board, Period, PeriodKind
from app.services.ports import EntryState, SubmissionState
from app.services.submissions._ask import CohortGuessedWrong
from app.services.submissions._entries import entry_writes

TIERS = (Tier("bronze", promote=2), Tier("silver", promote=1, demote=2), Tier("gold", demote=1))
LEAGUE = League(TIERS)


def test_the_best_go_up_and_the_worst_go_down() -> None:
    assert LEAGUE.moves("silver", ["a", "b", "c", "d", "e"]) == CohortMoves(
        "silver", ("a",), ("d", "e")
    )


def test_the_lowest_tier_demotes_nobody_and_the_top_promotes_nobody() -> None:
    assert LEAGUE.moves("bronze", ["a", "b", "c"]) == CohortMoves("bronze", ("a", "b"), ())
    assert LEAGUE.moves("gold", ["a", "b", "c"]) == CohortMoves("gold", (), ("c",))


def test_a_cohort_smaller_than_its_places_promotes_first_and_moves_nobody_twice() -> None:
    assert LEAGUE.moves("silver", ["a", "b"]) == CohortMoves("silver", ("a",), ("b",))
    assert LEAGUE.moves("silver", ["a"]) == CohortMoves("silver", ("a",), ())
    assert LEAGUE.moves("silver", []) == CohortMoves("silver", (), ())


def test_a_move_leads_one_tier_and_never_past_the_ends() -> None:
    assert LEAGUE.after("bronze", "up") == "silver"
    assert LEAGUE.after("silver", "down") == "bronze"
    assert LEAGUE.after("gold", "up") == "gold"
    assert LEAGUE.after("bronze", "down") == "bronze"
    assert LEAGUE.after("gone", "stay") == "bronze"  # a tier no longer defined: the lowest
    moves = CohortMoves("silver", ("a",), ("b",))
    assert [moves.of(p) for p in ("a", "b", "c")] == ["up", "down", "stay"]


def _league(**fields: object) -> BoardDefinition:
    values: dict[str, object] = {
        "periods": (PeriodKind.WEEK,),
        "cohort_size": 5,
        "tiers": TIERS,
    }
    values.update(fields)
    return BoardDefinition(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"cohort_size": None}, "need cohortSize"),
        ({"periods": (PeriodKind.WEEK, PeriodKind.DAY)}, "exactly one"),
        ({"periods": (PeriodKind.ALLTIME,)}, "exactly one"),
        ({"max_entrants": 100}, "maxEntrants"),
        ({"tiers": (Tier("solo"),)}, "2 to 10 tiers"),
        ({"tiers": tuple(Tier(f"t{i}") for i in range(11))}, "2 to 10 tiers"),
        ({"tiers": (Tier("a"), Tier("a"))}, "once"),
        ({"tiers": (Tier("Gold"), Tier("b"))}, "lowercase"),
        ({"tiers": (Tier("a-b"), Tier("b"))}, "lowercase"),
        ({"tiers": (Tier("a", promote=1), Tier("b", promote=1))}, "top tier"),
        ({"tiers": (Tier("a", demote=1), Tier("b"))}, "lowest tier"),
        ({"tiers": (Tier("a", 1), Tier("b", 3, 3), Tier("c", demote=1))}, "more than"),
        ({"tiers": (Tier("a", promote=-1), Tier("b"))}, "0 or more"),
    ],
)
def test_a_league_the_rules_refuse_says_why(fields: dict[str, object], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        _league(**fields)


def test_promotion_places_may_change_under_entries_and_tier_ids_may_not() -> None:
    league = _league()
    wider = _league(tiers=(Tier("bronze", 3), Tier("silver", 1, 1), Tier("gold", demote=2)))
    renamed = _league(tiers=(Tier("bronze", 2), Tier("silver", 1, 2), Tier("platinum", demote=1)))
    assert wider.entry_changes(league) == ()
    assert renamed.entry_changes(league) == ("tiers",)


WEEK = Board("trivia", "league", Period.parse("week:2026-W49"))
LATER = LeagueRecord("silver", "trivia#league#week#2026-W50", 1_796_601_600_000, "silver-1")
"""A record of the week after WEEK (2026-W50 starts 2026-12-07)."""


def _read(record: LeagueRecord | None) -> SubmissionState:
    entry = EntryState(None, 0, {"bronze": 4, "silver": 2, "gold": 0}, record)
    return SubmissionState(
        record=None,
        rows={},
        leases={},
        erasing_until=None,
        placements={WEEK.board_id: None},
        placed={WEEK.board_id: 0},
        entries={WEEK.board_id: entry},
    )


def test_a_late_score_for_a_week_the_player_has_played_past_places_them_in_no_cohort() -> None:
    league = _league(periods=(PeriodKind.WEEK,))
    tiers = {WEEK.board_id: "bronze"}
    assert entry_writes(league, [WEEK], _read(LATER), player="p", token="t", tiers=tiers) == ()
    first = entry_writes(league, [WEEK], _read(None), player="p", token="t", tiers=tiers)
    assert [(w.placement.cohort_id, w.new) for w in first] == [("bronze-1", True)]
    assert first[0].league is not None  # the new record, put with the placement
    with pytest.raises(CohortGuessedWrong):  # no tier decided: plan again from a read
        entry_writes(league, [WEEK], _read(None), player="p", token="t", tiers={})
