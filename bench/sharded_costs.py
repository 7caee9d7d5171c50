"""What each request costs on a board of 16 shards beside an unsharded one: its DynamoDB calls,
the round trips they form, and the read and write units by DynamoDB's rules, traced on the
service's own client (``bench.harness.calls``, the same scenarios as the benchmarks' calls part).

    python3 tools/uv.py run --frozen --all-groups python -m bench.sharded_costs [--shards 1 16] \\
        [--out FILE.json]

The boards are small (41 players): a COUNT's read units grow with the players ahead of the one
ranked, so a rank read's units here are those of a small board; the calls and round trips are
the same on any board.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import structlog

from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from bench.harness.calls import run_calls

SHOWN = (
    "new player",
    "new player, rankDelta false",
    "improvement, another slot of the bucket",
    "no improvement",
    "top page (25)",
    "rank read",
    "around",
    "standings",
)


def _units(value: float) -> str:
    return f"{value:g}"


def table(found: dict[str, dict[str, dict[str, Any]]]) -> str:
    runs = list(found)
    lines = [
        "| request | "
        + " | ".join(
            f"{run}: calls in round trips | read units | write units (index)" for run in runs
        )
        + " |",
        "| --- | " + " | ".join("---: | ---: | ---:" for _ in runs) + " |",
    ]
    for name in SHOWN:
        cells = []
        for run in runs:
            s = found[run][name]
            cells.append(
                f"{s['calls']} in {s['round_trips']} | {_units(s['read_units'])} "
                f"| {_units(s['write_units'])} ({_units(s['index_write_units'])})"
            )
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


SUMMARY_S = 10.0
"""How long the warm runs' tasks hold a hot board's summary: longer than a run, so every read
measured after its warm-up finds it."""


def runs(shards: list[int]) -> list[tuple[str, int, float | None]]:
    """Each ``k`` as the service runs it; above 1, also with no summary (every read live), and
    with a warm one."""
    found: list[tuple[str, int, float | None]] = []
    for k in shards:
        if k == 1:
            found.append(("k = 1", 1, None))
        else:
            found.append((f"k = {k}, every read live", k, 0.0))
            found.append((f"k = {k}, warm summary", k, SUMMARY_S))
    return found


async def main_async(shards: list[int]) -> dict[str, dict[str, dict[str, Any]]]:
    configure_logging(json=True, level=40, cache=False)
    structlog.contextvars.clear_contextvars()
    found: dict[str, dict[str, dict[str, Any]]] = {}
    with EmbeddedDynamo() as endpoint:
        for label, k, summary_s in runs(shards):
            scenarios = await run_calls(endpoint, shards=k, summary_s=summary_s)
            found[label] = {s.name: s.summary() for s in scenarios}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--out", help="every scenario's figures and calls, as JSON")
    args = parser.parse_args()
    found = asyncio.run(main_async(args.shards))
    print(table(found))
    if args.out:
        with open(args.out, "w") as out:
            json.dump(found, out, indent=1)


if __name__ == "__main__":
    main()
