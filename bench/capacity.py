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

A board of ``shards`` > 1 keeps each player on the partition their id hashes to
(``app.domain.shards``), with that partition's own counters. The round's players are
``ROUND_PLAYERS`` ids, hashed as the service hashes them: each shard's keys take the share of the
round that lands on it, so the busiest shard (not the average one) sets the rate.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from app.bootstrap import LAYOUT
from app.domain.definitions import BoardDefinition, move
from app.domain.keys import RankKey
from app.domain.models import Entry, Standing, StandingWrite
from app.domain.periods import Board
from app.domain.shards import SHARD_COUNTS, partition_ids, player_partition, shard_of
from app.domain.storage_keys import coarse_pk
from app.domain.submission import Submission, plan_board_write
from app.domain.ties import SlotTies
from app.services.ranking.pages import shard_page_limit
from app.settings import Settings
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
COUNTER_SHARDS: int = Settings.model_fields["counter_shards"].default
"""The coarse counter shards of an unsharded board: the service's default."""
ROUND_PLAYERS = 100_000
"""The players of one round (a live show's): their ids' hash decides each shard's share."""
TABLE_QUOTA_WRITE_UNITS = 40_000
"""An on-demand table's default write quota a second (an account's, raised on request)."""


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
    shard: int = 0
    """The board shard the submission's player is on."""


@dataclass(frozen=True)
class Scenario:
    name: str
    charges: list[Charge]
    """One submission's charges; on a sharded board, one submission per shard, each weighed by
    the share of the round that lands on its shard (``weights``)."""
    shards: int = 1
    weights: tuple[float, ...] = (1.0,)
    """The share of the round's submissions each submission in ``charges`` stands for, by
    ``Charge.shard``."""

    def by_partition(self) -> dict[str, float]:
        """What the board's stream of such submissions puts on each key it shares, a submission
        at a time (a key taken in turns gets its share)."""
        totals: dict[str, float] = defaultdict(float)
        for charge in self.charges:
            if charge.shared:
                totals[charge.partition] += (
                    self.weights[charge.shard] * charge.units / charge.spread
                )
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
        """What the board's busiest RankIndex partition alone would take (``None``: no index
        write)."""
        loads = [load for key, load in self.by_partition().items() if key.startswith("RankIndex")]
        return PARTITION_WRITE_UNITS / max(loads) if loads else None

    @property
    def write_units(self) -> float:
        """One submission's write units on this board (the same on every shard)."""
        return sum(c.units for c in self.charges if c.shard == 0)

    @property
    def quota_per_second(self) -> float:
        """Submissions a second the table's default write quota takes, were they all this one."""
        return TABLE_QUOTA_WRITE_UNITS / self.write_units

    def summary(self) -> dict[str, Any]:
        partition, load = self.hottest
        return {
            "scenario": self.name,
            "shards": self.shards,
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
    player: str, score: int, *, previous: int | None, ties: SlotTies | None, shards: int = 1
) -> list[Charge]:
    """The transaction one submission to ``BOARD`` (of ``shards``) sends, charged partition by
    partition."""
    definition = BoardDefinition(shards=shards)
    shard = shard_of(player, shards)
    partition = player_partition(BOARD.board_id, player, shards)
    old_key = None if previous is None else RankKey(previous, NOW_MS - 60_000, player)
    standing = None
    before_item = None
    if old_key is not None:
        standing = Standing(partition, Entry(old_key, "Player One", "GB"), version=3)
        before_item = row_put(TABLE, StandingWrite(partition, standing, None))["Put"]["Item"]
    moved = move(definition, old_key, score=score, achieved_at_ms=NOW_MS, player_id=player)
    planned = plan_board_write(
        BOARD,
        standing,
        moved,
        ties,
        submission=Submission(player, score, "trivia", "classic", NOW_MS, "Player One", "GB"),
        layout=LAYOUT,
        now_ms=NOW_MS,
        definition=BoardDefinition(),
        partition=partition,
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
            shard=shard,
        )
    )
    row = row_put(TABLE, planned.write)
    after_item = row["Put"]["Item"] if "Put" in row else before_item
    written = units.item_write_units(before_item, after_item, transactional=True)
    charges.append(Charge(player, written.table, "row", shared=False, shard=shard))
    if written.index:
        charges.append(Charge(f"RankIndex {partition}", written.index, "index entry", shard=shard))
    counters = _counters()
    spread = counters.coarse_shards(partition)
    coarse_shards = {coarse_pk(partition, k) for k in range(spread)}
    for update in counters.changes(partition, planned.write.counters, expires_at=None).updates:
        key = update["Update"]["Key"]
        item = {**key, "n": {"N": "1000"}}
        key_partition = key["playerId"]["S"]
        coarse = key_partition in coarse_shards
        charges.append(
            Charge(
                # One name for the shards taken in turns: each takes ``1 / spread`` of the load.
                f"{coarse_pk(partition, 0)} (any of {spread})"
                if coarse and spread > 1
                else key_partition,
                units.item_write_units(item, item, transactional=True).table,
                "counter " + key["leaderboardId"]["S"],
                spread=spread if coarse else 1,
                shard=shard,
            )
        )
    return charges


def round_shares(shards: int) -> tuple[float, ...]:
    """The share of a round's ``ROUND_PLAYERS`` players that lands on each shard."""
    counts = [0] * shards
    for i in range(ROUND_PLAYERS):
        counts[shard_of(f"player-{i:06d}", shards)] += 1
    return tuple(n / ROUND_PLAYERS for n in counts)


def _player_on(shard: int, shards: int, prefix: str) -> str:
    """A player id that lands on ``shard``: the submission that stands for that shard's share."""
    return next(
        player for i in range(100_000) if shard_of(player := f"{prefix}-{i}", shards) == shard
    )


