"""A show end to end: a round of submissions with ``rankDelta`` on, then every player of the
board asking their rank, through a proxy that throttles as DynamoDB does.

The real service (two app instances in this process, standing for two tasks, with the settings
as deployed: the per-task caches and ``hot_board_summary_seconds`` of 1 s, so each task keeps a
mirror of the hot board) runs against ``bench.partition_proxy`` in front of the embedded backend
(moto, its Queries costing the partition: ``app.local.moto_runner``), at DynamoDB's rates per partition
key and the table's default quota of 40,000 read and 40,000 write units a second, all times
``scale`` (1/250 by default), the load scaled alike:

- **the board**: ``100,000 x scale`` players (400), seeded at no charge (the proxy off), on a
  variant of ``shards`` shards and one period (all-time), as a show's variant is defined; each
  task's mirror of it read before the round, as a show's tasks hold theirs when a round starts;
- **the round** (``phase: submit``): every player of the board sends one improvement of their
  score (the bad case for the write path: each moves its index entry and its counters), evenly
  paced at ``10,000 x scale`` a second (40), ``rankDelta`` on, each with an Idempotency-Key and
  again after ``Retry-After`` on a 503, 409 or 429 until ``deadline_s`` (10 s) after its first
  send. The round ends when the last submission has its answer (or gave up): the board is still
  from then on;
- **the read storm** (``phase: read``): from the round's end, every player of the board GETs
  their rank (``/v1/leaderboards/trivia/live/alltime/players/{id}``), their requests spread
  evenly over ``read_spread_s`` (2.5 s) in a shuffled order, each again after ``Retry-After``
  until 5 s after the round's end; ``answered_within_5s`` counts the 200s by then.
  ``--no-mirror`` runs the same storm twice more on the still board, each on fresh instances:
  with the mirror off and the summary as deployed (``reads: summary``: the service as it was
  before the mirror), and with every read live (``reads: live``).

**Checked.** Every answer is checked against the board, read whole past the proxy afterwards:
an exact rank must equal the player's true rank (1 plus the players whose rank key sorts before
theirs), a range must hold it. A rank is exact as of the moment it states
(``Leaderboard-Read-At``, or for an answer without one, its request less the summary's age);
where that moment precedes the end of the round, the players whose submission was in flight
between then and the answer may be counted at either score (``Timeline.possible_ranks``), and
off by the contract's ``MOVING_PLACES`` at most (``off_by_moving``, counted apart). ``wrong``
counts the others, and for the round every submission answered 200 that is not on the board with
its score, every one refused that left a mark, and every shard's counters that do not count its
rows (``bench.hot_round``'s check); a submission given up after an answer that does not say
whether it was written (a 503 past the request's deadline) may be either (``unsure``).

**What it costs.** The proxy sums the read units each phase charged, by the kind of key and by
what the calls were for (the round's submissions, the storm's reads, the tasks' upkeep: each
mirror's refreshes, marked here). ``read_units_per_rank_read`` is every read unit of a read
phase over the reads answered; ``read_units_per_task_second`` the mirrors' refreshes' units a
task a second, as read here and were the board full size (``..._full_scale``: the index's reads
grow with the board, the counters' do not). A task's upkeep is a number of calls a second
whatever the scale, where every rate is scaled down: the proxy charges it as the full-size read
times the scale (the two instances then stand for two tasks at full scale; ``--fleet N`` for N).

**The rig.** It says whether its own machinery was the binding constraint (``rig_saturated``):
the embedded backend serves one call at a time, so the share of the phase during which it had a
call of the proxy's in flight is its busy share (at ``BUSY_LIMIT`` and over, a call's wait for
the backend passes its service time and the figures are the backend's, not the service's); and
the apps, the proxy and the clients share one event loop, whose lag (a 10 ms sleep's overshoot)
every request waits besides its own work (at ``LAG_LIMIT_S`` and over, the rig's share of a
read's latency is a fifth of its deadline). The machine's CPU use and pressure (the other work on
it) are recorded beside them. Where the rig saturates, ``--slow F`` runs the same show F times
slower: every rate divided by F, every time (the mirror's age and settling, the caches, the
deadlines, the spread, the pauses before a retry, the buckets' banks) multiplied by it, so that
the tasks' upkeep asks the backend F times less a second; the figures are reported in the
show's own seconds.

``--cpu N`` also times N rank reads from a warm mirror beside N ``/healthz`` requests, in a
served process of the service's own (``bench.harness.mirror_cpu``), and profiles where a rank
read's CPU goes.

    python3 tools/uv.py run --frozen --all-groups python -m bench.show --shards 1 16 \\
        [--scale 0.004] [--slow 20] [--no-mirror] [--cpu 300] [--json OUT] [--out TABLE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import random
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import httpx
import structlog

from app.bootstrap import Runtime, open_runtime
from app.domain.definitions import BoardDefinition
from app.domain.periods import PeriodKind
from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from app.services.ranking.mirror import BoardMirror, HotBoardMirrors
from app.settings import Settings
from app.store.tables import TableNames
from app.telemetry import REGISTRY
from bench.harness import mirror_cpu
from bench.hot_round import (
    BOARD,
    BOARD_PATH,
    DEPLOYED_CACHES,
    RETRIED,
    RoundResult,
    check_board,
    deployed,
    score,
    send,
)
from bench.partition_proxy import (
    PURPOSE_HEADER,
    TABLE_UNITS,
    UPKEEP,
    PartitionProxy,
    ProxyStats,
    running_proxy,
)
from tests.conftest import Service, make_settings, serve
from tests.support import now_ms, scores_items, seed_csv

FULL_RATE = 10_000
"""Submissions a second of the round, at full scale."""
FULL_PLAYERS = 100_000
"""Players of the board, at full scale."""
READ_DEADLINE_S = 5.0
BUSY_LIMIT = 0.8
"""The backend's busy share at which the rig counts as saturated: a single server busy 80% of
the time makes a call wait on average four times its service time (M/M/1), and the wait grows
without bound past it."""
LAG_LIMIT_S = 0.1
"""The event loop's 99th percentile lag at which the rig counts as saturated: a rank read awaits
the loop about ten times (the request, the app's awaits, the call through the proxy and back), so
a lag of 0.1 s at each is a second of the rig's own, a fifth of the read's deadline."""
SETTLE_S = float(inspect.signature(HotBoardMirrors).parameters["settle_s"].default)
"""How long a mirror reads a bucket again after it moved (the service's own, as deployed)."""
UNTHROTTLED = "-unthrottled"
MODES = ("mirror", "summary", "live", "summary" + UNTHROTTLED, "live" + UNTHROTTLED)
"""The read phases: as deployed (the mirror), the mirror off (the summary as deployed: the service
before the mirror), every read live (``hot_board_summary_seconds`` 0); and the last two again
with the proxy charging every call and refusing none (what each rank read costs when it is
answered, where the storm throttled spends units on reads that end refused). The unthrottled
come last: they leave the buckets overdrawn."""
_FOR: ContextVar[str] = ContextVar("bench_show_for", default="other")
"""What the calls made in this context are for, said to the proxy (``PURPOSE_HEADER``): the
round's submissions (``submit``), the storm's reads (``read``), a mirror's refresh (``upkeep``),
anything else (``other``: what a phase's requests left running in the background, as a tie
build). Each request sets it in its own task, which the app serves it in (an ASGI call in
process), and the tasks it starts inherit it."""


def _mark_purpose(request: Any, **_: Any) -> None:
    """botocore's ``before-sign`` hook on each app's client."""
    request.headers[PURPOSE_HEADER] = _FOR.get()


@contextlib.contextmanager
def upkeep_marked() -> Iterator[None]:
    """While it lasts, a mirror's refresh (``BoardMirror.refresh``, in this process) runs as
    ``upkeep``, in its own task and those it starts."""
    original = BoardMirror.refresh

    async def refresh(self: BoardMirror, *args: Any, **kwargs: Any) -> int:
        _FOR.set(UPKEEP)
        return await original(self, *args, **kwargs)

    BoardMirror.refresh = refresh  # type: ignore[method-assign]
    try:
        yield
    finally:
        BoardMirror.refresh = original  # type: ignore[method-assign]


# ---- the rig's own load -------------------------------------------------------------------------


@dataclass
class Rig:
    """What the rig itself spent during a phase."""

    backend_busy: float
    """The share of the phase the backend had a call of the proxy's in flight."""
    loop_lag_p50_s: float
    loop_lag_p99_s: float
    loop_lag_max_s: float
    rig_cpu: float
    """The rig process's CPU seconds (the apps, the proxy, the clients) a second of the phase."""
    lag_limit_s: float = LAG_LIMIT_S
    """``LAG_LIMIT_S``, times the show's ``slow``."""
    machine_busy: float | None = None
    """The machine's CPUs' busy share (``/proc/stat``): the other work on it counts here."""
    machine_cpu_pressure: float | None = None
    """The share of the phase some runnable task waited for a CPU (``/proc/pressure/cpu``)."""

    @property
    def saturated(self) -> bool:
        return self.backend_busy >= BUSY_LIMIT or self.loop_lag_p99_s >= self.lag_limit_s

    def summary(self) -> dict[str, Any]:
        return {
            "backend_busy": round(self.backend_busy, 3),
            "loop_lag_p50_s": round(self.loop_lag_p50_s, 4),
            "loop_lag_p99_s": round(self.loop_lag_p99_s, 4),
            "loop_lag_max_s": round(self.loop_lag_max_s, 4),
            "rig_cpu": round(self.rig_cpu, 3),
            "machine_busy": _round(self.machine_busy),
            "machine_cpu_pressure": _round(self.machine_cpu_pressure),
            "saturated": self.saturated,
        }


class RigMonitor:
    """The event loop's lag, sampled every 10 ms, and the backend's busy time from the proxy."""

    PERIOD_S = 0.01

    def __init__(self, proxy: PartitionProxy) -> None:
        self._proxy = proxy
        self._lags: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self._started = (0.0, 0.0, 0.0, 0)
        self._machine: tuple[tuple[int, int] | None, int | None] = (None, None)

    async def _sample(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(self.PERIOD_S)
            self._lags.append(max(0.0, time.perf_counter() - before - self.PERIOD_S))

    def begin(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._sample())
        self._started = (
            time.perf_counter(),
            time.process_time(),
            self._proxy.busy_seconds(),
            len(self._lags),
        )
        self._machine = (_cpu_ticks(), _cpu_waited_us())

    def end(self, *, lag_limit_s: float = LAG_LIMIT_S) -> Rig:
        wall0, cpu0, busy0, lags0 = self._started
        wall = max(1e-9, time.perf_counter() - wall0)
        lags = sorted(self._lags[lags0:]) or [0.0]
        ticks0, waited0 = self._machine
        ticks, waited = _cpu_ticks(), _cpu_waited_us()
        busy = None
        if ticks0 is not None and ticks is not None and ticks[1] > ticks0[1]:
            busy = (ticks[0] - ticks0[0]) / (ticks[1] - ticks0[1])
        pressure = None
        if waited0 is not None and waited is not None:
            pressure = (waited - waited0) / 1e6 / wall
        return Rig(
            backend_busy=(self._proxy.busy_seconds() - busy0) / wall,
            loop_lag_p50_s=lags[len(lags) // 2],
            loop_lag_p99_s=lags[min(len(lags) - 1, int(0.99 * len(lags)))],
            loop_lag_max_s=lags[-1],
            rig_cpu=(time.process_time() - cpu0) / wall,
            lag_limit_s=lag_limit_s,
            machine_busy=busy,
            machine_cpu_pressure=pressure,
        )

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _cpu_ticks() -> tuple[int, int] | None:
    """The machine's CPU time so far, busy and all, in ticks (``/proc/stat``)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def _cpu_waited_us() -> int | None:
    """Microseconds so far during which some runnable task waited for a CPU (Linux's PSI)."""
    try:
        first = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    return int(first.rsplit("total=", 1)[1])


def _mirror_metrics() -> dict[str, float]:
    """The process's mirror counters (both instances' together: they share the registry)."""

    def value(name: str, **labels: str) -> float:
        return REGISTRY.get_sample_value(name, labels) or 0.0

    return {
        "ranks_from_mirror": value("leaderboard_ranks_from_mirror_total"),
        "refreshes_ok": value("leaderboard_hot_board_mirror_refreshes_total", outcome="ok"),
        "refreshes_failed": value("leaderboard_hot_board_mirror_refreshes_total", outcome="failed"),
        "buckets_read": value("leaderboard_hot_board_mirror_buckets_read_total"),
    }


# ---- the board's history, for the check --------------------------------------------------------


MOVING_PLACES = 3
"""The contract's allowance (DESIGN.md 13, docs/scale.md): an answer is exact as of its moment,
save that another player who moved within the second it stands on may put it off by up to three
places (a mirror reads its shards' buckets one after another, and may see a player that moved
between two of them at both places or at neither)."""


class Possible(NamedTuple):
    """The ranks a player's answer may rightly say."""

    low: int
    high: int
    moving: int
    """Other players whose submission was in flight meanwhile."""

    def judge(self, first: int, last: int | None = None) -> str:
        """``right``, ``moving`` (off by no more than ``MOVING_PLACES``, and no more than the
        players moving) or ``wrong``: for an exact rank, or a range ``first..last``."""
        last = first if last is None else last
        if first <= self.high and last >= self.low:
            return "right"
        slack = min(MOVING_PLACES, self.moving)
        if first <= self.high + slack and last >= self.low - slack:
            return "moving"
        return "wrong"

    def __str__(self) -> str:
        said = f"{self.low}" + (f"..{self.high}" if self.high != self.low else "")
        return said + (f" ({self.moving} moving)" if self.moving else "")


@dataclass
class Timeline:
    """Each player's rank key before the round and after it, and when their submission was in
    flight (wall-clock seconds: its first send, its 200)."""

    before: dict[str, str] = field(default_factory=dict)
    after: dict[str, str] = field(default_factory=dict)
    moved: dict[str, tuple[float, float]] = field(default_factory=dict)

    def possible_ranks(self, player: str, key: str, start: float, end: float) -> Possible:
        """The ranks ``player`` at ``key`` may have had as of any moment between ``start`` and
        ``end``: every other player counted at each key they may have held meanwhile."""
        ahead = maybe = moving = 0
        for other in self.before.keys() | self.after.keys():
            if other == player:
                continue
            old, new = self.before.get(other), self.after.get(other)
            window = self.moved.get(other)
            if window is None or old == new:
                held: tuple[str | None, ...] = (new,)
            elif window[1] <= start:
                held = (new,)
            elif window[0] >= end:
                held = (old,)
            else:
                held = (old, new)
                moving += 1
            better = sum(1 for k in held if k is not None and k < key)
            ahead += better == len(held)
            maybe += better > 0
        return Possible(1 + ahead, 1 + maybe, moving)


async def board_keys(runtime: Runtime) -> dict[str, str]:
    """Every player's rank key on the show's board (every shard), read past the proxy."""
    keys: dict[str, str] = {}
    for item in await scores_items(runtime):
        board = item["leaderboardId"]["S"]
        if "rankKey" in item and (board == BOARD or board.startswith(BOARD + "#s")):
            keys[item["playerId"]["S"]] = item["rankKey"]["S"]
    return keys


# ---- a phase ------------------------------------------------------------------------------------


@dataclass
class ReadAnswer:
    player: str
    sent: float
    """Wall-clock seconds of the first request."""
    answered: float
    read_at: float | None
    rank: int | None
    rank_range: tuple[int, int] | None


@dataclass
class Phase:
    shards: int
    phase: str
    """``submit`` or ``read``."""
    reads: str
    """How the ranks were read: ``mirror`` (as deployed), ``summary`` or ``live``."""
    instances: int
    scale: float
    slow: float = 1.0
    throttling: bool = True
    """False: the proxy charged every call and refused none."""
    offered: int = 0
    on_time: int = 0
    """200 within the deadline (submit) or within 5 s of the round's end (read)."""
    answered: int = 0
    """200 at any time."""
    exact: int = 0
    ranges: int = 0
    """200s with a range (for the round: without an exact ``rankAfter``, a range or a rank not
    read)."""
    wrong: list[str] = field(default_factory=list)
    as_of_before_end: int = 0
    """Exact answers as of a moment before the round's end (checked as of then)."""
    off_by_moving: int = 0
    """Answers off by players moving meanwhile, within the contract's ``MOVING_PLACES``."""
    off_by_moving_examples: list[str] = field(default_factory=list)
    unsure: int = 0
    """Submissions given up after an answer that does not say whether they were written
    (``RoundAnswers.unsure``): the board may hold either score."""
    unsure_written: int = 0
    """Of those, the ones the board holds written."""
    answers: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stats: ProxyStats = field(default_factory=ProxyStats)
    rig: Rig | None = None
    mirror: dict[str, float] = field(default_factory=dict)

    def judged(self, verdict: str, said: str) -> None:
        if verdict == "wrong":
            self.wrong.append(said)
        elif verdict == "moving":
            self.off_by_moving += 1
            self.off_by_moving_examples.append(said)

    @property
    def mode(self) -> str:
        return self.reads + ("" if self.throttling else UNTHROTTLED)

    @property
    def read_units(self) -> float:
        return sum(self.stats.read_units.values())

    def per_task_second(self, *, full_scale: bool = False) -> float:
        """The mirrors' refreshes' read units (the tasks' upkeep: Queries of each shard's coarse
        counters, and of the index where buckets moved) a task a second of the show's time (a
        slowed down show's second is ``slow`` of the rig's): as read here, or were the board
        full size (``ProxyStats.upkeep_full_units``)."""
        found = self.stats.upkeep_full_units if full_scale else self.stats.upkeep_units
        return sum(found.values()) * self.slow / self.instances / max(self.seconds, 1e-9)

    @property
    def per_rank_read(self) -> float | None:
        return self.read_units / self.answered if self.answered else None

    @property
    def per_rank_read_own(self) -> float | None:
        """The storm's own reads and the tasks' upkeep over the reads answered: without what an
        earlier phase left running (``other``)."""
        found = self.stats.read_units_for
        own = found.get("read", 0.0) + found.get(UPKEEP, 0.0)
        return own / self.answered if self.answered else None

    def percentile(self, q: float) -> float | None:
        if not self.latencies:
            return None
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def summary(self) -> dict[str, Any]:
        on_time = "within_deadline" if self.phase == "submit" else "answered_within_5s"
        per_read = self.per_rank_read
        return {
            "shards": self.shards,
            "phase": self.phase,
            "reads": self.reads,
            "throttling": self.throttling,
            "offered": self.offered,
            on_time: self.on_time,
            "answered": self.answered,
            "exact": self.exact,
            "ranges": self.ranges,
            "wrong": len(self.wrong),
            "throttled": self.stats.throttled_total,
            "read_units_per_task_second": round(self.per_task_second(), 3),
            "read_units_per_task_second_full_scale": round(
                self.per_task_second(full_scale=True), 1
            ),
            # A read phase's over the ranks read; the round's over the submissions answered.
            "read_units_per_rank_read": _round(per_read) if self.phase == "read" else None,
            "read_units_per_rank_read_own": _round(self.per_rank_read_own)
            if self.phase == "read"
            else None,
            "read_units_per_submission": _round(per_read) if self.phase == "submit" else None,
            "read_units": round(self.read_units, 1),
            "read_units_by_kind": {
                k: round(v, 1) for k, v in sorted(self.stats.read_units.items())
            },
            "read_units_for": {
                k: round(v, 1) for k, v in sorted(self.stats.read_units_for.items())
            },
            "upkeep_units_by_kind": {
                k: round(v, 1) for k, v in sorted(self.stats.upkeep_units.items())
            },
            "write_units": {k: round(v, 1) for k, v in sorted(self.stats.write_units.items())},
            "throttled_by": dict(self.stats.throttled.most_common()),
            "throttled_keys": dict(self.stats.throttled_keys.most_common(5)),
            "calls": dict(self.stats.forwarded.most_common()),
            "as_of_before_end": self.as_of_before_end,
            "off_by_moving": self.off_by_moving,
            "unsure": self.unsure,
            "unsure_written": self.unsure_written,
            "answers": dict(sorted(self.answers.items())),
            "seconds": round(self.seconds / self.slow, 2),
            "p50_s": _round(self.percentile(0.5)),
            "p99_s": _round(self.percentile(0.99)),
            "mirror": self.mirror,
            "rig": None if self.rig is None else self.rig.summary(),
            "wrong_examples": self.wrong[:10],
            "off_by_moving_examples": self.off_by_moving_examples[:5],
        }


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


def _problem(response: httpx.Response) -> str:
    if response.status_code == 200 or not response.content:
        return str(response.status_code)
    try:
        kind = str(response.json().get("type", "")).rsplit("/", 1)[-1]
    except ValueError:
        kind = ""
    return f"{response.status_code} {kind}".strip()


class PhaseClock:
    """Begins and ends a phase: the proxy's stats afresh, the rig's monitor, the mirror counters."""

    def __init__(self, proxy: PartitionProxy, monitor: RigMonitor) -> None:
        self._proxy = proxy
        self._monitor = monitor
        self._mirror: dict[str, float] = {}

    def begin(self, *, throttling: bool = True) -> None:
        self._proxy.stats = ProxyStats()
        self._proxy.enabled = True
        self._proxy.enforce = throttling
        self._monitor.begin()
        self._mirror = _mirror_metrics()

    def end(self, phase: Phase) -> None:
        self._proxy.enabled = False
        phase.stats = self._proxy.stats
        phase.rig = self._monitor.end(lag_limit_s=LAG_LIMIT_S * phase.slow)
        now = _mirror_metrics()
        phase.mirror = {k: now[k] - self._mirror.get(k, 0.0) for k in now}


@dataclass
class RoundAnswers:
    """What the round's submissions were answered (times: wall-clock seconds)."""

    accepted: dict[str, bool] = field(default_factory=dict)
    delta: dict[str, tuple[float, float, int | None]] = field(default_factory=dict)
    """Each 200's first send, its answer, and its exact ``rankAfter`` (``None``: not exact)."""
    sent: dict[str, float] = field(default_factory=dict)
    """Each submission's first send."""
    last: dict[str, str] = field(default_factory=dict)
    """Each submission's last answer (``503 throttled``)."""

    def unsure(self) -> set[str]:
        """The submissions that gave up after an answer that does not say whether they were
        written: a 503 other than throttled or board-busy (the request ran past its deadline,
        its writes perhaps done), a 500."""
        return {
            player
            for player, ok in self.accepted.items()
            if not ok
            and self.last.get(player, "").split(" ")[0] in {"500", "503"}
            and self.last[player] not in {"503 throttled", "503 board-busy"}
        }


async def submit_round(
    services: Sequence[Service],
    phase: Phase,
    timeline: Timeline,
    *,
    wanted: dict[str, int],
    base_ms: int,
    rate: float,
    deadline_s: float,
    rng: random.Random,
    slow: float = 1.0,
) -> RoundAnswers:
    """Every player's improvement, paced at ``rate``, and what each was answered."""
    counts = RoundResult(phase.shards, rate, phase.scale, improvements=True)
    found = RoundAnswers(last=counts.last_answer)
    accepted, delta = found.accepted, found.delta
    started = time.perf_counter()
    players = list(wanted)

    async def one(i: int, player: str) -> None:
        _FOR.set("submit")
        await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
        sent = found.sent[player] = time.time()
        answer = await send(
            services[i % len(services)].http,
            counts,
            player=player,
            score=wanted[player],
            achieved_ms=base_ms + 1000 + i,
            deadline_s=deadline_s,
            rng=rng,
            rank_delta=True,
            slow=slow,
        )
        accepted[player] = isinstance(answer, httpx.Response)
        if isinstance(answer, httpx.Response):
            answered = time.time()
            timeline.moved[player] = (sent, answered)
            (board,) = answer.json()["boards"]
            delta[player] = (sent, answered, board.get("rankAfter"))

    await asyncio.gather(*(one(i, p) for i, p in enumerate(players)))
    phase.seconds = time.perf_counter() - started
    phase.offered = counts.offered = len(players)
    phase.on_time = counts.within_deadline
    phase.answered = counts.completed
    phase.answers = counts.answers
    phase.latencies = [x / slow for x in counts.latencies]
    phase.exact = sum(1 for _, _, rank in delta.values() if rank is not None)
    phase.ranges = phase.answered - phase.exact
    return found


async def read_storm(
    services: Sequence[Service],
    phase: Phase,
    players: Sequence[str],
    *,
    show: Show,
    rng: random.Random,
) -> list[ReadAnswer]:
    """Every player's GET of their rank from now, spread over ``show.read_spread_s``; each again
    after Retry-After until ``READ_DEADLINE_S`` from now (times ``show.slow``, both)."""
    spread_s, deadline_s = show.read_spread_s * show.slow, READ_DEADLINE_S * show.slow
    order = list(players)
    rng.shuffle(order)
    started = time.perf_counter()
    found: list[ReadAnswer] = []

    async def one(i: int, player: str) -> None:
        _FOR.set("read")
        await asyncio.sleep(max(0.0, started + i * spread_s / len(order) - time.perf_counter()))
        sent_perf, sent = time.perf_counter(), time.time()
        http = services[i % len(services)].http
        while True:
            response = await http.get(f"{BOARD_PATH}/players/{player}")
            phase.answers[_problem(response)] += 1
            now = time.perf_counter()
            if response.status_code == 200:
                phase.answered += 1
                phase.on_time += now - started <= deadline_s
                phase.latencies.append((now - sent_perf) / show.slow)
                rank = response.json()["rank"]
                header = response.headers.get("Leaderboard-Read-At")
                found.append(
                    ReadAnswer(
                        player,
                        sent,
                        time.time(),
                        None if header is None else datetime.fromisoformat(header).timestamp(),
                        rank.get("rank") if rank["kind"] == "exact" else None,
                        None if rank["kind"] == "exact" else tuple(rank["rankRange"]),
                    )
                )
                return
            if response.status_code not in RETRIED:
                return
            pause = float(response.headers.get("Retry-After", "1")) * show.slow
            pause *= 0.5 + rng.random()
            if now + pause - started > deadline_s:
                return
            await asyncio.sleep(pause)

    phase.offered = len(order)
    await asyncio.gather(*(one(i, p) for i, p in enumerate(order)))
    phase.seconds = time.perf_counter() - started
    return found


def check_reads(
    phase: Phase,
    answers: Sequence[ReadAnswer],
    timeline: Timeline,
    *,
    round_end: float,
    summary_s: float,
) -> None:
    """Every answer against the board as of its moment (``Timeline.possible_ranks``)."""
    for answer in answers:
        key = timeline.after[answer.player]
        start = answer.read_at if answer.read_at is not None else answer.sent - summary_s
        possible = timeline.possible_ranks(answer.player, key, start, answer.answered)
        if answer.rank is not None:
            phase.exact += 1
            phase.as_of_before_end += start < round_end
            said, verdict = f"rank {answer.rank}", possible.judge(answer.rank)
        elif answer.rank_range is not None:
            phase.ranges += 1
            said, verdict = f"range {answer.rank_range}", possible.judge(*answer.rank_range)
        else:
            continue
        phase.judged(
            verdict,
            f"{answer.player}: {said}, the board says {possible}, as of "
            f"{start - round_end:+.3f} s of the rig from the round's end",
        )


def check_deltas(
    phase: Phase,
    delta: dict[str, tuple[float, float, int | None]],
    timeline: Timeline,
    *,
    summary_s: float,
) -> None:
    """Every exact ``rankAfter`` against the board as of the moments it may stand on: the
    player's own new key, every other player at each key they held between the summary's age
    before the first send and the answer."""
    for player, (sent, answered, rank) in delta.items():
        if rank is None:
            continue
        key = timeline.after[player]
        possible = timeline.possible_ranks(player, key, sent - summary_s, answered)
        phase.judged(possible.judge(rank), f"{player}: rankAfter {rank}, the board says {possible}")


# ---- one show ------------------------------------------------------------------------------------


def _most(setting: str) -> float:
    """A setting's upper bound (``inf`` for none)."""
    bounds = (getattr(m, "le", None) for m in Settings.model_fields[setting].metadata)
    return float(next((b for b in bounds if b is not None), float("inf")))


@dataclass(frozen=True)
class Show:
    """How a show is run: at ``scale`` (every rate, and the load, times it), slowed down by
    ``slow`` (every rate divided by it, every time (the mirror's age and settling, the caches,
    the deadlines, the spread of the reads, the pauses before a retry, the buckets' banks)
    multiplied by it: the same show, each second of it ``slow`` seconds long, so that the
    tasks' upkeep, a fixed number of calls a second whatever the scale, asks the embedded
    backend ``slow`` times less)."""

    scale: float = 0.004
    slow: float = 1.0
    players: int | None = None
    rate: float | None = None
    """Submissions a second at full speed (``FULL_RATE x scale``)."""
    deadline_s: float = 10.0
    read_spread_s: float = 2.5
    instances: int = 2
    table_units: float | None = TABLE_UNITS
    modes: tuple[str, ...] = ("mirror",)
    fleet: int | None = None
    """The tasks at full scale the instances stand for, in what their mirrors' refreshes are
    charged (``PartitionProxy.upkeep_weight``); by default as many as the instances."""

    @property
    def upkeep_weight(self) -> float:
        return self.scale * (self.fleet or self.instances) / self.instances

    @property
    def board_size(self) -> int:
        return self.players if self.players is not None else round(FULL_PLAYERS * self.scale)

    @property
    def submit_rate(self) -> float:
        """Submissions a second of the rig's time."""
        return (self.rate if self.rate is not None else FULL_RATE * self.scale) / self.slow

    def settings_overrides(self, mode: str) -> dict[str, Any]:
        """The app's settings as deployed, slowed down (each within what the settings allow:
        the summary's age at most ``_most("hot_board_summary_seconds")``, the mirror's set apart
        by ``instances``); ``live``: every read live."""
        found = {
            name: min(float(value) * self.slow, _most(name))
            for name, value in deployed(*DEPLOYED_CACHES, "hot_board_summary_seconds").items()
        }
        if mode == "live":
            found["hot_board_summary_seconds"] = 0.0
        return found

    @property
    def summary_s(self) -> float:
        return float(deployed("hot_board_summary_seconds")["hot_board_summary_seconds"]) * (
            self.slow
        )


@contextlib.asynccontextmanager
async def instances(show: Show, settings: Any, mode: str) -> AsyncIterator[list[Service]]:
    """``show.instances`` apps on ``settings``, their mirrors as ``mode`` says: as deployed
    (``mirror``; slowed down, where the show is), off (``summary``: each reads through its
    summary, as the service did before the mirror), or none (``live``, by its settings)."""
    async with contextlib.AsyncExitStack() as stack:
        services = [await stack.enter_async_context(serve(settings)) for _ in range(show.instances)]
        for service in services:
            client = service.app.state.runtime.client
            client.meta.events.register("before-sign.dynamodb", _mark_purpose)
        if mode == "summary" or (mode == "mirror" and show.slow != 1):
            for service in services:
                runtime: Runtime = service.app.state.runtime
                ranking = runtime.leaderboard.ranking
                await ranking.mirrors.close()
                ranking.mirrors = HotBoardMirrors(
                    runtime.stores,
                    runtime.policies.ranking.layout,
                    max_age_s=0.0 if mode == "summary" else show.summary_s,
                    settle_s=SETTLE_S * show.slow,
                )
        yield services


async def warm(services: Sequence[Service], player: str) -> None:
    """Each instance's mirror of the board read (at no charge: the proxy is off), as a show's
    tasks hold theirs when a round starts, their players having read the board before it."""
    for service in services:
        runtime: Runtime = service.app.state.runtime
        for _ in range(100):
            response = await service.http.get(f"{BOARD_PATH}/players/{player}")
            if "Leaderboard-Read-At" in response.headers:
                break
            await runtime.leaderboard.ranking.mirrors.settled()
            await asyncio.sleep(0.05)
        else:
            raise RuntimeError("an instance's mirror never answered")


@dataclass
class _Run:
    """What one show keeps between its phases."""

    show: Show
    shards: int
    runtime: Runtime
    proxy_url: str
    tables: TableNames
    clock: PhaseClock
    ids: list[str]
    before: dict[str, int]
    wanted: dict[str, int]
    base_ms: int
    rng: random.Random
    timeline: Timeline = field(default_factory=Timeline)
    submitted: RoundAnswers = field(default_factory=RoundAnswers)
    answers: dict[str, list[ReadAnswer]] = field(default_factory=dict)
    round_end: float = 0.0

    def settings(self, mode: str) -> Any:
        return make_settings(
            self.proxy_url,
            self.tables,
            periods=["alltime"],
            dynamodb_read_timeout_seconds=60,
            request_deadline_seconds=self.show.deadline_s * self.show.slow,
            **self.show.settings_overrides(mode),
        )

    def phase(self, phase: str, reads: str) -> Phase:
        return Phase(
            self.shards, phase, reads, self.show.instances, self.show.scale, self.show.slow
        )

    async def round_and_storm(self) -> list[Phase]:
        """The round, then the storm from its end, on the same instances."""
        show = self.show
        async with instances(show, self.settings("mirror"), "mirror") as services:
            await seed_csv(
                services[0].http, BOARD_PATH, [(p, s, self.base_ms) for p, s in self.before.items()]
            )
            self.timeline.before = await board_keys(self.runtime)
            if self.shards > 1:  # an unsharded board has no mirror: its ranks are read live
                await warm(services, self.ids[0])
            submit = self.phase("submit", "mirror")
            self.clock.begin()
            self.submitted = await submit_round(
                services,
                submit,
                self.timeline,
                wanted=self.wanted,
                base_ms=self.base_ms,
                rate=show.submit_rate,
                deadline_s=show.deadline_s * show.slow,
                rng=self.rng,
                slow=show.slow,
            )
            self.round_end = time.time()
            self.clock.end(submit)
            read = self.phase("read", "mirror")
            self.clock.begin()
            self.answers["mirror"] = await read_storm(
                services, read, self.ids, show=show, rng=self.rng
            )
            self.clock.end(read)
        return [submit, read]

    async def storm(self, mode: str) -> Phase:
        """The storm again on the still board, on fresh instances whose reads are ``mode``'s
        (``...-unthrottled``: the proxy charging every call and refusing none)."""
        reads = mode.removesuffix(UNTHROTTLED)
        async with instances(self.show, self.settings(reads), reads) as services:
            await asyncio.sleep(self.show.slow * 1.5)  # every bucket full again
            read = self.phase("read", reads)
            read.throttling = not mode.endswith(UNTHROTTLED)
            self.clock.begin(throttling=read.throttling)
            self.answers[read.mode] = await read_storm(
                services, read, self.ids, show=self.show, rng=self.rng
            )
            self.clock.end(read)
        return read

    async def check(self, phases: list[Phase]) -> None:
        self.timeline.after = await board_keys(self.runtime)
        submit, submitted = phases[0], self.submitted
        accepted: dict[str, bool | None] = dict(submitted.accepted)
        for player in submitted.unsure():
            # Written or not, as the board says: either is right. Written, it moved between its
            # first send and the round's end.
            if self.timeline.after.get(player) != self.timeline.before.get(player):
                accepted[player] = True
                submit.unsure_written += 1
                self.timeline.moved[player] = (submitted.sent[player], self.round_end)
            submit.unsure += 1
        result = RoundResult(self.shards, submit.offered, self.show.scale, improvements=True)
        await check_board(self.runtime, result, self.shards, accepted, self.wanted, self.before)
        submit.wrong += result.wrong
        check_deltas(submit, submitted.delta, self.timeline, summary_s=self.show.summary_s)
        for read in phases[1:]:
            check_reads(
                read,
                self.answers[read.mode],
                self.timeline,
                round_end=self.round_end,
                summary_s=0.0 if read.reads == "live" else self.show.summary_s,
            )


async def run_show(endpoint: str, show: Show, *, shards: int) -> list[Phase]:
    """One show on a board of ``shards``: its round, then its read storm once per mode of
    ``show.modes``, each checked against the board."""
    run = uuid.uuid4().hex[:8]
    tables = TableNames(f"show-{run}", f"show-snap-{run}")
    rng = random.Random(shards * 7919 + show.board_size)
    ids = [f"s{run[:4]}-{i:06d}" for i in range(show.board_size)]
    before = {p: max(0, score(rng) - 1000) for p in ids}
    async with (
        open_runtime(make_settings(endpoint, tables), create_tables=True) as runtime,
        running_proxy(
            endpoint,
            scale=show.scale / show.slow,
            table_units=show.table_units,
            bank_s=show.slow,
            upkeep_weight=show.upkeep_weight,
            board_scale=show.scale,
        ) as (proxy_url, proxy),
    ):
        monitor = RigMonitor(proxy)
        state = _Run(
            show,
            shards,
            runtime,
            proxy_url,
            tables,
            PhaseClock(proxy, monitor),
            ids,
            before,
            {p: before[p] + score(rng) // 4 + 1 for p in ids},
            now_ms() - 600_000,
            rng,
        )
        await runtime.stores.definitions.put_definition(
            "trivia", "live", BoardDefinition(periods=(PeriodKind.ALLTIME,), shards=shards)
        )
        proxy.enabled = False  # the board is set up at no charge
        try:
            with upkeep_marked():
                phases = await state.round_and_storm()
                for mode in show.modes:
                    if mode != "mirror":
                        phases.append(await state.storm(mode))
            await state.check(phases)
        finally:
            await monitor.aclose()
            for name in (tables.scores, tables.snapshots):
                await runtime.client.delete_table(TableName=name)
    return phases


# ---- the report ---------------------------------------------------------------------------------


def table(phases: Sequence[Phase]) -> str:
    lines = [
        "| k | phase | reads | offered | on time | exact | ranges | wrong | throttled "
        "| read units a rank read | upkeep: units a task-second (full scale) | p50 / p99 s "
        "| backend busy | loop lag p99 s | rig |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- "
        "| ---: | ---: | --- |",
    ]
    for p in phases:
        p50, p99 = p.percentile(0.5), p.percentile(0.99)
        latency = "-" if p50 is None or p99 is None else f"{p50:.2f} / {p99:.2f}"
        per_read = p.per_rank_read
        rig = p.rig
        share = 100 * p.on_time / p.offered if p.offered else 0.0
        lines.append(
            f"| {p.shards} | {p.phase} | {p.mode} | {p.offered} | {p.on_time} ({share:.1f}%) "
            f"| {p.exact} | {p.ranges} | {len(p.wrong)} | {p.stats.throttled_total} "
            f"| {'-' if per_read is None or p.phase == 'submit' else f'{per_read:.2f}'} "
            f"| {p.per_task_second():.2f} ({p.per_task_second(full_scale=True):,.0f}) "
            f"| {latency} "
            f"| {'-' if rig is None else f'{rig.backend_busy:.2f}'} "
            f"| {'-' if rig is None else f'{rig.loop_lag_p99_s:.3f}'} "
            f"| {'-' if rig is None else ('saturated' if rig.saturated else 'ok')} |"
        )
    return "\n".join(lines)


def targets(phases: Sequence[Phase], shards: int = 16) -> list[dict[str, Any]]:
    """The show's targets at ``shards``, each with its figure and whether it was met."""
    at = {(p.phase, p.mode): p for p in phases if p.shards == shards}
    submit, read = at.get(("submit", "mirror")), at.get(("read", "mirror"))
    if submit is None or read is None:
        return []
    found: list[dict[str, Any]] = []

    def target(name: str, value: Any, met: bool) -> None:
        found.append({"shards": shards, "target": name, "value": value, "met": met})

    share = submit.on_time / submit.offered if submit.offered else 0.0
    target("submissions with rankDelta within the deadline >= 99%", round(share, 4), share >= 0.99)
    share = read.on_time / read.offered if read.offered else 0.0
    target("reads answered within 5 s >= 99%", round(share, 4), share >= 0.99)
    share = read.exact / read.offered if read.offered else 0.0
    target("reads exact >= 99%", round(share, 4), share >= 0.99)
    wrong = len(submit.wrong) + len(read.wrong)
    target("nothing wrong", wrong, wrong == 0)
    throttled = submit.stats.throttled_total + read.stats.throttled_total
    target("no throttle", throttled, throttled == 0)
    saturated = any(p.rig is not None and p.rig.saturated for p in (submit, read))
    target("rig not saturated", saturated, not saturated)
    now_units = read.per_rank_read
    for mode, said in (
        ("summary" + UNTHROTTLED, "the pre-mirror figure"),
        ("summary", "the pre-mirror storm's (throttled: units spent on reads refused count)"),
        ("live" + UNTHROTTLED, "every read live"),
    ):
        before = at.get(("read", mode))
        if before is not None and before.per_rank_read and now_units is not None:
            ratio = now_units / before.per_rank_read
            target(
                f"read units a rank read <= 1/100 of {said} (reads: {mode})",
                round(ratio, 4),
                ratio <= 0.01,
            )
    return found


def _machine() -> dict[str, Any]:
    load = os.getloadavg()
    return {"cpus": os.cpu_count(), "load_average": [round(x, 2) for x in load]}


def show_of(args: argparse.Namespace) -> Show:
    return Show(
        scale=args.scale,
        slow=args.slow,
        players=args.players,
        rate=args.rate,
        read_spread_s=args.read_spread,
        instances=args.instances,
        table_units=args.table_units or None,
        modes=MODES if args.no_mirror else ("mirror",),
        fleet=args.fleet,
    )


async def run(endpoint: str, show: Show, shard_counts: Sequence[int]) -> dict[str, Any]:
    """Every show of ``shard_counts`` in turn, as the JSON reports them (``cpu`` apart)."""
    machine_before = _machine()
    phases: list[Phase] = []
    for shards in shard_counts:
        modes = show.modes if shards > 1 else ("mirror",)  # one shard: no mirror to turn off
        found = await run_show(endpoint, replace(show, modes=modes), shards=shards)
        for phase in found:
            print(table([phase]).splitlines()[-1], flush=True)
        phases += found
    judged = [p for p in phases if p.reads == "mirror"]
    return {
        "rounds": [p.summary() for p in phases],
        "rig_saturated": any(p.rig is not None and p.rig.saturated for p in judged),
        "targets": targets(phases, max(shard_counts)),
        "cpu": None,
        "run": {
            "argv": sys.argv[1:],
            "scale": show.scale,
            "slow": show.slow,
            "submissions_a_second": round(show.submit_rate * show.slow, 3),
            "players": show.board_size,
            "instances": show.instances,
            "fleet": show.fleet or show.instances,
            "read_spread_s": show.read_spread_s,
            "table_units": show.table_units,
            "busy_limit": BUSY_LIMIT,
            "loop_lag_limit_s": LAG_LIMIT_S * show.slow,
            "machine_before": machine_before,
            "machine_after": _machine(),
        },
        "table": table(phases),
    }


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    configure_logging(json=True, level=40, cache=False)
    structlog.contextvars.clear_contextvars()
    show = show_of(args)
    with EmbeddedDynamo() as endpoint:
        report = await run(endpoint, show, args.shards)
        if args.cpu:
            report["cpu"] = await asyncio.to_thread(
                mirror_cpu.measure,
                endpoint,
                shards=max(*args.shards, 2),
                players=show.board_size,
                requests=args.cpu,
            )
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=" ".join((__doc__ or "").split("\n\n")[0].split()))
    parser.add_argument("--shards", type=int, nargs="+", default=[16])
    parser.add_argument(
        "--scale", type=float, default=0.004, help="every rate times this, and the load"
    )
    parser.add_argument(
        "--slow",
        type=float,
        default=1.0,
        help="every rate divided by this and every time multiplied by it (1: real time)",
    )
    parser.add_argument("--players", type=int, help="the board's players (100,000 x scale)")
    parser.add_argument(
        "--rate", type=float, help="the round's submissions a second (10,000 x scale)"
    )
    parser.add_argument(
        "--read-spread", type=float, default=2.5, help="seconds the reads are spread over"
    )
    parser.add_argument("--instances", type=int, default=2, help="app instances (tasks)")
    parser.add_argument(
        "--fleet",
        type=int,
        help="the tasks at full scale the instances stand for, in what their upkeep is charged "
        "(as many as the instances by default)",
    )
    parser.add_argument(
        "--table-units",
        type=float,
        default=TABLE_UNITS,
        help="the table's quota, units a second at full scale (0: none)",
    )
    parser.add_argument(
        "--no-mirror",
        action="store_true",
        help="also run the read storm with the mirror off (summary) and all live",
    )
    parser.add_argument(
        "--cpu",
        type=int,
        default=0,
        help="rank reads from a warm mirror and /healthz requests to time in turn (0: none)",
    )
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--out", help="write the table here")
    args = parser.parse_args()
    report = asyncio.run(main_async(args))
    print(report["table"])
    print(json.dumps(report["targets"], indent=1))
    if report["cpu"]:
        print(json.dumps(report["cpu"], indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    if args.out:
        Path(args.out).write_text(report["table"] + "\n")


if __name__ == "__main__":
    main()
