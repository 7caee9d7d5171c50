"""What cohorts cost (DESIGN.md section 16, decision 0039): the DynamoDB calls, the round trips
they form and the read and write units by DynamoDB's rules of a join, a submission and the reads
on a variant cut into cohorts, beside the same requests on an ordinary variant (the baseline),
traced on the service's own client as the benchmarks' calls part traces them
(``bench.harness.calls``: the real app and adapter, in process, on the embedded backend).

    python3 tools/uv.py run --frozen --all-groups python -m bench.cohort_costs [--out FILE.json]

Three variants of ``trivia``, each with the default periods (alltime, day, week: a submission
goes to three period boards, as in the calls part):

- ``ordinary``: defined with none of the section's fields;
- ``cohorts``: ``cohortSize`` 50, players placed by their first submission;
- ``cup``: ``cohortSize`` 50, ``joinRequired``, ``maxEntrants`` 1,000, ``maxAttempts`` 10; its
  players join each period board before they submit (the week's join is the one measured).

Each board holds 20 players first (sent untraced); every read is sent once untraced just before
it is measured, so each is measured warm (a top page's coarse counts already read by the task).
The boards are small, so a COUNT's units are a small board's; the calls and round trips are any
board's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import structlog

from app.bootstrap import open_runtime
from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from bench.harness import cost
from bench.harness.calls import Driver, Scenario
from bench.harness.cli import _commit
from bench.harness.service import (
    ADMIN_KEY,
    SUBMIT_KEY,
    bench_client,
    bench_settings,
    in_process,
    run_tables,
    score_body,
    submit_headers,
)
from bench.harness.trace import Tracer

PERIODS = ("alltime", "day", "week")
JOINED_PERIOD = "week"
BACKGROUND_PLAYERS = 20


@dataclass(frozen=True)
class Variant:
    name: str
    fields: dict[str, Any]

    @property
    def joins(self) -> bool:
        """Its players join before they submit (``joinRequired``)."""
        return bool(self.fields.get("joinRequired"))

    @property
    def cohorts(self) -> bool:
        return "cohortSize" in self.fields


VARIANTS = (
    Variant("ordinary", {}),
    Variant("cohorts", {"cohortSize": 50}),
    Variant(
        "cup", {"cohortSize": 50, "joinRequired": True, "maxEntrants": 1000, "maxAttempts": 10}
    ),
)

ROWS = (
    "join (201)",
    "join again (200)",
    "first submission",
    "improvement",
    "rank read",
    "top page (25)",
    "cohort's top page",
)
"""The requests, in the order they are measured; a variant leaves out the ones it has not (an
ordinary variant takes no joins and has no cohorts)."""

Figures = dict[str, dict[str, dict[str, Any]]]
"""Variant, then request, then ``Scenario.summary()``."""


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


class Requests:
    """The service's routes, as a game server and a viewer send them."""

    def __init__(self, http: httpx.AsyncClient, variant: Variant) -> None:
        self.http = http
        self.variant = variant
        self.base = f"/v1/leaderboards/trivia/{variant.name}"

    async def define(self) -> None:
        sent = await self.http.put(
            f"/v1/games/trivia/variants/{self.variant.name}",
            json={"periods": list(PERIODS), **self.variant.fields},
            headers=_auth(ADMIN_KEY),
        )
        sent.raise_for_status()

    def join(self, player: str, period: str = JOINED_PERIOD) -> Awaitable[httpx.Response]:
        return self.http.post(f"{self.base}/{period}/entrants/{player}", headers=_auth(SUBMIT_KEY))

    async def join_all(self, player: str, *, but: str | None = None) -> None:
        for period in PERIODS:
            if period != but:
                (await self.join(player, period)).raise_for_status()

    def submit(self, player: str, score: int) -> Awaitable[httpx.Response]:
        body = score_body(player, score, variant=self.variant.name)
        return self.http.post("/v1/scores", json=body, headers=submit_headers())

    def read(self, path: str) -> Callable[[], Awaitable[httpx.Response]]:
        return lambda: self.http.get(f"{self.base}/{JOINED_PERIOD}{path}")


