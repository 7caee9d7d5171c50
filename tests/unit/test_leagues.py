"""A league's rules (decision 0040): who moves of a cohort at the close, where a tier's move
leads, and the definitions a league refuses."""

from __future__ import annotations

import pytest

from app.domain.cohorts import CohortMoves, League, Tier
from app.domain.definitions import BoardDefinition
from app.domain.periods import PeriodKind

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
