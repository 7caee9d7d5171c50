"""A live round onto one board, end to end, through a proxy that throttles as DynamoDB does.

The real service (its HTTP app, its aioboto3 adapter) runs against ``bench.partition_proxy`` in
front of the embedded backend, which serves each partition key at DynamoDB's documented rates
times ``scale``. A round's submissions are offered at ``rate / scale``-equivalent: ``rate``
submissions a second (say 10,000 x 1/250 = 40), evenly paced, each a new player (or, with
``--improvements``, each an existing player's better score). Each is sent as a game server
would: with an Idempotency-Key, again after ``Retry-After`` on a 503, 409 or 429, until
``deadline_s`` after its first send. ``rankDelta`` is off: the write path is what meets the
partitions here, and what a rank read costs is in the capacity model (docs/scale.md).

Afterwards the board is read whole, past the proxy: every submission answered 200 is on it once
with its score, none that was not answered 200 left a mark, and every shard's counters count
exactly its rows (nothing lost, nothing counted twice).

    python3 tools/uv.py run --frozen --all-groups python -m bench.hot_round [--shards 1 16] \\
        [--rate 40] [--improvement-rate 16] [--scale 0.004] [--seconds 10] \\
        [--improvements | --both] [--table-units 40000] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx
import structlog

from app.bootstrap import Runtime, open_runtime
from app.domain.clock import iso_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.periods import Board, PeriodKind
from app.domain.seed_file import parse_seed_text
from app.domain.shards import partition_ids, player_partition
from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from app.services.operations import SeedOptions
from app.settings import Settings
from app.store.tables import TableNames
from bench.partition_proxy import running_proxy
from tests.conftest import make_settings, serve
from tests.support import counter_total, now_ms, scores_items, submit

BOARD = "trivia#live#alltime"
BOARD_PATH = "/v1/leaderboards/trivia/live/alltime"
RETRIED = {409, 429, 503}


@dataclass
class RoundResult:
    shards: int
    rate: float
    scale: float
    improvements: bool
    offered: int = 0
    completed: int = 0
    """Answered 200, at any time."""
    within_deadline: int = 0
    gave_up: int = 0
    """Never answered 200 before the deadline (sent no more)."""
    unknown: int = 0
    """Of those given up, the ones an attempt of which was cut at the service's deadline (``503
    unavailable``): a cut transaction may still land (a retry with the same key would complete it
    exactly once), so the board holds the submission or not, and nothing else."""
    answers: Counter[str] = field(default_factory=Counter)
    """Every answer, by status and problem type (``503 throttled``)."""
    last_answer: dict[str, str] = field(default_factory=dict)
    """Each player's last answer, as ``answers`` counts them."""
    latencies: list[float] = field(default_factory=list)
    """Seconds from first send to the 200, of those completed."""
    throttled_calls: Counter[str] = field(default_factory=Counter)
    """What the proxy throttled, by operation and reason."""
    hottest: dict[str, float] = field(default_factory=dict)
    throttled_keys: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    on_board: int = 0
    wrong: list[str] = field(default_factory=list)
    """Every disagreement between the answers and the board or its counters (must be empty)."""

    @property
    def full_scale_rate(self) -> float:
        return self.rate / self.scale

    @property
    def share_within_deadline(self) -> float:
        return self.within_deadline / self.offered if self.offered else 0.0

    def percentile(self, q: float) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


DEPLOYED_CACHES = (
    "player_count_cache_seconds",
    "board_list_cache_seconds",
    "lease_cache_seconds",
    "definition_cache_seconds",
)
"""The per-task caches a round runs with as deployed (tests turn them off to read what they just
wrote): without them every submission would read the definition and the board's lease, keys every
submission shares, which the proxy would throttle as DynamoDB would."""


def deployed(*names: str) -> dict[str, Any]:
    """The deployed defaults of these settings (``DEPLOYED_CACHES`` by default)."""
    return {name: Settings.model_fields[name].default for name in names or DEPLOYED_CACHES}


def score(rng: random.Random) -> int:
    """A round's score: normal around 5,000 (sd 1,500)."""
    return max(0, int(rng.gauss(5000, 1500)))


