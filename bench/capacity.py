"""How many submissions a second one board takes before a partition throttles: a capacity model
fed by the service's own write path.

    python3 tools/uv.py run --frozen --all-groups python -m bench.capacity

Each scenario builds the transaction a submission sends with the service's own functions (the
plan, ``app.domain.submission.plan_board_write``; the row, ``app.store.standings.row_put``; the
counters, ``app.store.counters.CounterItems.changes``; the idempotency record,
``app.store.requests.record_put``), then charges each item by DynamoDB's published rules
(``bench.harness.units``) to the partition key it lands on: the Scores table's ``playerId`` for
table items, the board for the RankIndex entry it writes. DynamoDB serves at most 1,000 write
units a second per partition key, of the table and of each index alike; a board takes submissions
of a kind at ``1,000 / the units its busiest partition takes per submission``.

The scenarios are the bad case a live round makes: every player of the round lands in the same
fine slot of the histogram (one score band), so every submission writes the same fine counter
item, and, once that slot is crowded, the same slot's tie counters. An improvement leaves one slot
and enters another of the same bucket: two fine counter items in one partition.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from app.bootstrap import LAYOUT
from app.domain.definitions import BoardDefinition, move
from app.domain.keys import RankKey
from app.domain.models import Entry, Standing, StandingWrite
from app.domain.periods import Board
from app.domain.storage_keys import coarse_pk
from app.domain.submission import Submission, plan_board_write
from app.domain.ties import SlotTies
from app.store.counters import CounterItems
from app.store.item_locks import ItemLocks
from app.store.requests import record_put
from app.store.standings import row_put
from bench.harness import units

PARTITION_WRITE_UNITS = 1_000
"""Write units a second one partition key takes (the table's, and each index's)."""
TABLE = "leaderboard-scores"
BOARD = Board.from_id("trivia#classic#alltime")
NOW_MS = 1_796_000_000_000
SCORE = 5_000
COUNTER_SHARDS = 4


@dataclass(frozen=True)
class Charge:
    """Write units one submission puts on one partition key, or on one of ``spread`` keys that
    take turns (a coarse counter's shards); ``shared`` false: a key of the player's own, which
    the board's other submissions do not write."""

    partition: str
    units: float
    what: str
    shared: bool = True
    spread: int = 1


@dataclass(frozen=True)
class Scenario:
    name: str
    charges: list[Charge]

    def by_partition(self) -> dict[str, float]:
        """What the board's stream of such submissions puts on each key it shares, a submission
        at a time (a key taken in turns gets its share)."""
        totals: dict[str, float] = defaultdict(float)
        for charge in self.charges:
            if charge.shared:
                totals[charge.partition] += charge.units / charge.spread
        return dict(totals)

    @property
    def hottest(self) -> tuple[str, float]:
        shared = self.by_partition()
        if not shared:
            return "none: only the player's own keys", 0.0
        return max(shared.items(), key=lambda item: item[1])

    @property
    def per_second(self) -> float:
        """Submissions a second before the hottest partition throttles (no bound from the board:
        infinite)."""
        load = self.hottest[1]
        return PARTITION_WRITE_UNITS / load if load else float("inf")

    @property
    def index_per_second(self) -> float | None:
        """What the board's RankIndex partition alone would take (``None``: no index write)."""
        load = sum(c.units for c in self.charges if c.what == "index entry")
        return PARTITION_WRITE_UNITS / load if load else None

    @property
    def write_units(self) -> float:
        return sum(charge.units for charge in self.charges)

    def summary(self) -> dict[str, Any]:
        partition, load = self.hottest
        return {
            "scenario": self.name,
            "write_units": self.write_units,
            "hottest_partition": partition,
            "hottest_units": load,
            "per_second": None if self.per_second == float("inf") else round(self.per_second),
            "partitions": self.by_partition(),
        }


def _counters() -> CounterItems:
    # ``changes`` plans the updates and makes no call: no client is needed.
    return CounterItems(cast("Any", None), table=TABLE, shards=COUNTER_SHARDS, locks=ItemLocks())


def submission_charges(
    player: str, score: int, *, previous: int | None, ties: SlotTies | None
) -> list[Charge]:
    """The transaction one submission to ``BOARD`` sends, charged partition by partition."""
    definition = BoardDefinition()
    old_key = None if previous is None else RankKey(previous, NOW_MS - 60_000, player)
    standing = None
    before_item = None
    if old_key is not None:
        standing = Standing(BOARD.board_id, Entry(old_key, "Player One", "GB"), version=3)
        before_item = row_put(TABLE, StandingWrite(BOARD.board_id, standing, None))["Put"]["Item"]
    moved = move(definition, old_key, score=score, achieved_at_ms=NOW_MS, player_id=player)
    planned = plan_board_write(
        BOARD,
        standing,
        moved,
        ties,
        submission=Submission(player, score, "trivia", "classic", NOW_MS, "Player One", "GB"),
        layout=LAYOUT,
        now_ms=NOW_MS,
        retention=timedelta(days=30),
    )
    charges: list[Charge] = []
    record = record_put(
        TABLE,
        player,
        f"idem#bench#{player}",
        request_hash="0" * 64,
        response_json=json.dumps({"playerId": player, "boards": [{"best": score}] * 3}),
        expires_at=NOW_MS // 1000 + 86_400,
        now_ms=NOW_MS,
    )
    record_item = record["Put"]["Item"]
    charges.append(
        Charge(
            record_item["playerId"]["S"],
            units.item_write_units(None, record_item, transactional=True).table,
            "idempotency record",
            shared=False,
        )
    )
    row = row_put(TABLE, planned.write)
    after_item = row["Put"]["Item"] if "Put" in row else before_item
    written = units.item_write_units(before_item, after_item, transactional=True)
    charges.append(Charge(player, written.table, "row", shared=False))
    if written.index:
        charges.append(Charge(f"RankIndex {BOARD.board_id}", written.index, "index entry"))
    coarse_shards = {coarse_pk(BOARD.board_id, shard) for shard in range(COUNTER_SHARDS)}
    for update in (
        _counters().changes(BOARD.board_id, planned.write.counters, expires_at=None).updates
    ):
        key = update["Update"]["Key"]
        item = {**key, "n": {"N": "1000"}}
        partition = key["playerId"]["S"]
        coarse = partition in coarse_shards
        charges.append(
            Charge(
                # One name for the shards taken in turns: each takes ``1 / spread`` of the load.
                f"{coarse_pk(BOARD.board_id, 0)} (any of {COUNTER_SHARDS})"
                if coarse
                else partition,
                units.item_write_units(item, item, transactional=True).table,
                "counter " + key["leaderboardId"]["S"],
                spread=COUNTER_SHARDS if coarse else 1,
            )
        )
    return charges


def scenarios() -> list[Scenario]:
    bucket, slot = LAYOUT.fine_of(SCORE)
    low, _ = LAYOUT.fine_bounds(bucket, slot)
    next_slot, _ = LAYOUT.fine_bounds(bucket, slot + 1)
    crowded = SlotTies(grain=10)
    return [
        Scenario("new player", submission_charges("p-new", low, previous=None, ties=None)),
        Scenario(
            "new player, crowded slot (tie counters)",
            submission_charges("p-new", low, previous=None, ties=crowded),
        ),
        Scenario(
            "improvement to the next slot",
            submission_charges("p-old", next_slot, previous=low, ties=None),
        ),
        Scenario(
            "improvement, crowded slot (tie counters)",
            submission_charges("p-old", next_slot, previous=low, ties=crowded),
        ),
        Scenario("no improvement", submission_charges("p-old", low, previous=next_slot, ties=None)),
    ]


def render(found: Sequence[Scenario]) -> str:
    lines = [
        "| submission, one board | write units | busiest shared partition | its units | a second "
        "| the index alone: a second |",
        "| --- | ---: | --- | ---: | ---: | ---: |",
    ]
    for scenario in found:
        partition, load = scenario.hottest
        lines.append(
            f"| {scenario.name} | {scenario.write_units:g} | `{partition}` | {load:g} | "
            + ("no bound |" if not load else f"{scenario.per_second:,.0f} |")
            + (
                " no index write |"
                if scenario.index_per_second is None
                else f" {scenario.index_per_second:,.0f} |"
            )
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="every partition's units, as JSON")
    args = parser.parse_args(argv)
    found = scenarios()
    if args.json:
        print(json.dumps([s.summary() for s in found], indent=1))
    else:
        print(render(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
