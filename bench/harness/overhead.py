"""Service overhead: the service process's CPU per request beside a bare aiobotocore replay of the
same calls, per operation, measured request by request in alternation.

Two passes, each on tables of its own that start in the same state. The first records: the service
(``bench.harness.served``, uvicorn with uvloop and httptools as ``leaderboard serve`` runs it)
serves every request and keeps every call it makes. The second measures: a fresh service process
serves the same requests again while ``bench.harness.replay`` (its own process, uvloop too) makes
the first pass's calls, grouped into the same round trips, on a third pair of tables; the harness
alternates them request by request (which goes first alternates too), reading the service's CPU
time from its CPU-time clock around each request and taking the replay's own ``process_time``
around the same request's calls. Both sides meet the machine in the same state, which a pass of one
and then a pass of the other did not: this machine's speed drifts by a fifth between minutes.
Warm-up requests run on both sides and are left out of both.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.bootstrap import open_runtime
from app.domain.clock import iso_ms
from app.local.embedded import free_port, stop_process
from bench.harness.floor import PATH as FLOOR_PATH
from bench.harness.process import ServedService, cpu_seconds, wait_until_answering
from bench.harness.replay import SETTLE_S
from bench.harness.service import bench_settings, run_tables, score_body, submit_headers

VARIANT = "cpu"
BOARD = f"trivia/{VARIANT}/alltime"
BEFORE_RATIO = {"submission": 1.10, "top page": 1.36, "rank read": 1.16}
"""The service's CPU per request over a bare aiobotocore script's, before this session."""
TARGET_RATIO = 1.2
"""Issue 13's target for every operation."""
RESAMPLES = 2_000


@dataclass(frozen=True)
class Overhead:
    operation: str
    requests: int
    service_cpu_ms: float
    bare_cpu_ms: float
    calls_per_request: float
    replay_errors: int = 0
    """Calls of the replay that failed (its tables drifted from the service's): none, or the
    figures are not of the same work."""
    left_out: int = 0
    """Requests measured but not compared: the service made other calls than the replay's."""
    interval: tuple[float, float] | None = None
    """The ratio's 95% interval over the requests compared (``ratio_interval``)."""

    @property
    def ratio(self) -> float:
        return self.service_cpu_ms / self.bare_cpu_ms if self.bare_cpu_ms else float("nan")

    @property
    def verdict(self) -> str | None:
        """Against ``TARGET_RATIO``: met when the whole interval is at or under it, not met when
        the whole interval is over it, and on the line when the interval holds it."""
        if self.interval is None:
            return None
        low, high = self.interval
        if high <= TARGET_RATIO:
            return "met"
        return "not met" if low > TARGET_RATIO else "on the line"

    def summary(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "requests": self.requests,
            "service_cpu_ms_per_request": round(self.service_cpu_ms, 3),
            "bare_cpu_ms_per_request": round(self.bare_cpu_ms, 3),
            "ratio": round(self.ratio, 3) if self.requests else None,
            "calls_per_request": round(self.calls_per_request, 3),
            "left_out": self.left_out,
            "before_ratio": BEFORE_RATIO.get(self.operation),
            "ratio_interval": None
            if self.interval is None
            else [round(x, 3) for x in self.interval],
            "target": self.verdict,
        }


@dataclass(frozen=True)
class Floor:
    """What a request costs before any work of its own, beside the bare cost of one call, measured
    in the same alternation as the operations: the least ratio a one-call request can reach."""

    requests: int
    bare_call_ms: float
    """The replay's CPU for one top-page Query."""
    service_ms: float
    """The service's CPU for a ``GET /healthz``: HTTP, FastAPI, its middleware, its log line."""
    stack_ms: float
    """FastAPI and uvicorn alone (``bench.harness.floor``) answering ``{}``."""

    def least_ratio(self, extra_ms: float) -> float | None:
        return (self.bare_call_ms + extra_ms) / self.bare_call_ms if self.bare_call_ms else None

    def summary(self) -> dict[str, Any]:
        stack, service = self.least_ratio(self.stack_ms), self.least_ratio(self.service_ms)
        return {
            "requests": self.requests,
            "bare_call_cpu_ms": round(self.bare_call_ms, 3),
            "service_no_call_cpu_ms": round(self.service_ms, 3),
            "stack_no_call_cpu_ms": round(self.stack_ms, 3),
            "least_one_call_ratio_stack": None if stack is None else round(stack, 3),
            "least_one_call_ratio_service": None if service is None else round(service, 3),
        }