def _scenario(
    name: str, shards: int, shares: tuple[float, ...], prefix: str, score: int, **kwargs: Any
) -> Scenario:
    charges = [
        charge
        for shard in range(shards)
        for charge in submission_charges(
            _player_on(shard, shards, prefix), score, shards=shards, **kwargs
        )
    ]
    return Scenario(name, charges, shards, shares)


def scenarios(shards: int = 1) -> list[Scenario]:
    bucket, slot = LAYOUT.slot_of(SCORE)
    low, _ = LAYOUT.slot_bounds(bucket, slot)
    next_slot, _ = LAYOUT.slot_bounds(bucket, slot + 1)
    crowded = SlotTies(grain=10)
    shares = round_shares(shards)
    return [
        _scenario("new player", shards, shares, "p-new", low, previous=None, ties=None),
        _scenario(
            "new player, crowded slot (tie counters)",
            shards,
            shares,
            "p-new",
            low,
            previous=None,
            ties=crowded,
        ),
        _scenario(
            "improvement to the next slot",
            shards,
            shares,
            "p-old",
            next_slot,
            previous=low,
            ties=None,
        ),
        _scenario(
            "improvement, crowded slot (tie counters)",
            shards,
            shares,
            "p-old",
            next_slot,
            previous=low,
            ties=crowded,
        ),
        _scenario("no improvement", shards, shares, "p-old", low, previous=next_slot, ties=None),
    ]


# ---- reads ---------------------------------------------------------------------------------------

PAGE = 25
"""The top page's default size."""
AROUND = 5
"""Entries on each side of the player in around's default."""


def _index_entry_bytes() -> int:
    """One RankIndex entry as the service writes it: a 16-character name, a country, no
    metadata."""
    key = RankKey(SCORE, NOW_MS, "player-000123")
    row = row_put(
        TABLE,
        StandingWrite(
            BOARD.board_id,
            Standing(BOARD.board_id, Entry(key, "Player Number 123", "GB"), version=1),
            None,
        ),
    )["Put"]["Item"]
    entry = units.index_entry(row)
    assert entry is not None
    return units.item_size(entry)


@dataclass(frozen=True)
class ReadCost:
    """One read of a board of ``shards``: its calls, its round trips, and the read units it costs
    at the least (an eventually consistent Query is 0.5 a 4 KB block, and never less)."""

    read: str
    shards: int
    calls: int
    round_trips: int
    units_at_least: float
    note: str = ""


def read_costs(shards: int) -> list[ReadCost]:
    """The reads of a board of ``shards``, with the service's own choices: the partitions
    (``partition_ids``), the page each is asked for (``shard_page_limit``), the coarse shards of
    each partition's counters (``CounterItems.coarse_shards``)."""
    pids = partition_ids(BOARD.board_id, shards)
    entry = _index_entry_bytes()
    per = shard_page_limit(PAGE, shards)
    page_units = shards * units.read_units((per + 1) * entry, consistent=False)
    coarse = sum(_counters().coarse_shards(pid) for pid in pids)
    # The rank: the row (strong), then on every partition its coarse counters, one fine span and
    # a capped COUNT, all at once.
    rank_calls = 1 + coarse + 2 * len(pids)
    rank_units = 1.0 + (coarse + 2 * len(pids)) * 0.5
    around_units = rank_units + 2 * shards * units.read_units(AROUND * entry, consistent=False)
    return [
        ReadCost(
            f"top page ({PAGE})",
            shards,
            len(pids),
            1,
            page_units,
            f"{shards} Quer{'ies' if shards > 1 else 'y'} of {per + 1} entries; the player count "
            f"(+{coarse} calls) at most once a second a task",
        ),
        ReadCost("rank read", shards, rank_calls, 2, rank_units, "COUNTs at their least"),
        ReadCost(
            f"around ({AROUND} and {AROUND})",
            shards,
            rank_calls + 2 * len(pids),
            2,
            around_units,
            "the rank read and a Query each way on every partition",
        ),
    ]


def render(found: dict[int, list[Scenario]]) -> str:
    """The submissions a second one board takes at each shard count, beside the table quota's
    wall; then what a read costs at each."""
    counts = list(found)
    lines = [
        "| submission, one board | write units | "
        + " | ".join(f"k = {k}: a second" for k in counts)
        + " | the table's default quota: a second |",
        "| --- | ---: | " + " | ".join("---:" for _ in counts) + " | ---: |",
    ]
    for i, scenario in enumerate(found[counts[0]]):
        rates = [found[k][i] for k in counts]
        lines.append(
            f"| {scenario.name} | {scenario.write_units:g} | "
            + " | ".join("no bound" if not s.hottest[1] else f"{s.per_second:,.0f}" for s in rates)
            + f" | {scenario.quota_per_second:,.0f} |"
        )
    lines += [
        "",
        "| read | k | calls | round trips | read units, at least | |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for k in counts:
        for cost in read_costs(k):
            lines.append(
                f"| {cost.read} | {k} | {cost.calls} | {cost.round_trips} | "
                f"{cost.units_at_least:g} | {cost.note} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="every partition's units, as JSON")
    parser.add_argument(
        "--shards",
        type=int,
        nargs="*",
        default=[1, 4, 16, 64],
        choices=SHARD_COUNTS,
        help="the shard counts to model (default: 1 4 16 64)",
    )
    args = parser.parse_args(argv)
    found = {k: scenarios(k) for k in args.shards}
    if args.json:
        print(
            json.dumps(
                {
                    "writes": [s.summary() for k in found for s in found[k]],
                    "reads": [vars(c) for k in found for c in read_costs(k)],
                },
                indent=1,
            )
        )
    else:
        print(render(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