async def send(
    http: httpx.AsyncClient,
    result: RoundResult,
    *,
    player: str,
    score: int,
    achieved_ms: int,
    deadline_s: float,
    rng: random.Random,
    rank_delta: bool = False,
    slow: float = 1.0,
) -> httpx.Response | bool | None:
    """One game server's submission: resent after Retry-After (times ``slow``, where the run's
    time is slowed down) until the deadline; its 200 answer, False if every attempt was turned
    away, None if it gave up after an attempt was cut at the service's deadline (it may have
    landed)."""
    key = uuid.uuid4().hex
    started = time.perf_counter()
    cut = False
    while True:
        response = await submit(
            http,
            player=player,
            score=score,
            achieved_ms=achieved_ms,
            variant="live",
            idempotency_key=key,
            rankDelta=rank_delta,
        )
        kind = ""
        if response.status_code != 200 and response.content:
            kind = " " + str(response.json().get("type", "")).rsplit("/", 1)[-1]
        result.answers[f"{response.status_code}{kind}"] += 1
        result.last_answer[player] = f"{response.status_code}{kind}"
        cut = cut or kind == " unavailable"
        waited = time.perf_counter() - started
        if response.status_code == 200:
            result.completed += 1
            result.latencies.append(waited)
            if waited <= deadline_s:
                result.within_deadline += 1
            return response
        pause = float(response.headers.get("Retry-After", "1")) * slow * (0.5 + rng.random())
        if response.status_code not in RETRIED or waited + pause > deadline_s:
            result.gave_up += 1
            result.unknown += cut
            return None if cut else False
        await asyncio.sleep(pause)


async def _seed(
    runtime: Runtime, definition: BoardDefinition, scores: dict[str, int], achieved_ms: int
) -> None:
    """The improvements' players onto the board, as the demo seeds its boards: on tables this run
    made a moment ago, its counters known absent (``SeedOptions(fresh_tables=True)``), where a
    seed through the API would first read every counter partition of every shard (20 s of a
    16-shard round's set-up on the embedded backend, none of it the round's)."""
    board = Board.from_id(BOARD)
    text = "playerId,score,achievedAt\n" + "".join(
        f"{player},{score},{iso_ms(achieved_ms)}\n" for player, score in scores.items()
    )
    seed = parse_seed_text(text, board=board, now=datetime.now(UTC), definition=definition)
    report = await runtime.leaderboard.operations.seed(
        board, seed, options=SeedOptions(fresh_tables=True)
    )
    assert report.rows_written == len(scores), report


