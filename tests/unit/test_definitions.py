"""What one submission does to a player's place, by the board's definition (``move``), and what a
definition accepts."""

from __future__ import annotations

import pytest

from app.domain.definitions import BoardDefinition, Operator, TotalTooLarge, move
from app.domain.keys import SCORE_CEILING, Order, RankKey
from app.domain.periods import PeriodKind


def _key(score: int, ms: int, order: Order = Order.DESC) -> RankKey:
    return RankKey(score, ms, "ann", order)


@pytest.mark.parametrize(
    ("order", "score", "changed"),
    [(Order.DESC, 11, True), (Order.DESC, 9, False), (Order.ASC, 9, True), (Order.ASC, 11, False)],
)
def test_best_keeps_the_better_score_by_the_order(order: Order, score: int, changed: bool) -> None:
    definition = BoardDefinition(order=order)
    moved = move(definition, _key(10, 5, order), score=score, achieved_at_ms=6, player_id="ann")
    assert moved.changed is changed
    assert moved.key == (_key(score, 6, order) if changed else _key(10, 5, order))


def test_an_equal_best_later_changes_nothing() -> None:
    moved = move(BoardDefinition(), _key(10, 5), score=10, achieved_at_ms=9, player_id="ann")
    assert (moved.changed, moved.key) == (False, _key(10, 5))


def test_latest_replaces_up_or_down_only_when_later() -> None:
    definition = BoardDefinition(operator=Operator.LATEST)
    fell = move(definition, _key(10, 5), score=3, achieved_at_ms=6, player_id="ann")
    assert (fell.changed, fell.key) == (True, _key(3, 6))
    older = move(definition, _key(10, 5), score=99, achieved_at_ms=4, player_id="ann")
    assert (older.changed, older.key) == (False, _key(10, 5))


def test_sum_adds_and_its_time_never_goes_back() -> None:
    definition = BoardDefinition(operator=Operator.SUM)
    added = move(definition, _key(10, 5), score=4, achieved_at_ms=9, player_id="ann")
    assert (added.changed, added.key) == (True, _key(14, 9))
    early = move(definition, _key(10, 5), score=4, achieved_at_ms=2, player_id="ann")
    assert early.key == _key(14, 5)  # an earlier increment arriving late is not "first"
    nothing = move(definition, _key(10, 5), score=0, achieved_at_ms=9, player_id="ann")
    assert (nothing.changed, nothing.key) == (False, _key(10, 5))
    with pytest.raises(TotalTooLarge):
        move(definition, _key(SCORE_CEILING - 5, 5), score=5, achieved_at_ms=9, player_id="ann")
    ceiling = move(definition, _key(SCORE_CEILING - 5, 5), score=4, achieved_at_ms=9, player_id="a")
    assert ceiling.key.score == SCORE_CEILING - 1


def test_a_first_submission_puts_the_player_on_whatever_the_operator() -> None:
    for operator in Operator:
        moved = move(
            BoardDefinition(operator=operator), None, score=7, achieved_at_ms=1, player_id="ann"
        )
        assert (moved.changed, moved.previous, moved.key) == (True, None, _key(7, 1))


@pytest.mark.parametrize(
    "fields",
    [
        {"periods": ()},
        {"periods": (PeriodKind.DAY, PeriodKind.DAY)},
        {"retention_days": 0},
        {"retention_days": 3651},
        {"shards": 0},
        {"shards": 3},
        {"shards": 128},
    ],
)
def test_a_definition_refuses_what_the_contract_does(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=r"\S"):
        BoardDefinition(**fields)  # type: ignore[arg-type]


def test_the_contract_spells_every_member_of_the_enums() -> None:
    from typing import get_args

    from app.api.schemas.variants import (
        OperatorName,
        OrderName,
        PeriodName,
        ScoreFormatName,
        ShardCount,
    )
    from app.domain.definitions import ScoreFormat
    from app.domain.keys import Order
    from app.domain.periods import PeriodKind
    from app.domain.shards import SHARD_COUNTS

    assert set(get_args(OperatorName)) == {o.value for o in Operator}
    assert set(get_args(OrderName)) == {o.value for o in Order}
    assert set(get_args(PeriodName)) == {k.value for k in PeriodKind}
    assert set(get_args(ScoreFormatName)) == {f.value for f in ScoreFormat}
    assert get_args(ShardCount) == SHARD_COUNTS


@pytest.mark.parametrize(
    ("fields", "fixed"),
    [
        ({}, ()),
        ({"periods": (PeriodKind.ALLTIME,), "retention_days": 90}, ()),
        ({"order": Order.ASC}, ("order",)),
        ({"operator": Operator.SUM}, ("operator",)),
        ({"shards": 16}, ("shards",)),
        (
            {"order": Order.ASC, "operator": Operator.LATEST, "shards": 2},
            ("order", "operator", "shards"),
        ),
    ],
)
def test_what_boards_holding_entries_cannot_take_is_the_order_operator_and_shards(
    fields: dict[str, object], fixed: tuple[str, ...]
) -> None:
    wanted = BoardDefinition(**fields)  # type: ignore[arg-type]
    assert wanted.fixed_changes(BoardDefinition()) == fixed
    assert BoardDefinition().fixed_changes(wanted) == fixed