async def _measure_variant(drive: Driver, requests: Requests) -> dict[str, Scenario]:
    variant, tracer = requests.variant, drive.tracer
    await requests.define()
    tracer.enabled = False
    for i in range(BACKGROUND_PLAYERS):
        if variant.joins:
            await requests.join_all(f"bg{i:02d}")
        (await requests.submit(f"bg{i:02d}", 1_000 + 10 * i)).raise_for_status()
    tracer.enabled = True
    found: dict[str, Scenario] = {}

    async def measure(
        name: str, send: Callable[[], Awaitable[httpx.Response]], expect: int = 200
    ) -> None:
        reads = name in {"rank read", "top page (25)", "cohort's top page"}
        if reads:
            tracer.enabled = False
            (await send()).raise_for_status()
            tracer.enabled = True
        label = f"{variant.name}: {name}"
        found[name] = await drive.measure(label, send, expect, writes=not reads)

    if variant.cohorts or variant.joins:
        await measure("join (201)", lambda: requests.join("ann"), expect=201)
        await measure("join again (200)", lambda: requests.join("ann"))
    # On the cup, the player who joined (the other period boards too, untraced); elsewhere one
    # who did not: placed by their first submission, as players of a variant without joins are.
    player = "ann" if variant.joins else "bea"
    if variant.joins:
        tracer.enabled = False
        await requests.join_all(player, but=JOINED_PERIOD)
        tracer.enabled = True
    await measure("first submission", lambda: requests.submit(player, 5_000))
    await measure("improvement", lambda: requests.submit(player, 6_000))
    await measure("rank read", requests.read(f"/players/{player}"))
    await measure("top page (25)", requests.read(""))
    if variant.cohorts:
        await measure("cohort's top page", requests.read("/cohorts/1"))
    return found


async def measure(endpoint: str, *, latency_s: float = 0.03) -> Figures:
    """Every variant's requests, in one fresh pair of tables on ``endpoint``."""
    tables = run_tables("bench-cohorts")
    settings = bench_settings(endpoint, tables)
    async with (
        open_runtime(settings, create_tables=True) as admin,
        bench_client(endpoint) as client,
        in_process(settings) as service,
    ):
        tracer = Tracer(latency_s=latency_s, after=cost.Sizer(client).read_back)
        tracer.install(service.runtime.client)
        state = cost.TableState({tables.scores: ("playerId", "leaderboardId")})
        drive = Driver(service.http, tracer, state, client)
        figures: Figures = {}
        for variant in VARIANTS:
            found = await _measure_variant(drive, Requests(service.http, variant))
            figures[variant.name] = {name: s.summary() for name, s in found.items()}
        for name in (tables.scores, tables.snapshots):
            await admin.client.delete_table(TableName=name)
    return figures


def _units(value: float) -> str:
    return f"{value:g}"


def table(figures: Figures) -> str:
    """One row a request, one group of columns a variant: calls in round trips, read units,
    write units (of which RankIndex's)."""
    names = list(figures)
    lines = [
        "| request | "
        + " | ".join(f"{v}: calls in round trips | read units | write units (index)" for v in names)
        + " |",
        "| --- | " + " | ".join("---: | ---: | ---:" for _ in names) + " |",
    ]
    for row in ROWS:
        cells = []
        for v in names:
            s = figures[v].get(row)
            if s is None:
                cells.append("- | - | -")
                continue
            cells.append(
                f"{s['calls']} in {s['round_trips']} | {_units(s['read_units'])} "
                f"| {_units(s['write_units'])} ({_units(s['index_write_units'])})"
            )
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


async def main_async() -> Figures:
    configure_logging(json=True, level=40, cache=False)
    structlog.contextvars.clear_contextvars()
    with EmbeddedDynamo() as endpoint:
        return await measure(endpoint)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="every request's figures and calls, as JSON")
    args = parser.parse_args()
    figures = asyncio.run(main_async())
    print(table(figures))
    if args.out:
        run = {
            "command": "python -m bench.cohort_costs --out " + args.out,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
            "commit": _commit(),
            "latency_ms": 30,
        }
        with open(args.out, "w") as out:
            json.dump({"run": run, "figures": figures}, out, indent=1)


if __name__ == "__main__":
    main()
