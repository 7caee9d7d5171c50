"""Memory: the service process's resident set at idle, at the peak of a burst of 1,000 new players
at 1,000 in flight, and as 10^5 distinct API keys and 10^5 distinct client addresses are seen
(the key cache and the rate-limit buckets are bounded: the resident set levels off), beside the
Fargate task size the stack gives the service."""

from __future__ import annotations

import ast
import asyncio
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.harness.http_load import BurstResult, http_burst
from bench.harness.process import ServedService, memory_kib
from bench.harness.service import SUBMIT_KEY, bench_settings, run_tables, score_body, submit_headers

STACK = Path(__file__).resolve().parents[2] / "infra" / "leaderboard_stack.py"


def fargate_task_size(stack: Path = STACK) -> dict[str, int]:
    """``task_cpu`` and ``task_memory_mib`` defaults of the stack's ``DeployConfig``, read from the
    source (the CDK need not be installed)."""
    tree = ast.parse(stack.read_text())
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "DeployConfig":
            for statement in node.body:
                if (
                    isinstance(statement, ast.AnnAssign)
                    and isinstance(statement.target, ast.Name)
                    and statement.target.id in {"task_cpu", "task_memory_mib"}
                    and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, int)
                ):
                    found[statement.target.id] = statement.value.value
    return found


@dataclass
class Memory:
    idle_kib: int = 0
    burst_peak_kib: int = 0
    burst_hwm_kib: int = 0
    burst: dict[str, Any] = field(default_factory=dict)
    keys_series: list[tuple[int, int]] = field(default_factory=list)
    """(distinct API keys seen, VmRSS KiB)."""
    addresses_series: list[tuple[int, int]] = field(default_factory=list)
    after_kib: int = 0
    stats: dict[str, int] = field(default_factory=dict)
    bounds: dict[str, int] = field(default_factory=dict)
    fargate: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        return {**self.__dict__}


class _Sampler:
    """VmRSS of a process every ``every_s`` on a thread, the peak kept."""

    def __init__(self, pid: int, every_s: float = 0.02) -> None:
        self.pid, self.every_s, self.peak = pid, every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, memory_kib(self.pid)["VmRSS"])
            self._stop.wait(self.every_s)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def issued_shaped_key(i: int) -> str:
    """A token shaped like an issued key (``lb_test_`` + 43 characters), so the service looks it
    up (and remembers the answer) instead of refusing it for its shape."""
    return f"lb_test_{i:043d}"


async def _distinct(
    url: str, total: int, every: int, make: Any, pid: int, concurrency: int = 32
) -> list[tuple[int, int]]:
    series = [(0, memory_kib(pid)["VmRSS"])]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as http:
        for first in range(0, total, every):
            queue = iter(range(first, min(total, first + every)))

            async def worker(q: Any = queue) -> None:
                for i in q:
                    method, path, headers, body = make(i)
                    for _ in range(3):  # a keep-alive connection the server just closed: resend
                        try:
                            await http.request(method, path, headers=headers, json=body)
                            break
                        except httpx.TransportError:
                            await asyncio.sleep(0.05)

            await asyncio.gather(*(worker() for _ in range(concurrency)))
            series.append((min(total, first + every), memory_kib(pid)["VmRSS"]))
            print(f"    {series[-1][0]} distinct: {series[-1][1] / 1024:.1f} MiB", flush=True)
    return series


def run_memory(
    endpoint: str, workdir: Path, *, distinct: int = 100_000, burst: int = 1_000
) -> Memory:
    settings = bench_settings(
        endpoint,
        run_tables("bench-mem"),
        request_deadline_seconds=600,
        dynamodb_read_timeout_seconds=120,
        # The service's own read limits: each address makes one request, so none is refused, and
        # a bucket idle for burst / rate (5 s) is dropped.
        read_rate_per_second=20,
        read_burst=100,
    )
    memory = Memory(
        fargate=fargate_task_size(),
        bounds={
            "api_key_cache_max_entries": settings.api_key_cache_max_entries,
            "rate_limit_max_buckets": settings.rate_limit_max_buckets,
        },
    )
    started = time.perf_counter()

    async def create() -> None:
        from app.bootstrap import open_runtime

        async with open_runtime(settings, create_tables=True):
            pass

    asyncio.run(create())
    with ServedService(settings, workdir, name="memory") as served:
        with httpx.Client(base_url=served.url, timeout=120) as http:
            body = score_body("warm-up", 10, variant="memory")
            http.post("/v1/scores", json=body, headers=submit_headers()).raise_for_status()
            http.get("/v1/leaderboards/trivia/memory/alltime").raise_for_status()
            http.get("/v1/leaderboards/trivia/memory/alltime/players/warm-up").raise_for_status()
        time.sleep(2)
        memory.idle_kib = memory_kib(served.pid)["VmRSS"]
        with _Sampler(served.pid) as sampler:
            result: BurstResult = asyncio.run(
                http_burst(served.url, SUBMIT_KEY, players=burst, in_flight=burst, variant="membur")
            )
        memory.burst = result.summary()
        memory.burst_peak_kib = sampler.peak
        memory.burst_hwm_kib = memory_kib(served.pid)["VmHWM"]
        every = max(1, distinct // 10)
        memory.keys_series = asyncio.run(
            _distinct(
                served.url,
                distinct,
                every,
                lambda i: (
                    "POST",
                    "/v1/scores",
                    {"Authorization": f"Bearer {issued_shaped_key(i)}", "Idempotency-Key": "k"},
                    {"playerId": "x", "score": 1, "game": "trivia", "variant": "memory"},
                ),
                served.pid,
            )
        )
        memory.addresses_series = asyncio.run(
            _distinct(
                served.url,
                distinct,
                every,
                lambda i: (
                    "GET",
                    "/v1/leaderboards/trivia/memory/alltime/players/nobody",
                    {"X-Forwarded-For": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}"},
                    None,
                ),
                served.pid,
            )
        )
        memory.after_kib = memory_kib(served.pid)["VmRSS"]
    memory.stats = served.stats()
    memory.seconds = time.perf_counter() - started
    return memory
