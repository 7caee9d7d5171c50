"""A rank read answered from a task's mirror beside a ``/healthz`` request: the service's CPU for
each, measured side by side in one run.

The service runs as ``leaderboard serve`` runs it (``bench.harness.served``: a process of its own,
uvicorn with uvloop and httptools) with its settings as deployed (``hot_board_summary_seconds`` of
1 s: it keeps a mirror of each hot board), against the embedded backend directly. A variant of
``shards`` shards gets a board of ``players``; once the service answers ranks from its mirror, the
harness sends a rank read of a random player and a ``/healthz`` in turn (which goes first
alternates), one request at a time, and reads the service process's CPU-time clock around each
(and ``SETTLE_S`` after it, for what the request leaves to the loop). The embedded backend (its
own process) and the harness are not counted; the rank read's one call (the player's own row)
is, as the service's client makes it.

The mirror's refreshes (once every half second while ranks are asked, in the background) land in
whichever request's window they overlap (a rank read's or a ``/healthz``'s), or between them;
what falls between is reported apart (``upkeep_ms_a_second``: the service's CPU over the run,
less every measured window, a second). The medians (``*_median_ms``) leave out the windows a
refresh fell in.

``profile`` runs the same rank reads in this process under cProfile (the app through its
lifespan, an ASGI client; that client's own work is in the profile too, under httpx) and returns
the functions that took most of the time spent in themselves.
"""

from __future__ import annotations

import asyncio
import cProfile
import csv
import io
import pstats
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from app.bootstrap import open_runtime
from app.domain.clock import iso_ms
from app.domain.definitions import BoardDefinition
from app.domain.periods import PeriodKind
from app.services.ranking.mirror import HotBoardMirrors
from app.settings import Settings
from app.telemetry import REGISTRY
from bench.harness.overhead import ratio_interval
from bench.harness.process import ServedService, cpu_seconds
from bench.harness.replay import SETTLE_S
from bench.harness.service import ADMIN_KEY, GAME, bench_settings, in_process, run_tables

VARIANT = "mirrorcpu"
BOARD_PATH = f"/v1/leaderboards/{GAME}/{VARIANT}/alltime"
MIRRORED = "leaderboard_ranks_from_mirror_total"
WITHIN = {
    "the DynamoDB call (aiobotocore's _make_api_call)": ("aiobotocore", "_make_api_call"),
    "the route (get_player_rank)": ("app/api/reads", "get_player_rank"),
    "the ranks (Ranking.rank_many_at)": ("app/services/ranking", "rank_many_at"),
    "the mirror's own (HotBoardMirrors.rank)": ("app/services/ranking/mirror", "rank"),
}
"""Functions whose time, theirs and that of all they call (cProfile's cumulative: approximate
for coroutines, whose every resumption counts as a call), is reported as a share."""


def _seed_csv(players: list[str], rng: random.Random) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["playerId", "score", "achievedAt"])
    at = iso_ms(int(time.time() * 1000) - 600_000)
    for player in players:
        writer.writerow([player, max(0, int(rng.gauss(5000, 1500))), at])
    return out.getvalue()