def _requests(n: int) -> dict[str, list[tuple[str, str, dict[str, Any] | None]]]:
    """Per operation, (method, path, body) of each request, in the order they are sent."""
    now_ms = int(time.time() * 1000)
    submissions: list[tuple[str, str, dict[str, Any] | None]] = [
        (
            "POST",
            "/v1/scores",
            score_body(f"c{i:05d}", 3_000 + 37 * i, variant=VARIANT, achievedAt=iso_ms(now_ms)),
        )
        for i in range(n)
    ]
    players = [f"c{i % n:05d}" for i in range(n)]
    return {
        "submission": submissions,
        "top page": [("GET", f"/v1/leaderboards/{BOARD}", None)] * n,
        "rank read": [("GET", f"/v1/leaderboards/{BOARD}/players/{p}", None) for p in players],
        "around": [("GET", f"/v1/leaderboards/{BOARD}/players/{p}/around", None) for p in players],
        "standings": [("GET", f"/v1/players/{p}/standings", None) for p in players],
    }


def _plan(
    calls: list[dict[str, Any]], order: list[tuple[str, str]], tables: dict[str, str]
) -> dict[str, Any]:
    """The replay plan: each request's calls in round trips (a call joins the round trip of the
    calls it overlapped in time), in the order the requests were sent."""
    by_request: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        by_request[str(call["request"])].append(call)
    requests = []
    for request_id, label in order:
        mine = sorted(by_request.get(request_id, []), key=lambda c: c["start"])
        levels: list[list[dict[str, Any]]] = []
        ends: list[float] = []
        for call in mine:
            if levels and call["start"] < max(ends[-1], 0.0):
                levels[-1].append({"operation": call["operation"], "params": call["params"]})
                ends[-1] = max(ends[-1], call.get("end", call["start"]))
            else:
                levels.append([{"operation": call["operation"], "params": call["params"]}])
                ends.append(call.get("end", call["start"]))
        requests.append({"label": label, "levels": levels})
    return {"tables": tables, "requests": requests}


Request = tuple[str, str, dict[str, Any] | None]


def _send(http: httpx.Client, operation: str, request: Request, request_id: str) -> None:
    method, path, body = request
    headers = {"X-Request-Id": request_id}
    if body is not None:
        headers |= submit_headers()
    response = http.request(method, path, json=body, headers=headers)
    if response.status_code != 200:
        raise RuntimeError(f"{operation}: {response.status_code} {response.text}")


