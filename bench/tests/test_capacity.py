"""The capacity model charges the service's own transaction: the keys it names are the ones the
write path plans, and the figures follow from DynamoDB's 1,000 write units a partition."""

from __future__ import annotations

from app.bootstrap import LAYOUT
from app.domain.storage_keys import fine_pk
from bench import capacity


def by_name() -> dict[str, capacity.Scenario]:
    return {scenario.name: scenario for scenario in capacity.scenarios()}


def test_a_new_player_is_bound_by_its_slots_fine_counter_before_the_index() -> None:
    new = by_name()["new player"]
    board = capacity.BOARD.board_id
    fine = fine_pk(board, LAYOUT.fine_of(capacity.SCORE)[0])
    assert new.hottest == (fine, 2.0)  # one transactional counter update: 2 units
    assert new.by_partition()[f"RankIndex {board}"] == 1.0
    assert round(new.per_second) == 500
    assert new.index_per_second == 1_000
    # The row and the idempotency record are the player's own: no bound on the board.
    assert {c.what for c in new.charges if not c.shared} == {"row", "idempotency record"}


def test_an_improvement_writes_two_fine_counters_and_moves_its_index_entry() -> None:
    improved = by_name()["improvement to the next slot"]
    assert improved.hottest[1] == 4.0
    assert round(improved.per_second) == 250
    assert improved.index_per_second == 500  # a moved key: the old entry deleted, the new put


def test_a_crowded_slot_s_tie_counters_bind_new_players_harder() -> None:
    crowded = by_name()["new player, crowded slot (tie counters)"]
    assert "#t" in crowded.hottest[0]
    assert crowded.per_second < by_name()["new player"].per_second


def test_a_round_that_moves_nothing_writes_nothing_the_board_shares() -> None:
    still = by_name()["no improvement"]
    assert still.by_partition() == {}
    assert still.index_per_second is None
    assert still.write_units == 4.0  # the record and the row's update, in a transaction


def test_the_command_prints_the_table() -> None:
    rendered = capacity.render(capacity.scenarios())
    assert rendered.count("\n") == 1 + len(capacity.scenarios())
    assert "| new player | 9 |" in rendered