def _metric(http: httpx.Client, name: str) -> float:
    for line in http.get("/metrics").text.splitlines():
        if line.startswith((name + " ", name + "{")):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _warm(get: Callable[[str], httpx.Response], players: list[str]) -> None:
    """Until a rank comes from the mirror (its answer says when the mirror read the board)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        response = get(f"{BOARD_PATH}/players/{players[0]}")
        if response.status_code == 200 and "Leaderboard-Read-At" in response.headers:
            return
        time.sleep(0.2)
    raise RuntimeError("the service's mirror never answered a rank")


def _cpu_of(pid: int, send: Callable[[], httpx.Response]) -> float:
    before = cpu_seconds(pid)
    response = send()
    time.sleep(SETTLE_S)
    spent = cpu_seconds(pid) - before
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text}")
    return spent


def _alternate(served: ServedService, players: list[str], requests: int) -> dict[str, Any]:
    rng = random.Random(7)
    with httpx.Client(base_url=served.url, timeout=60) as http:
        _warm(http.get, players)
        for _ in range(20):  # warm-up, not measured
            http.get(f"{BOARD_PATH}/players/{rng.choice(players)}")
            http.get("/healthz")
        mirrored = _metric(http, MIRRORED)
        started_cpu, started = cpu_seconds(served.pid), time.perf_counter()
        pairs: list[tuple[float, float]] = []
        for i in range(requests):
            player = rng.choice(players)

            def rank(p: str = player) -> float:
                return _cpu_of(served.pid, lambda: http.get(f"{BOARD_PATH}/players/{p}"))

            def health() -> float:
                return _cpu_of(served.pid, lambda: http.get("/healthz"))

            if i % 2:
                healthz_cpu = health()
                rank_cpu = rank()
            else:
                rank_cpu = rank()
                healthz_cpu = health()
            pairs.append((rank_cpu, healthz_cpu))
        wall = time.perf_counter() - started
        total = cpu_seconds(served.pid) - started_cpu
        from_mirror = _metric(http, MIRRORED) - mirrored
    rank_ms = 1000 * sum(r for r, _ in pairs) / requests
    healthz_ms = 1000 * sum(h for _, h in pairs) / requests
    rank_median = 1000 * statistics.median(r for r, _ in pairs)
    healthz_median = 1000 * statistics.median(h for _, h in pairs)
    interval = ratio_interval(pairs)
    between = max(0.0, total - sum(r + h for r, h in pairs))
    return {
        "requests": requests,
        "rank_ms": round(rank_ms, 3),
        "healthz_ms": round(healthz_ms, 3),
        "ratio": round(rank_ms / healthz_ms, 2) if healthz_ms else None,
        "ratio_interval": None if interval is None else [round(x, 2) for x in interval],
        "rank_median_ms": round(rank_median, 3),
        "healthz_median_ms": round(healthz_median, 3),
        "median_ratio": round(rank_median / healthz_median, 2) if healthz_median else None,
        "ranks_from_mirror": int(from_mirror),
        "upkeep_ms_a_second": round(1000 * between / wall, 2),
        "seconds": round(wall, 1),
    }


async def _board(endpoint: str, shards: int, players: int) -> tuple[Settings, list[str]]:
    """Tables with the variant defined, and the settings (as deployed) to serve them."""
    tables = run_tables("mirror-cpu")
    settings = bench_settings(endpoint, tables)
    async with open_runtime(settings, create_tables=True) as runtime:
        await runtime.stores.definitions.put_definition(
            GAME, VARIANT, BoardDefinition(periods=(PeriodKind.ALLTIME,), shards=shards)
        )
    return settings, [f"cpu-{i:06d}" for i in range(players)]


def _seed(url: str, players: list[str]) -> None:
    response = httpx.post(
        f"{url}{BOARD_PATH}/seed",
        params={"graceSeconds": 0},
        content=_seed_csv(players, random.Random(11)),
        headers={"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "text/csv"},
        timeout=600,
    )
    if response.status_code != 200:
        raise RuntimeError(f"seeding: {response.status_code} {response.text}")


async def _drop(settings: Settings) -> None:
    async with open_runtime(settings) as runtime:
        for name in (settings.scores_table, settings.snapshots_table):
            await runtime.client.delete_table(TableName=name)


def measure(endpoint: str, *, shards: int, players: int, requests: int) -> dict[str, Any]:
    """The rank reads' CPU beside ``/healthz``'s (``requests`` of each, in turn), and where it
    goes (``profile``)."""
    settings, ids = asyncio.run(_board(endpoint, shards, players))
    try:
        with tempfile.TemporaryDirectory() as workdir:
            served = ServedService(settings, Path(workdir), name="mirror-cpu")
            with served:
                _seed(served.url, ids)
                found = _alternate(served, ids, requests)
        found["profile"] = asyncio.run(profile(settings, ids, requests))
    finally:
        asyncio.run(_drop(settings))
    found.update(
        shards=shards,
        players=players,
        note="the service's own process, served as deployed; the embedded backend's CPU (its "
        "own process) is not counted, the rank read's one call from the service is",
    )
    return found


async def profile(settings: Settings, players: list[str], requests: int) -> dict[str, Any]:
    """Where ``requests`` rank reads from a warm mirror spend their CPU (the app in this
    process, under cProfile on the process's CPU clock): the functions that took most in
    themselves, and that time summed by package. The mirror is kept a minute here (a refresh
    slowed down by the profiler would otherwise outlast the second a mirror may be old, and the
    reads would go live): the profile is of a read from the mirror, not of its upkeep."""
    rng = random.Random(5)
    async with in_process(settings) as app:
        runtime = app.runtime
        ranking = runtime.leaderboard.ranking
        await ranking.mirrors.close()
        ranking.mirrors = HotBoardMirrors(
            runtime.stores, runtime.policies.ranking.layout, max_age_s=60.0
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            response = await app.http.get(f"{BOARD_PATH}/players/{players[0]}")
            if "Leaderboard-Read-At" in response.headers:
                break
            await ranking.mirrors.settled()
        mirrored = REGISTRY.get_sample_value(MIRRORED) or 0.0
        profiler = cProfile.Profile(time.process_time)
        started = time.process_time()
        profiler.enable()
        for _ in range(requests):
            await app.http.get(f"{BOARD_PATH}/players/{rng.choice(players)}")
        profiler.disable()
        spent = time.process_time() - started
        from_mirror = (REGISTRY.get_sample_value(MIRRORED) or 0.0) - mirrored
        healthz = cProfile.Profile(time.process_time)
        started = time.process_time()
        healthz.enable()
        for _ in range(requests):
            await app.http.get("/healthz")
        healthz.disable()
        healthz_spent = time.process_time() - started
    entries: dict[Any, Any] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in entries.values()) or 1.0
    by_package: dict[str, float] = {}
    for (file, _, _), row in entries.items():
        package = _package(file)
        by_package[package] = by_package.get(package, 0.0) + row[2]
    top = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:20]
    within = {
        label: round(
            max(
                (row[3] for (f, _, n), row in entries.items() if n == name and part in f), default=0
            )
            / total,
            3,
        )
        for label, (part, name) in WITHIN.items()
    }
    return {
        "requests": requests,
        "ranks_from_mirror": int(from_mirror),
        "cpu_ms_a_read_profiled": round(1000 * spent / requests, 3),
        "cpu_ms_a_healthz_profiled": round(1000 * healthz_spent / requests, 3),
        "within": within,
        "by_package": [
            {"package": name, "own_share": round(t / total, 3)}
            for name, t in sorted(by_package.items(), key=lambda kv: kv[1], reverse=True)[:15]
        ],
        "functions": [
            {
                "function": f"{_package(file)}:{Path(file).name}:{line}({name})",
                "own_share": round(row[2] / total, 3),
                "calls_a_read": round(row[1] / requests, 1),
            }
            for (file, line, name), row in top
        ],
    }


def _package(file: str) -> str:
    """Who a profiled function belongs to: an installed package, the service's own module
    (``app.store``...), the standard library, or built-in code (``~``)."""
    if file == "~":
        return "~"
    parts = Path(file).parts
    if "site-packages" in parts:
        return parts[parts.index("site-packages") + 1].removesuffix(".py")
    if "app" in parts:
        at = parts.index("app")
        return ".".join(parts[at : at + 3]).removesuffix(".py")
    if "tests" in parts or "bench" in parts:
        return "bench"
    return "stdlib"