class _Replay:
    """The replay process, one request's calls per ``run``."""

    def __init__(self, plan_path: Path, endpoint: str) -> None:
        command = [sys.executable, "-m", "bench.harness.replay", str(plan_path)]
        self._process = subprocess.Popen(
            [*command, "--endpoint", endpoint],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self._read()  # loaded and connected

    def _read(self) -> dict[str, Any]:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the replay ended early")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(self, index: int) -> tuple[float, int]:
        assert self._process.stdin is not None
        self._process.stdin.write(f"{index}\n")
        self._process.stdin.flush()
        answer = self._read()
        return float(answer["cpu"]), int(answer["errors"])

    def close(self) -> None:
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.close()  # the replay's loop ends at the end of its input
        self._process.wait(timeout=60)
        self._process.stdout.close()


def run_overhead(
    endpoint: str, workdir: Path, *, n: int = 100, warm: int = 10
) -> tuple[list[Overhead], Floor]:
    import asyncio

    recorded_tables, served_tables, twin_tables = (
        run_tables(f"bench-cpu-{name}") for name in ("recorded", "served", "bare")
    )

    async def create(names: Any) -> None:
        async with open_runtime(bench_settings(endpoint, names), create_tables=True):
            pass

    for names in (recorded_tables, served_tables, twin_tables):
        asyncio.run(create(names))
    requests = _requests(n + warm)
    order = [
        (f"{operation.replace(' ', '-')}-{i:05d}", operation)
        for operation, sent in requests.items()
        for i in range(len(sent))
    ]
    # Pass 1: the calls each request makes.
    recording = ServedService(
        bench_settings(endpoint, recorded_tables), workdir, record=True, name="cpu-recorded"
    )
    with recording, httpx.Client(base_url=recording.url, timeout=120) as http:
        for (request_id, operation), request in zip(
            order, [r for sent in requests.values() for r in sent], strict=True
        ):
            _send(http, operation, request, request_id)
    calls = json.loads(recording.record_path.read_text())
    plan = _plan(
        calls,
        order,
        {
            recorded_tables.scores: twin_tables.scores,
            recorded_tables.snapshots: twin_tables.snapshots,
        },
    )
    plan_path = workdir / "cpu-replay-plan.json"
    plan_path.write_text(json.dumps(plan))
    # Pass 2: the same requests to a fresh service, each beside its calls replayed.
    samples: list[tuple[str, str, float, float]] = []
    errors = 0
    served = ServedService(bench_settings(endpoint, served_tables), workdir, name="cpu")
    replay = _Replay(plan_path, endpoint)
    index = 0
    try:
        with served, httpx.Client(base_url=served.url, timeout=120) as http:
            for operation, sent in requests.items():
                for i, request in enumerate(sent):
                    request_id = f"measured-{order[index][0]}"
                    service_first = index % 2 == 0
                    if not service_first:
                        bare, failed = replay.run(index)
                    before = cpu_seconds(served.pid)
                    _send(http, operation, request, request_id)
                    time.sleep(SETTLE_S)  # as the replay does after its calls
                    spent = cpu_seconds(served.pid) - before
                    if service_first:
                        bare, failed = replay.run(index)
                    errors += failed
                    if i >= warm:
                        samples.append((operation, request_id, spent, bare))
                    index += 1
            one_call = [
                i
                for i, ((_, operation), r) in enumerate(zip(order, plan["requests"], strict=True))
                if operation == "top page" and sum(len(level) for level in r["levels"]) == 1
            ]
            floor = _floor(http, served.pid, replay, one_call, workdir, n=n, warm=warm)
    finally:
        replay.close()
    if errors:
        print(f"  the replay met {errors} errors", flush=True)
    planned = {
        f"measured-{request_id}": sum(len(level) for level in r["levels"])
        for (request_id, _), r in zip(order, plan["requests"], strict=True)
    }
    return _compared(samples, planned, served_calls(served.log_path), errors), floor


def _cpu_of(pid: int, send: Callable[[], object]) -> float:
    before = cpu_seconds(pid)
    send()
    time.sleep(SETTLE_S)  # as the replay does after its calls
    return cpu_seconds(pid) - before


def _floor(
    http: httpx.Client,
    service_pid: int,
    replay: _Replay,
    one_call: list[int],
    workdir: Path,
    *,
    n: int,
    warm: int,
) -> Floor:
    """In the same alternation as the operations (each side first in turn): the replay's one
    top-page Query, the service's ``/healthz``, and FastAPI and uvicorn alone answering ``{}``.
    No floor (``requests=0``) when no top page made exactly one call."""
    if not one_call or n <= 0:
        return Floor(requests=0, bare_call_ms=0.0, service_ms=0.0, stack_ms=0.0)
    port = free_port()
    log_path = workdir / "cpu-floor.log"
    with log_path.open("wb") as log:
        stack = subprocess.Popen(
            [sys.executable, "-m", "bench.harness.floor", "--port", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_answering(f"{url}{FLOOR_PATH}", stack, log_path=log_path)
        with httpx.Client(base_url=url, timeout=30) as bare_app:
            replay_errors = 0

            def replayed(i: int) -> float:
                nonlocal replay_errors
                cpu, failed = replay.run(one_call[i % len(one_call)])
                replay_errors += failed
                return cpu

            sides: list[Callable[[int], float]] = [
                replayed,
                lambda _: _cpu_of(service_pid, lambda: _ok(http.get("/healthz"))),
                lambda _: _cpu_of(stack.pid, lambda: _ok(bare_app.get(FLOOR_PATH))),
            ]
            figures: list[list[float]] = [[], [], []]
            for i in range(n + warm):
                turn = [(k + i) % 3 for k in range(3)]  # who goes first rotates
                spent = {k: sides[k](i) for k in turn}
                if i >= warm:
                    for k in range(3):
                        figures[k].append(spent[k])
    finally:
        stop_process(stack, grace_s=10)
    if replay_errors:  # said, as the operations' are: a failed call is not a call's work
        print(f"  the floor's replay met {replay_errors} errors", flush=True)
    bare, service, alone = (1000 * sum(f) / len(f) for f in figures)
    return Floor(requests=n, bare_call_ms=bare, service_ms=service, stack_ms=alone)


def _ok(response: httpx.Response) -> None:
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.url}: {response.status_code} {response.text}")


def served_calls(log_path: Path) -> dict[str, int]:
    """Per request id, the DynamoDB calls the service made, from its request log lines."""
    made: dict[str, int] = {}
    for line in log_path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("event") == "request" and "request_id" in entry:
            made[str(entry["request_id"])] = int(entry.get("dynamodb_calls", 0))
    return made


def ratio_interval(
    pairs: Sequence[tuple[float, float]], *, resamples: int = RESAMPLES, seed: int = 13
) -> tuple[float, float] | None:
    """The 2.5th and 97.5th percentiles of the ratio (service CPU over the replay's, summed) over
    ``resamples`` draws of the compared requests with replacement, each request with its own
    replay: how far the ratio could fall from these requests' noise alone. The machine's drift
    between minutes is not in it (the alternation cancels that from the ratio itself). ``None``
    for fewer than two requests. Seeded: the same samples give the same interval."""
    if len(pairs) < 2:
        return None
    draw = random.Random(seed).choices
    ratios = []
    for _ in range(resamples):
        picked = draw(pairs, k=len(pairs))
        bare = sum(b for _, b in picked)
        ratios.append(sum(s for s, _ in picked) / bare if bare else float("inf"))
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def _compared(
    samples: list[tuple[str, str, float, float]],
    planned: dict[str, int],
    made: dict[str, int],
    errors: int,
) -> list[Overhead]:
    """Per operation, the requests where the service made as many calls as the replay replays
    (the count, which the request log line gives; the calls themselves are the same code's):
    a time-based cache (a page's player count) expires at other requests in the second pass,
    whose requests take longer, and such a request is not the same work on both sides."""
    by_operation: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    left_out: dict[str, int] = defaultdict(int)
    for operation, request_id, service, bare in samples:
        if made.get(request_id) == planned[request_id]:
            by_operation[operation].append((service, bare, planned[request_id]))
        else:
            left_out[operation] += 1
    figures = []
    for operation in dict.fromkeys(operation for operation, *_ in samples):
        kept = by_operation[operation]
        n = len(kept)
        figures.append(
            Overhead(
                operation=operation,
                requests=n,
                service_cpu_ms=1000 * sum(s for s, _, _ in kept) / n if n else 0.0,
                bare_cpu_ms=1000 * sum(b for _, b, _ in kept) / n if n else 0.0,
                calls_per_request=sum(c for *_, c in kept) / n if n else 0.0,
                replay_errors=errors,
                left_out=left_out[operation],
                interval=ratio_interval([(s, b) for s, b, _ in kept]),
            )
        )
    return figures
