"""Bursts: 1,000 new players onto one board at 8, 16, 64, 256 and 1,000 requests in flight.

Two app instances (standing for two ECS tasks) share one embedded DynamoDB, and per-item
transaction conflicts are injected as DynamoDB raises them (a transaction touching an item another
transaction in flight touches is cancelled). Every failure is recorded with its reason; the board
and its counters are checked against the successes. Printed beside the figures of the earlier
Lambda design (on API Gateway, Lambda and DynamoDB: docs/scale.md).

``python3 tools/uv.py run --frozen --all-groups python -m bench.burst [--players 1000] [--levels 8,16,64,256,1000] [--out docs/bursts.md]``
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time
import uuid
from collections import Counter
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import structlog

from app.bootstrap import open_runtime
from app.domain.shards import partition_ids
from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from app.services.ranking.pages import merged_page
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, Service, make_settings, serve
from tests.faults import InFlightItems, install
from tests.support import counter_total, now_ms, submit

BOARD = "trivia#classic#alltime"
SEEDS = {8: (1000, 0), 16: (986, 14), 64: (525, 475), 1000: (204, 796)}
"""The earlier Lambda design's 2026-08-19 run: succeeded, failed (mostly Lambda throttles, as it
turned out)."""


@dataclass
class LevelResult:
    in_flight: int
    players: int
    succeeded: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    conflicts_injected: int = 0
    seconds: float = 0.0
    board_count: int = 0
    counters: tuple[int, int] = (0, 0)
    attempts: int = 0
    most_attempts: int = 0
    """The most transactions one submission's board write took (the service allows 20)."""
    submitted: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    """Each player's accepted (score, achievedAt ms), for checking the board against its rule."""
    board: dict[str, int] = field(default_factory=dict)
    """Each player's value on the board after the burst."""


async def run_level(
    endpoint: str,
    in_flight: int,
    players: int,
    instances: int = 2,
    *,
    rules: tuple[str, str] = ("desc", "best"),
    rounds: int = 1,
    shards: int = 1,
) -> LevelResult:
    """``players`` new players, each submitting ``rounds`` rounds (all at once, each with its own
    Idempotency-Key), onto a board of ``rules`` (order, operator) spread over ``shards``."""
    run = uuid.uuid4().hex[:8]
    tables = TableNames(f"burst-{run}", f"burst-snap-{run}")
    # The embedded backend serves one call at a time and slows as the table grows, so a burst
    # queues for far longer than on DynamoDB: the deadline, and a task's limit of submissions to
    # one board at once, are lifted to measure contention alone (make_settings lifts the overload
    # limit).
    settings = make_settings(
        endpoint,
        tables,
        periods=["alltime"],
        board_in_flight_per_shard=0,
        request_deadline_seconds=600,
        dynamodb_read_timeout_seconds=120,
        dynamodb_max_in_flight=16,
    )
    result = LevelResult(in_flight, players)
    rng = random.Random(in_flight)
    async with open_runtime(
        settings.model_copy(update={"dynamodb_read_timeout_seconds": 300}), create_tables=True
    ) as runtime:
        conflicts = InFlightItems()
        async with AsyncExitStack() as stack:
            services: list[Service] = [
                await stack.enter_async_context(serve(settings)) for _ in range(instances)
            ]
            faults = [install(s.runtime.client, endpoint, in_flight=conflicts) for s in services]
            order, operator = rules
            defined = await services[0].http.put(
                "/v1/games/trivia/variants/classic",
                json={
                    "order": order,
                    "operator": operator,
                    "periods": ["alltime"],
                    "shards": shards,
                },
                headers={"Authorization": f"Bearer {ADMIN_KEY}"},
            )
            defined.raise_for_status()
            gate = asyncio.Semaphore(in_flight)
            base = now_ms() - 600_000

            async def one(i: int) -> None:
                player = f"burst-{i // rounds:05d}"
                score = max(0, int(rng.gauss(5000, 1500)))
                achieved = base + rng.randrange(590_000)
                async with gate:
                    response = await submit(
                        services[i % instances].http,
                        player=player,
                        score=score,
                        achieved_ms=achieved,
                        rankDelta=False,
                    )
                if response.status_code == 200:
                    result.succeeded += 1
                    result.submitted.setdefault(player, []).append((score, achieved))
                else:
                    problem = response.json() if response.content else {}
                    reason = str(problem.get("detail", "?")).split(";")[0][:60]
                    result.failures[f"{response.status_code} {reason}"] += 1

            started = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(players * rounds)))
            result.seconds = time.perf_counter() - started
            result.conflicts_injected = conflicts.conflicts
            result.attempts = sum(f.seen["TransactWriteItems"] for f in faults)
            result.most_attempts = max(conflicts.sent.values(), default=0)
            print(f"  {in_flight} in flight: {result.succeeded} succeeded, {dict(result.failures)}")
        totals = [await counter_total(runtime, pid) for pid in partition_ids(BOARD, shards)]
        result.counters = (sum(c for c, _ in totals), sum(f for _, f in totals))
        page = await merged_page(
            runtime.stores.index, BOARD, shards=shards, limit=players + 1, start=None
        )
        result.board_count = len(page.entries)
        result.board = {e.player_id: e.score for e in page.entries}
        for name in (tables.scores, tables.snapshots):
            await runtime.client.delete_table(TableName=name)
    return result


def table(results: list[LevelResult]) -> str:
    lines = [
        "| in flight | succeeded | failed (reason) | Lambda design: succeeded / failed "
        "| conflicts injected | transactions sent | most attempts | on the board "
        "| counters (coarse, fine) | seconds |",
        "| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for r in results:
        failed = ", ".join(f"{n} x {k}" for k, n in r.failures.most_common()) or "0"
        seeds = "{} / {}".format(*SEEDS[r.in_flight]) if r.in_flight in SEEDS else "-"
        lines.append(
            f"| {r.in_flight} | {r.succeeded} | {failed} | {seeds} | {r.conflicts_injected} "
            f"| {r.attempts} | {r.most_attempts} | {r.board_count} | {r.counters} "
            f"| {r.seconds:.1f} |"
        )
    return "\n".join(lines)


async def main_async(players: int, levels: list[int]) -> list[LevelResult]:
    configure_logging(json=True, level=30, cache=False)
    structlog.contextvars.clear_contextvars()
    results = []
    with EmbeddedDynamo() as endpoint:
        for level in levels:
            result = await run_level(endpoint, level, players)
            print(table([result]).splitlines()[-1], flush=True)
            results.append(result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--players", type=int, default=1000)
    parser.add_argument("--levels", default="8,16,64,256,1000")
    parser.add_argument("--out")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    results = asyncio.run(main_async(args.players, levels))
    report = table(results)
    print(report)
    if args.out:
        with open(args.out, "w") as out:
            out.write(report + "\n")


if __name__ == "__main__":
    main()
