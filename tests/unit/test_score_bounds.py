"""A variant's score bounds (``scoreMin``, ``scoreMax``; docs/boards.md): what a definition takes,
which scores a submission may carry (inclusive at both ends), the refusal that says the bounds and
the score, what a seed row may set (for ``sum``, a total), and the definition's body as the API
and the command take it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from app.api.schemas import BoardDefinitionIn
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition, Operator
from app.domain.keys import SCORE_CEILING
from app.domain.periods import Board
from app.domain.seed_file import parse_seed_text
from app.domain.submission import Submission
from app.errors import InvalidInput, ScoreOutOfBounds
from app.services.submissions._plan import check_bounds

NOW = datetime(2026, 12, 6, 12, tzinfo=UTC)
BOARD = Board.from_id("trivia#classic#alltime")
BOUNDED = BoardDefinition(score_min=10, score_max=5000)


@pytest.mark.parametrize(
    "bounds",
    [
        {"score_min": -1},
        {"score_max": -1},
        {"score_min": SCORE_CEILING},
        {"score_max": SCORE_CEILING},
        {"score_min": True},
        {"score_min": 11, "score_max": 10},
    ],
)
def test_a_definition_refuses_bounds_outside_the_range_or_crossed(bounds: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"score(Min|Max)"):
        BoardDefinition(**bounds)


def test_bounds_may_be_one_score_or_the_whole_range() -> None:
    one = BoardDefinition(score_min=7, score_max=7)
    assert [one.within_bounds(s) for s in (6, 7, 8)] == [False, True, False]
    whole = BoardDefinition(score_min=0, score_max=SCORE_CEILING - 1)
    assert [whole.within_bounds(s) for s in (0, SCORE_CEILING - 1)] == [True, True]
    assert (whole.bounded, BoardDefinition().bounded) == (True, False)


@pytest.mark.parametrize(
    ("definition", "inside", "outside", "words"),
    [
        (BOUNDED, (10, 11, 4999, 5000), (0, 9, 5001), "from 10 to 5000"),
        (BoardDefinition(score_min=10), (10, SCORE_CEILING - 1), (0, 9), "at least 10"),
        (BoardDefinition(score_max=5000), (0, 5000), (5001,), "at most 5000"),
        (BoardDefinition(score_min=0), (0,), (), "at least 0"),
    ],
)
def test_the_bounds_hold_each_end_inclusive(
    definition: BoardDefinition, inside: tuple[int, ...], outside: tuple[int, ...], words: str
) -> None:
    assert [definition.within_bounds(s) for s in inside] == [True] * len(inside)
    assert [definition.within_bounds(s) for s in outside] == [False] * len(outside)
    assert definition.bounds_words == words


def _submission(score: int) -> Submission:
    return Submission(player_id="ann", score=score, game="trivia", variant="classic")


@pytest.mark.parametrize("score", [10, 5000])
def test_a_submission_at_a_bound_passes(score: int) -> None:
    check_bounds(_submission(score), BOUNDED)  # raises nothing


@pytest.mark.parametrize("score", [9, 5001])
def test_a_submission_past_a_bound_is_refused_with_the_bounds_and_the_score(score: int) -> None:
    with pytest.raises(ScoreOutOfBounds) as refused:
        check_bounds(_submission(score), BOUNDED)
    problem = refused.value.problem()
    assert (problem["status"], problem["type"]) == (422, "/problems/score-out-of-bounds")
    assert f"score {score} " in problem["detail"]
    assert "trivia/classic" in problem["detail"]
    assert "scoreMin 10, scoreMax 5000" in problem["detail"]
    assert problem["errors"] == [
        {"field": "score", "message": f"must be from 10 to 5000, got {score}"}
    ]


def test_one_bound_alone_names_only_itself() -> None:
    with pytest.raises(ScoreOutOfBounds, match=r"at most 50 \(scoreMax 50\);"):
        check_bounds(_submission(51), BoardDefinition(score_max=50))


def _seed(rows: list[tuple[str, int]], definition: BoardDefinition) -> list[tuple[str, int]]:
    at = iso_ms(to_ms(NOW) - 60_000)
    text = "playerId,score,achievedAt\n" + "".join(f"{p},{s},{at}\n" for p, s in rows)
    seed = parse_seed_text(text, board=BOARD, now=NOW, definition=definition)
    return [(row.player_id, row.score) for row in seed.rows]


def test_a_seed_row_outside_the_bounds_is_a_bad_line_and_nothing_is_kept() -> None:
    assert _seed([("a", 10), ("b", 5000)], BOUNDED) == [("a", 10), ("b", 5000)]
    with pytest.raises(InvalidInput) as refused:
        _seed([("a", 10), ("b", 9), ("c", 5001)], BOUNDED)
    assert "nothing was written" in refused.value.detail
    assert refused.value.errors == [
        {
            "line": line,
            "field": "score",
            "message": f"{score} is outside the variant's bounds: from 10 to 5000 "
            "(scoreMin 10, scoreMax 5000)",
        }
        for line, score in ((3, 9), (4, 5001))
    ]


def test_a_sum_board_s_seed_row_is_a_total_which_may_pass_the_max_but_not_the_min() -> None:
    summed = BoardDefinition(operator=Operator.SUM, score_min=10, score_max=100)
    assert (summed.may_hold(10_000), summed.may_hold(9)) == (True, False)
    assert _seed([("a", 10_000)], summed) == [("a", 10_000)]
    with pytest.raises(InvalidInput) as refused:
        _seed([("a", 9)], summed)
    assert refused.value.errors[0]["message"] == (
        "9 is outside the variant's bounds: a total of at least 10 (scoreMin)"
    )


def test_the_body_takes_bounds_as_scores_and_names_a_max_below_the_min() -> None:
    body = BoardDefinitionIn.model_validate({"scoreMin": 10, "scoreMax": 10.0})
    assert body.definition(retention_days=30) == BoardDefinition(score_min=10, score_max=10)
    assert BoardDefinitionIn.model_validate({}).definition(retention_days=30) == BoardDefinition()
    with pytest.raises(ValidationError) as crossed:
        BoardDefinitionIn.model_validate({"scoreMin": 11, "scoreMax": 10})
    assert [(e["loc"], e["msg"]) for e in crossed.value.errors()] == [
        (("scoreMax",), "Value error, must be at least scoreMin (11), got 10")
    ]
    for bad in (-1, SCORE_CEILING, 1.5, "10", True):
        with pytest.raises(ValidationError):
            BoardDefinitionIn.model_validate({"scoreMax": bad})
