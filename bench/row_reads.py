"""What the task's CPU pays for a player's row, read alone (a GetItem) and with others asked at
once (one BatchGetItem, ``app/store/row_reads.py``): the one read a rank from a mirror makes.

    python3 tools/uv.py run --frozen --all-groups python -m bench.row_reads [--at-once 50]

The real adapter on the embedded backend (in its own process: its CPU is not counted), warm;
``time.process_time`` around the reads, this process's CPU alone.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid

from app.bootstrap import open_runtime
from app.local.embedded import EmbeddedDynamo
from app.store.tables import TableNames
from tests.conftest import make_settings

BOARD = "trivia#live#alltime"


async def measure(endpoint: str, *, reads: int, at_once: int) -> tuple[float, float]:
    """CPU milliseconds a row read costs, alone and ``at_once`` together."""
    run = uuid.uuid4().hex[:8]
    settings = make_settings(endpoint, TableNames(f"rows-{run}", f"rows-snap-{run}"))
    async with open_runtime(settings, create_tables=True) as runtime:
        standings = runtime.stores.standings
        for i in range(20):  # warm: the client's connections and botocore's caches
            await standings.read_standing(BOARD, f"p{i}")
        began = time.process_time()
        for i in range(reads):
            await standings.read_standing(BOARD, f"p{i}")
        alone = (time.process_time() - began) / reads
        began = time.process_time()
        for first in range(0, reads, at_once):
            await asyncio.gather(
                *(standings.read_standing(BOARD, f"p{i}") for i in range(first, first + at_once))
            )
        together = (time.process_time() - began) / (reads // at_once * at_once)
        for name in (settings.scores_table, settings.snapshots_table):
            await runtime.client.delete_table(TableName=name)
    return alone * 1000, together * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=500)
    parser.add_argument("--at-once", type=int, default=50)
    args = parser.parse_args()
    with EmbeddedDynamo() as endpoint:
        alone, together = asyncio.run(measure(endpoint, reads=args.reads, at_once=args.at_once))
    print(f"a row read alone (GetItem): {alone:.2f} ms of CPU")
    print(f"{args.at_once} at once (BatchGetItem): {together:.3f} ms of CPU a read")


if __name__ == "__main__":
    main()
