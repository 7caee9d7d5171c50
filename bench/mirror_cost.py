"""What a task's mirror of a hot board costs to keep, beside what a show's rank reads cost without
one: a model fed by the service's own layout and item sizes.

    python3 tools/uv.py run --frozen --all-groups python -m bench.mirror_cost [--json OUT]

A board of ``entries`` players on ``shards`` shards, scores normal around 5,000 (sd 1,500) as in
``bench.hot_round``. A mirror refresh (``app/services/ranking/mirror.py``) reads every shard's
coarse counters (``coarse_shards`` Queries a shard, each of the bucket items the shard holds) and
reads again from RankIndex, whole, every bucket of a shard whose players or version moved, and
each for ``SETTLE_S`` after. A reader refreshes a mirror once it is half ``MAX_AGE_S`` old, so a
board that readers ask about all the time is refreshed about ``REFRESHES_A_SECOND`` times a second
a task. Two moments of a show:

- **still**: the round is over, every player reads their rank; nothing moves, so a refresh reads
  the counters only;
- **storm**: ``moving`` players a second submit a better score (a round with ``rankDelta`` on);
  every bucket a round's scores land in moves between two refreshes, so a refresh reads those
  buckets whole.

Beside it, a rank read without a mirror on a warm summary (the row, the player's own shard's
counters, a capped COUNT on every shard), times the readers: what a show's readers cost before.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from app.bootstrap import LAYOUT
from app.domain.shards import partition_ids, player_partition
from bench.capacity import BOARD, _counters, _index_entry_bytes
from bench.harness import units

MAX_AGE_S = 1.0
REFRESHES_A_SECOND = 2.0
"""A refresh starts once the mirror is half ``MAX_AGE_S`` old."""
SETTLE_S = 3.0
COARSE_ITEM_BYTES = 48
"""A coarse counter item: its keys (``hist#<board>#s03#c2`` / ``0042``), ``n``, ``v`` and
``expiresAt``."""


@dataclass(frozen=True)
class MirrorCost:
    entries: int
    shards: int
    moment: str
    readers_a_second: int
    mirror_units_a_task_second: float
    mirror_bytes: int
    """What the mirror holds in memory, about (200 bytes a key, measured with tracemalloc)."""
    units_a_rank_read_with_mirror: float
    """The player's own row (read strongly: their last write is in the answer)."""
    units_a_rank_read_with_summary: float
    """Without a mirror, on a warm summary (decision 0027): the row, the player's own shard's
    counters and a capped COUNT on every shard, at their least."""
    units_a_second_with_summary: float
    """Every reader's rank read so."""


def _buckets(entries: int, shards: int) -> dict[str, Counter[int]]:
    rng = random.Random(entries)
    held: dict[str, Counter[int]] = {
        pid: Counter() for pid in partition_ids(BOARD.board_id, shards)
    }
    for i in range(entries):
        score = max(0, int(rng.gauss(5000, 1500)))
        held[player_partition(BOARD.board_id, f"p{i}", shards)][LAYOUT.coarse_of(score)] += 1
    return held


def mirror_cost(entries: int, shards: int, *, moving: int, readers: int) -> list[MirrorCost]:
    held = _buckets(entries, shards)
    entry = _index_entry_bytes()
    counters = _counters()
    coarse = sum(
        counters.coarse_shards(pid)
        * units.read_units(max(1, len(buckets)) * COARSE_ITEM_BYTES, consistent=False)
        for pid, buckets in held.items()
    )
    # A storm moves every bucket that holds a moving player's old or new score between two
    # refreshes: with ``moving`` a second spread as the scores are, that is every bucket held.
    storm = sum(
        units.read_units(n * entry, consistent=False)
        for buckets in held.values()
        for n in buckets.values()
    )
    row = units.read_units(entry, consistent=True)
    own = counters.coarse_shards(partition_ids(BOARD.board_id, shards)[0]) + 1  # and a fine span
    with_summary = row + (own + shards) * units.read_units(0, consistent=False)
    found = []
    for moment, upkeep in (("still", coarse), ("storm", coarse + (storm if moving else 0.0))):
        found.append(
            MirrorCost(
                entries=entries,
                shards=shards,
                moment=moment,
                readers_a_second=readers,
                mirror_units_a_task_second=round(upkeep * REFRESHES_A_SECOND, 1),
                mirror_bytes=entries * 200,
                units_a_rank_read_with_mirror=row,
                units_a_rank_read_with_summary=with_summary,
                units_a_second_with_summary=with_summary * readers,
            )
        )
    return found


def render(found: Sequence[MirrorCost]) -> str:
    lines = [
        "| entries | k | moment | mirror upkeep, read units a task a second | held in memory "
        "| units a rank read with a mirror | readers a second | units a rank read without one "
        "| their reads without one, units a second |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {c.entries:,} | {c.shards} | {c.moment} | {c.mirror_units_a_task_second:,.0f} "
        f"| {c.mirror_bytes / 1e6:,.0f} MB | {c.units_a_rank_read_with_mirror:g} "
        f"| {c.readers_a_second:,} | {c.units_a_rank_read_with_summary:g} "
        f"| {c.units_a_second_with_summary:,.0f} |"
        for c in found
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)
    found: list[MirrorCost] = []
    for entries in (100_000, 1_000_000):
        # A show's readers: every player within 5 s of the round's end; its storm: a round of
        # 10,000 submissions a second.
        found += mirror_cost(entries, args.shards, moving=10_000, readers=math.ceil(entries / 5))
    print(render(found))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump([asdict(c) for c in found], out, indent=2)
            out.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
