"""The capacity model charges the service's own transaction: the keys it names are the ones the
write path plans, and the figures follow from DynamoDB's 1,000 write units a partition."""

from __future__ import annotations

import pytest

from app.bootstrap import LAYOUT
from app.domain.storage_keys import fine_pk
from bench import capacity


def by_name() -> dict[str, capacity.Scenario]:
    return {scenario.name: scenario for scenario in capacity.scenarios()}


def test_a_new_player_is_bound_by_its_slots_fine_counter_before_the_index() -> None:
    new = by_name()["new player"]
    board = capacity.BOARD.board_id
    fine = fine_pk(board, LAYOUT.slot_of(capacity.SCORE)[0])
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
    rendered = capacity.render({k: capacity.scenarios(k) for k in (1, 16)})
    writes, reads = rendered.split("\n\n")
    assert writes.count("\n") == 1 + len(capacity.scenarios())
    assert "| new player | 9 | 500 |" in writes
    assert reads.count("\n") == 1 + 2 * len(capacity.read_costs(1))


def test_each_shard_takes_its_share_of_the_round_and_the_busiest_sets_the_rate() -> None:
    for k in (4, 16, 64):
        new = {s.name: s for s in capacity.scenarios(k)}["new player"]
        shares = capacity.round_shares(k)
        assert sum(shares) == pytest.approx(1.0)
        # Every shard has its own fine counter and index partition, loaded by its share.
        fines = {p: u for p, u in new.by_partition().items() if "#f" in p}
        assert len(fines) == k
        assert max(fines.values()) == pytest.approx(2.0 * max(shares))
        assert new.per_second == pytest.approx(500 / max(shares))
        # Near k times the unsharded board's, less what the busiest shard holds above 1/k.
        assert 0.9 * 500 * k < new.per_second <= 500 * k
        assert new.index_per_second == pytest.approx(1_000 / max(shares))
        assert new.write_units == 9  # a shard's submission costs what an unsharded board's does


def test_the_table_quota_is_a_wall_sharding_does_not_move() -> None:
    at_1 = {s.name: s for s in capacity.scenarios(1)}["new player"]
    at_64 = {s.name: s for s in capacity.scenarios(64)}["new player"]
    assert at_1.quota_per_second == at_64.quota_per_second
    assert at_64.per_second > at_64.quota_per_second > at_1.per_second


def test_reads_fan_out_to_every_shard_in_the_same_round_trips() -> None:
    for k in (1, 4, 16, 64):
        top, rank, around = capacity.read_costs(k)
        assert (top.calls, top.round_trips) == (k, 1)
        assert rank.round_trips == around.round_trips == 2
        assert rank.calls >= 3 * k
        assert around.calls == rank.calls + 2 * k
    assert capacity.read_costs(16)[0].calls <= 17  # issue 30's target for a 16-shard top page
