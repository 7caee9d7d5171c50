"""Calls and critical path: every DynamoDB call a submission and a read make, in order, with the
round trips they form and what each costs by DynamoDB's rules, traced on the service's own client.

The service runs in-process on its real adapter; each call is delayed by a fixed latency (so
calls issued together overlap however the backend queues them); the tables are read whole before
and after each request, so every written item's size before and after is known.
"""

from __future__ import annotations

import asyncio
import functools
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from app.bootstrap import LAYOUT, open_runtime
from app.domain.definitions import BoardDefinition
from app.domain.models import MAX_METADATA_BYTES
from bench.harness import cost
from bench.harness.service import (
    bench_client,
    bench_settings,
    in_process,
    run_tables,
    score_body,
    submit_headers,
)
from bench.harness.trace import Call, Tracer, round_trip_levels

VARIANT = "classic"
BOARD = f"trivia/{VARIANT}/alltime"
BACKGROUND_PLAYERS = 40


@dataclass(frozen=True)
class Before:
    """The figures before this session's changes, measured from outside with a logging proxy."""

    calls: int | None
    round_trips: int | None = None
    note: str = ""


BEFORE: dict[str, Before] = {
    "new player, first time the task sees its boards": Before(30, 5),
    "new player": Before(30, 4, "24 write units by the rules"),
    "new player, rankDelta false": Before(12, 3),
    "new player, 256 B of metadata": Before(None),
    "improvement, same slot": Before(48, None, "an improvement"),
    "improvement, another slot of the bucket": Before(48, None, "an improvement"),
    "improvement, crossing buckets": Before(48, None, "an improvement"),
    "no improvement": Before(None),
    "replay": Before(8, 2),
    "409 (same key in flight, same task)": Before(8),
    "top page (25)": Before(5, None, "1 Query, 4 for the player count"),
    "rank read": Before(7, 2),
    "around": Before(9, 3),
    "standings": Before(19),
}


@dataclass
class TracedCall:
    seq: int
    operation: str
    target: str
    start_ms: float
    end_ms: float
    round_trip: int
    read_units: float
    write_units_table: float
    write_units_index: float
    backend_read_units: float
    backend_write_units: float
    read_bytes: int
    error: str | None


@dataclass
class Scenario:
    name: str
    status: int
    calls: list[TracedCall] = field(default_factory=list)

    @property
    def round_trips(self) -> int:
        return max((c.round_trip for c in self.calls), default=0)

    @property
    def read_units(self) -> float:
        return sum(c.read_units for c in self.calls)

    @property
    def write_units(self) -> float:
        return sum(c.write_units_table + c.write_units_index for c in self.calls)

    @property
    def index_write_units(self) -> float:
        return sum(c.write_units_index for c in self.calls)

    @property
    def backend_read_units(self) -> float:
        return sum(c.backend_read_units for c in self.calls)

    @property
    def backend_write_units(self) -> float:
        return sum(c.backend_write_units for c in self.calls)

    def summary(self) -> dict[str, Any]:
        before = BEFORE.get(self.name, Before(None))
        return {
            "name": self.name,
            "status": self.status,
            "calls": len(self.calls),
            "round_trips": self.round_trips,
            "read_units": self.read_units,
            "write_units": self.write_units,
            "index_write_units": self.index_write_units,
            "backend_read_units": self.backend_read_units,
            "backend_write_units": self.backend_write_units,
            "before_calls": before.calls,
            "before_round_trips": before.round_trips,
            "before_note": before.note,
            "sequence": [c.__dict__ for c in self.calls],
        }


