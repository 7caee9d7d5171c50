"""Service overhead: the service process's CPU per request beside a bare aiobotocore replay of the
same calls in the same run, per operation.

The service runs as its own process (``bench.harness.served``, uvicorn with uvloop and httptools as
``leaderboard serve`` runs it) on a pair of tables, recording every call it makes; the harness sends
it one request at a time and reads the process's CPU time from ``/proc`` before and after each
operation's requests. Then ``bench.harness.replay`` (its own process, uvloop too) makes the same
calls, grouped into the same round trips, on a twin pair of tables that started in the same state,
and times itself. Warm-up requests run on both sides and are left out of both.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from app.bootstrap import open_runtime
from app.domain.clock import iso_ms
from bench.harness.process import ServedService, cpu_seconds
from bench.harness.service import bench_settings, run_tables, score_body, submit_headers

VARIANT = "cpu"
BOARD = f"trivia/{VARIANT}/alltime"
BEFORE_RATIO = {"submission": 1.10, "top page": 1.36, "rank read": 1.16}
"""The service's CPU per request over a bare aiobotocore script's, before this session."""


@dataclass(frozen=True)
class Overhead:
    operation: str
    requests: int
    service_cpu_ms: float
    bare_cpu_ms: float
    calls_per_request: float

    @property
    def ratio(self) -> float:
        return self.service_cpu_ms / self.bare_cpu_ms if self.bare_cpu_ms else float("nan")

    def summary(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "requests": self.requests,
            "service_cpu_ms_per_request": round(self.service_cpu_ms, 3),
            "bare_cpu_ms_per_request": round(self.bare_cpu_ms, 3),
            "ratio": round(self.ratio, 3),
            "calls_per_request": self.calls_per_request,
            "before_ratio": BEFORE_RATIO.get(self.operation),
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
    calls: list[dict[str, Any]], order: list[tuple[str, str, bool]], tables: dict[str, str]
) -> dict[str, Any]:
    """The replay plan: each request's calls in round trips (a call joins the round trip of the
    calls it overlapped in time)."""
    by_request: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for call in calls:
        by_request[str(call["request"])].append(call)
    requests = []
    for request_id, label, timed in order:
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
        requests.append({"label": label, "timed": timed, "levels": levels})
    return {"tables": tables, "requests": requests}


def run_overhead(endpoint: str, workdir: Path, *, n: int = 100, warm: int = 10) -> list[Overhead]:
    import asyncio

    served_tables, twin_tables = run_tables("bench-cpu"), run_tables("bench-cpu-bare")
    settings = bench_settings(endpoint, served_tables)

    async def create(names: Any) -> None:
        async with open_runtime(bench_settings(endpoint, names), create_tables=True):
            pass

    asyncio.run(create(served_tables))
    asyncio.run(create(twin_tables))
    plan_order: list[tuple[str, str, bool]] = []
    service_cpu: dict[str, float] = {}
    served = ServedService(settings, workdir, record=True, name="cpu")
    with served, httpx.Client(base_url=served.url, timeout=120) as http:
        for operation, requests in _requests(n + warm).items():
            started = 0.0
            for i, (method, path, body) in enumerate(requests):
                if i == warm:
                    started = cpu_seconds(served.pid)
                request_id = f"{operation.replace(' ', '-')}-{i:05d}-{uuid.uuid4().hex[:6]}"
                headers = {"X-Request-Id": request_id}
                if body is not None:
                    headers |= submit_headers()
                response = http.request(method, path, json=body, headers=headers)
                if response.status_code != 200:
                    raise RuntimeError(f"{operation}: {response.status_code} {response.text}")
                plan_order.append((request_id, operation, i >= warm))
            service_cpu[operation] = cpu_seconds(served.pid) - started
    calls = json.loads(served.record_path.read_text())
    plan = _plan(
        calls,
        plan_order,
        {served_tables.scores: twin_tables.scores, served_tables.snapshots: twin_tables.snapshots},
    )
    plan_path = workdir / "cpu-replay-plan.json"
    plan_path.write_text(json.dumps(plan))
    done = subprocess.run(
        [sys.executable, "-m", "bench.harness.replay", str(plan_path), "--endpoint", endpoint],
        capture_output=True,
        check=True,
        timeout=1800,
    )
    bare = json.loads(done.stdout)
    if bare["errors"]:
        print(f"  the replay met {bare['errors']} errors", flush=True)
    per_request_calls: dict[str, list[int]] = defaultdict(list)
    for request in plan["requests"]:
        if request["timed"]:
            per_request_calls[request["label"]].append(sum(len(lv) for lv in request["levels"]))
    return [
        Overhead(
            operation=operation,
            requests=n,
            service_cpu_ms=1000 * service_cpu[operation] / n,
            bare_cpu_ms=1000 * bare["cpu_seconds"][operation] / bare["requests"][operation],
            calls_per_request=sum(per_request_calls[operation]) / n,
        )
        for operation in service_cpu
    ]