async def run_round(
    endpoint: str,
    *,
    shards: int,
    rate: float,
    scale: float,
    seconds: float,
    improvements: bool = False,
    deadline_s: float = 10.0,
    instances: int = 2,
    table_units: float | None = None,
) -> RoundResult:
    """``rate * seconds`` submissions onto a board of ``shards``, through the throttling proxy at
    ``scale`` (with the table's quota of ``table_units`` a second, where given), sent in turn to
    ``instances`` apps (standing for ECS tasks: each takes its own share of a board's coarse
    counter keys), checked against the board afterwards."""
    result = RoundResult(shards, rate, scale, improvements)
    run = uuid.uuid4().hex[:8]
    tables = TableNames(f"hot-{run}", f"hot-snap-{run}")
    rng = random.Random(shards * 7919 + int(rate))
    players = [f"r{run[:4]}-{i:05d}" for i in range(int(rate * seconds))]
    base = now_ms() - 600_000
    async with (
        open_runtime(make_settings(endpoint, tables), create_tables=True) as runtime,
        running_proxy(endpoint, scale=scale, table_units=table_units) as (proxy_url, proxy),
    ):
        settings = make_settings(
            proxy_url,
            tables,
            periods=["alltime"],
            dynamodb_read_timeout_seconds=60,
            request_deadline_seconds=deadline_s,
            **deployed(),
        )
        # Defined ahead of the show, as an operator would (a change of shards through the API
        # holds the boards for the definition cache's time, until no task holds the old one).
        definition = BoardDefinition(periods=(PeriodKind.ALLTIME,), shards=shards)
        await runtime.stores.definitions.put_definition("trivia", "live", definition)
        async with contextlib.AsyncExitStack() as stack:
            services = [await stack.enter_async_context(serve(settings)) for _ in range(instances)]
            before: dict[str, int] = {}
            if improvements:  # the board is set up at no charge, past the proxy
                before = {p: max(0, score(rng) - 1000) for p in players}
                await _seed(runtime, definition, before, base)
            wanted = (
                {p: before[p] + score(rng) // 4 + 1 for p in players}
                if improvements
                else {p: score(rng) for p in players}
            )
            result.offered = len(players)
            accepted: dict[str, bool | None] = {}
            started = time.perf_counter()

            async def one(i: int, player: str) -> None:
                await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
                answer = await send(
                    services[i % instances].http,
                    result,
                    player=player,
                    score=wanted[player],
                    achieved_ms=base + 1000 + i,
                    deadline_s=deadline_s,
                    rng=rng,
                )
                accepted[player] = True if isinstance(answer, httpx.Response) else answer

            await asyncio.gather(*(one(i, p) for i, p in enumerate(players)))
            result.seconds = time.perf_counter() - started
            proxy.enabled = False
            result.throttled_calls = proxy.stats.throttled
            result.hottest = dict(proxy.stats.hottest)
            result.throttled_keys = proxy.stats.throttled_keys
        await check_board(runtime, result, shards, accepted, wanted, before)
        for name in (tables.scores, tables.snapshots):
            await runtime.client.delete_table(TableName=name)
    return result


async def check_board(
    runtime: Any,
    result: RoundResult,
    shards: int,
    accepted: dict[str, bool | None],
    wanted: dict[str, int],
    before: dict[str, int],
) -> None:
    """The board against the answers: every 200 on it with its score, every submission turned away
    every time not, one cut at the deadline either way, nothing else changed, and every shard's
    counters counting exactly its rows."""
    rows: dict[str, tuple[str, int]] = {}
    for item in await scores_items(runtime):
        board = item["leaderboardId"]["S"]
        if "rankKey" in item and (board == BOARD or board.startswith(BOARD + "#s")):
            rows[item["playerId"]["S"]] = (board, RankKey.decode(item["rankKey"]["S"]).score)
    result.on_board = len(rows)
    for player, ok in accepted.items():
        expected = wanted[player] if ok else before.get(player)
        found = rows.get(player)
        if ok is None and found is not None and found[1] == wanted[player]:
            expected = wanted[player]  # cut at the deadline, and it landed
        if expected is None:
            if found is not None:
                result.wrong.append(f"{player}: answered {ok}, yet on the board")
            continue
        if found is None or found[1] != expected:
            result.wrong.append(f"{player}: expected {expected}, found {found}")
        elif found[0] != player_partition(BOARD, player, shards):
            result.wrong.append(f"{player}: on {found[0]}, not its shard")
    for pid in partition_ids(BOARD, shards):
        held = sum(1 for board, _ in rows.values() if board == pid)
        coarse, fine = await counter_total(runtime, pid)
        if (coarse, fine) != (held, held):
            result.wrong.append(f"{pid}: counters {coarse}/{fine} for {held} rows")


def table(results: list[RoundResult]) -> str:
    lines = [
        "| round | k | offered (full scale: a second) | 200 within the deadline | gave up "
        "| answers | throttled by the proxy | p50 / p99 s | board and counters |",
        "| --- | ---: | --- | ---: | ---: | --- | --- | --- | --- |",
    ]
    for r in results:
        p50, p99 = r.percentile(0.5), r.percentile(0.99)
        latency = "-" if p50 is None or p99 is None else f"{p50:.2f} / {p99:.2f}"
        answers = ", ".join(f"{n} x {k}" for k, n in sorted(r.answers.items()))
        throttled = ", ".join(f"{n} x {k}" for k, n in r.throttled_calls.most_common(3)) or "0"
        lines.append(
            f"| {'improvements' if r.improvements else 'new players'} | {r.shards} "
            f"| {r.offered} at {r.rate:g}/s ({r.full_scale_rate:,.0f}/s) "
            f"| {r.within_deadline} ({100 * r.share_within_deadline:.1f}%) | {r.gave_up} "
            f"| {answers} | {throttled} | {latency} "
            f"| {'right' if not r.wrong else f'{len(r.wrong)} wrong'} |"
        )
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> list[RoundResult]:
    configure_logging(json=True, level=40, cache=False)
    structlog.contextvars.clear_contextvars()
    rounds = [(False, args.rate), (True, args.improvement_rate)]
    if not args.both:
        rounds = [rounds[1] if args.improvements else rounds[0]]
    results = []
    with EmbeddedDynamo() as endpoint:
        for improvements, rate in rounds:
            for shards in args.shards:
                result = await run_round(
                    endpoint,
                    shards=shards,
                    rate=rate,
                    scale=args.scale,
                    seconds=args.seconds,
                    improvements=improvements,
                    instances=args.instances,
                    table_units=args.table_units,
                )
                print(table([result]).splitlines()[-1], flush=True)
                print("  throttled keys:", result.throttled_keys.most_common(3), flush=True)
                results.append(result)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 16])
    parser.add_argument(
        "--rate", type=float, default=40.0, help="new players' submissions a second offered"
    )
    parser.add_argument(
        "--improvement-rate", type=float, default=16.0, help="improvements a second offered"
    )
    parser.add_argument(
        "--scale", type=float, default=0.004, help="partition rates times this (and the load)"
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--improvements", action="store_true")
    parser.add_argument("--instances", type=int, default=2, help="app instances (tasks)")
    parser.add_argument("--both", action="store_true", help="new players, then improvements")
    parser.add_argument(
        "--table-units",
        type=float,
        help="the table's quota, read and write units a second at full scale (none by default; "
        "DynamoDB's default for an on-demand table is 40000)",
    )
    parser.add_argument("--out", help="write the table here too")
    args = parser.parse_args()
    results = asyncio.run(main_async(args))
    report = table(results)
    print(report)
    if args.out:
        with open(args.out, "w") as out:
            out.write(report + "\n")


if __name__ == "__main__":
    main()