def _traced(calls: list[Call], costs: list[cost.CallCost]) -> list[TracedCall]:
    if not calls:
        return []
    levels = round_trip_levels(calls)
    origin = min(c.start for c in calls)
    out = []
    for call, level, c in zip(calls, levels, costs, strict=True):
        out.append(
            TracedCall(
                seq=call.seq,
                operation=call.operation,
                target=call.target,
                start_ms=round((call.start - origin) * 1000, 1),
                end_ms=round(((call.end or call.start) - origin) * 1000, 1),
                round_trip=level,
                read_units=c.read,
                write_units_table=c.write_table,
                write_units_index=c.write_index,
                backend_read_units=c.backend_read,
                backend_write_units=c.backend_write,
                read_bytes=c.read_bytes,
                error=call.error,
            )
        )
    return sorted(out, key=lambda t: (t.start_ms, t.seq))


class Driver:
    """Sends one request at a time under a label, reading the tables before and after it."""

    def __init__(
        self, http: httpx.AsyncClient, tracer: Tracer, state: cost.TableState, client: Any
    ) -> None:
        self.http = http
        self.tracer = tracer
        self.state = state
        self.client = client
        self.results: list[Scenario] = []

    async def measure(
        self,
        name: str,
        send: Callable[[], Awaitable[httpx.Response]],
        expect: int = 200,
        *,
        writes: bool = True,
    ) -> Scenario:
        """``writes`` false: a read, whose calls need no table state to be costed."""
        before = await self.state.read(self.client) if writes else {}
        with self.tracer.labelled(name):
            response = await send()
        after = await self.state.read(self.client) if writes else {}
        if response.status_code != expect:
            raise RuntimeError(f"{name}: {response.status_code} {response.text[:300]}")
        calls = self.tracer.of(name)
        costs = [cost.cost_of(c, before, after, self.state.key_names) for c in calls]
        scenario = Scenario(name, response.status_code, _traced(calls, costs))
        self.results.append(scenario)
        return scenario

    async def post(self, body: dict[str, Any], key: str | None = None) -> httpx.Response:
        return await self.http.post("/v1/scores", json=body, headers=submit_headers(key))


def _next_slot_improvement(score: int) -> int:
    """The smallest better score in another fine slot of the same coarse bucket."""
    bucket, slot = LAYOUT.slot_of(score)
    better = score + 1
    while LAYOUT.slot_of(better) == (bucket, slot):
        better += 1
    if LAYOUT.slot_of(better)[0] != bucket:
        raise RuntimeError(f"{score} is the last slot of its bucket")
    return better


def _crossing_improvement(score: int) -> int:
    bucket, _ = LAYOUT.slot_of(score)
    better = score * 2
    while LAYOUT.slot_of(better)[0] == bucket:
        better *= 2
    return better


LARGEST_METADATA = {"replay": "r" * (MAX_METADATA_BYTES - len('{"replay":""}'))}
"""An entry's metadata at its bound: 256 bytes as compact JSON."""


async def run_calls(
    endpoint: str, *, latency_s: float = 0.03, shards: int = 1, summary_s: float | None = None
) -> list[Scenario]:
    """Every scenario of the calls table, in one fresh pair of tables on ``endpoint``, on boards
    of ``shards`` (above 1, the variant is defined so before the service starts). ``summary_s``:
    how long a task holds a sharded board's summary (``hot_board_summary_seconds``); given, each
    read and the new player are sent once untraced just before they are measured, so that they
    are measured on a warm summary (0: no summary, every read live)."""
    tables = run_tables("bench-calls")
    overrides = {} if summary_s is None else {"hot_board_summary_seconds": summary_s}
    settings = bench_settings(endpoint, tables, **overrides)
    warm = bool(summary_s)
    now_ms = int(time.time() * 1000)
    async with (
        open_runtime(settings, create_tables=True) as admin,
        bench_client(endpoint) as client,
        in_process(settings) as service,
    ):
        if shards > 1:
            await admin.stores.definitions.put_definition(
                "trivia", VARIANT, BoardDefinition(shards=shards)
            )
        tracer = Tracer(latency_s=latency_s, after=cost.Sizer(client).read_back)
        tracer.install(service.runtime.client)
        state = cost.TableState({tables.scores: ("playerId", "leaderboardId")})
        drive = Driver(service.http, tracer, state, client)
        base = 5_000

        def body(player: str, score: int, *, ago_ms: int = 0, **extra: Any) -> dict[str, Any]:
            achieved = _iso(now_ms - ago_ms)
            return score_body(player, score, variant=VARIANT, achievedAt=achieved, **extra)

        await drive.measure(
            "new player, first time the task sees its boards",
            lambda: drive.post(body("p-first", base - 7)),
        )
        tracer.enabled = False
        for i in range(BACKGROUND_PLAYERS):
            response = await drive.post(body(f"p-bg{i:03d}", 2_000 + 150 * i))
            response.raise_for_status()
        tracer.enabled = True

        async def warmed(send: Callable[[], Awaitable[httpx.Response]]) -> None:
            if warm:
                tracer.enabled = False
                (await send()).raise_for_status()
                tracer.enabled = True

        await warmed(lambda: drive.post(body("p-warm", base - 1)))
        await drive.measure("new player", lambda: drive.post(body("p-main", base)))
        await drive.measure(
            "new player, rankDelta false",
            lambda: drive.post(body("p-quiet", base - 3, rankDelta=False)),
        )
        await drive.measure(
            "new player, 256 B of metadata",
            lambda: drive.post(body("p-shown", base - 5, metadata=LARGEST_METADATA)),
        )
        # The same score reached earlier ranks ahead: an improvement that stays in its slot.
        await drive.measure(
            "improvement, same slot", lambda: drive.post(body("p-main", base, ago_ms=1_000))
        )
        next_slot = _next_slot_improvement(base)
        await drive.measure(
            "improvement, another slot of the bucket",
            lambda: drive.post(body("p-main", next_slot)),
        )
        crossing = _crossing_improvement(next_slot)
        await drive.measure(
            "improvement, crossing buckets", lambda: drive.post(body("p-main", crossing))
        )
        worse = body("p-main", 100)
        key = uuid.uuid4().hex
        await drive.measure(
            "no improvement",
            lambda: drive.http.post("/v1/scores", json=worse, headers=submit_headers(key)),
        )
        await drive.measure(
            "replay",
            lambda: drive.http.post("/v1/scores", json=worse, headers=submit_headers(key)),
        )
        await drive.measure(
            "409 (same key in flight, same task)",
            lambda: _second_while_first_runs(drive, body("p-twice", base + 11)),
            expect=409,
        )
        reads: list[tuple[str, str]] = [
            ("top page (25)", f"/v1/leaderboards/{BOARD}"),
            ("rank read", f"/v1/leaderboards/{BOARD}/players/p-main"),
            ("around", f"/v1/leaderboards/{BOARD}/players/p-main/around"),
            ("standings", "/v1/players/p-main/standings"),
        ]
        for name, url in reads:
            await warmed(functools.partial(drive.http.get, url))
            await drive.measure(name, functools.partial(drive.http.get, url), writes=False)
        for name in (tables.scores, tables.snapshots):
            await admin.client.delete_table(TableName=name)
    return drive.results


async def _second_while_first_runs(drive: Driver, body: dict[str, Any]) -> httpx.Response:
    """The same request twice on one task, the second sent while the first is in flight: the
    second is answered (a 409) from memory. Only the second is under the caller's label."""
    key = uuid.uuid4().hex
    first_label = "409: the first request"
    with drive.tracer.labelled(first_label):
        first = asyncio.create_task(
            drive.http.post("/v1/scores", json=body, headers=submit_headers(key))
        )
    for _ in range(2_000):  # until the first has made a call: 2 s at most
        if drive.tracer.of(first_label):
            break
        await asyncio.sleep(0.001)
    second = await drive.http.post("/v1/scores", json=body, headers=submit_headers(key))
    (await first).raise_for_status()
    return second


def _iso(ms: int) -> str:
    from app.domain.clock import iso_ms

    return iso_ms(ms)
