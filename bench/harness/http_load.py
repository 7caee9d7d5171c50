"""What needs only a base URL and a key: a burst of new players at a number of requests in flight
(a reason for every failure), and propagation (a POST answered to the first GET of the top page
that shows it), over HTTP against any deployment of the service."""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from app.domain.clock import iso_ms

SEEDS_PROPAGATION = {100: (160, 235, 449), 1_000: (158, 181, 206), 10_000: (158, 210, 265)}
"""The earlier Lambda design's 2026-08-18 run on DEV (API Gateway, Lambda, DynamoDB): p50, p95,
p99 in ms."""
SEED_CHUNK_BYTES = 60_000
"""Seed files are sent in pieces under the service's default 64 KiB body limit."""


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q * len(ordered) + 0.5) - 1))]


@dataclass
class BurstResult:
    in_flight: int
    players: int
    succeeded: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "in_flight": self.in_flight,
            "players": self.players,
            "succeeded": self.succeeded,
            "failures": dict(self.failures),
            "seconds": round(self.seconds, 1),
            "latency_ms_p50": round(percentile(self.latencies_ms, 0.5), 1),
            "latency_ms_p99": round(percentile(self.latencies_ms, 0.99), 1),
        }


def _reason(response: httpx.Response) -> str:
    try:
        problem = response.json()
    except ValueError:
        problem = {}
    detail = str(problem.get("detail", response.reason_phrase)).split(";")[0][:60]
    return f"{response.status_code} {detail}"


async def http_burst(
    base_url: str, api_key: str, *, players: int, in_flight: int, variant: str
) -> BurstResult:
    """``players`` new players onto one board (``rankDelta`` false, as bench/burst.py), at most
    ``in_flight`` requests at once, each tried once: a failure is counted with its reason."""
    result = BurstResult(in_flight, players)
    gate = asyncio.Semaphore(in_flight)
    now_ms = int(time.time() * 1000)
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    async with httpx.AsyncClient(base_url=base_url, timeout=900, limits=limits) as http:

        async def one(i: int) -> None:
            body = {
                "playerId": f"b{i:05d}",
                "score": 1_000 + (i * 7919) % 9_000,
                "game": "trivia",
                "variant": variant,
                "achievedAt": iso_ms(now_ms - i),
                "rankDelta": False,
            }
            headers = {"Authorization": f"Bearer {api_key}", "Idempotency-Key": uuid.uuid4().hex}
            async with gate:
                began = time.perf_counter()
                try:
                    response = await http.post("/v1/scores", json=body, headers=headers)
                except httpx.HTTPError as exc:
                    result.failures[f"transport {type(exc).__name__}"] += 1
                    return
                result.latencies_ms.append((time.perf_counter() - began) * 1000)
            if response.status_code == 200:
                result.succeeded += 1
            else:
                result.failures[_reason(response)] += 1

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(players)))
        result.seconds = time.perf_counter() - started
    return result


@dataclass
class Propagation:
    players: int
    samples: int
    post_ms: list[float] = field(default_factory=list)
    shown_ms: list[float] = field(default_factory=list)
    """From the POST's answer to the answer of the first GET of the top page that shows it."""
    polls: list[int] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    seed_seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        seeds = SEEDS_PROPAGATION.get(self.players)
        return {
            "players": self.players,
            "samples": len(self.shown_ms),
            "errors": dict(self.errors),
            "propagation_ms_p50": round(percentile(self.shown_ms, 0.5), 1),
            "propagation_ms_p95": round(percentile(self.shown_ms, 0.95), 1),
            "propagation_ms_p99": round(percentile(self.shown_ms, 0.99), 1),
            "post_ms_p50": round(percentile(self.post_ms, 0.5), 1),
            "gets_until_shown_max": max(self.polls, default=0),
            "gets_until_shown_mean": round(statistics.fmean(self.polls), 2) if self.polls else None,
            "seeds_ms_p50_p95_p99": seeds,  # the earlier Lambda design's
            "seed_seconds": round(self.seed_seconds, 1),
        }


async def _seed_board(
    http: httpx.AsyncClient,
    board: str,
    players: int,
    *,
    admin_key: str | None,
    api_key: str,
    piece_bytes: int,
) -> float:
    """``players`` on the all-time board ``board`` (game/variant/alltime path): through the admin
    seed endpoint in pieces when there is an admin key, else one submission each."""
    started = time.perf_counter()
    now_ms = int(time.time() * 1000)
    rows = [
        f"f{i:06d},{1_000 + (i * 7919) % 90_000},{iso_ms(now_ms - 1_000 - i)}\n"
        for i in range(players)
    ]
    if admin_key is not None:
        header = "playerId,score,achievedAt\n"
        chunk: list[str] = []
        size = len(header)
        for row in [*rows, None]:
            if row is None or size + len(row) > piece_bytes:
                response = await http.post(
                    f"/v1/leaderboards/{board}/seed",
                    content=header + "".join(chunk),
                    headers={"Authorization": f"Bearer {admin_key}", "Content-Type": "text/csv"},
                )
                response.raise_for_status()
                chunk, size = [], len(header)
            if row is not None:
                chunk.append(row)
                size += len(row)
        return time.perf_counter() - started
    game, variant, _ = board.split("/")
    gate = asyncio.Semaphore(16)

    async def one(row: str) -> None:
        player, score, achieved = row.strip().split(",")
        body = {
            "playerId": player,
            "score": int(score),
            "game": game,
            "variant": variant,
            "achievedAt": achieved,
            "rankDelta": False,
        }
        headers = {"Authorization": f"Bearer {api_key}", "Idempotency-Key": uuid.uuid4().hex}
        async with gate:
            (await http.post("/v1/scores", json=body, headers=headers)).raise_for_status()

    await asyncio.gather(*(one(r) for r in rows))
    return time.perf_counter() - started


MAX_POLLS = 200
"""GETs of the top page per sample before a new leader counts as not shown."""


async def propagation(
    base_url: str,
    api_key: str,
    *,
    players: int,
    samples: int,
    admin_key: str | None = None,
    piece_bytes: int = SEED_CHUNK_BYTES,
) -> Propagation:
    """A board of ``players`` (seeded), then ``samples`` times: a new player with the best score
    yet (``rankDelta`` false), and the top page asked until it shows them."""
    variant = f"prop{players}x{uuid.uuid4().hex[:4]}"
    board = f"trivia/{variant}/alltime"
    result = Propagation(players, samples)
    async with httpx.AsyncClient(base_url=base_url, timeout=300) as http:
        result.seed_seconds = await _seed_board(
            http, board, players, admin_key=admin_key, api_key=api_key, piece_bytes=piece_bytes
        )
        for j in range(samples):
            player = f"top{j:04d}"
            body = {
                "playerId": player,
                "score": 1_000_000 + j,
                "game": "trivia",
                "variant": variant,
                "rankDelta": False,
            }
            headers = {"Authorization": f"Bearer {api_key}", "Idempotency-Key": uuid.uuid4().hex}
            sent = time.perf_counter()
            response = await http.post("/v1/scores", json=body, headers=headers)
            answered = time.perf_counter()
            if response.status_code != 200:
                result.errors[_reason(response)] += 1
                continue
            result.post_ms.append((answered - sent) * 1000)
            for poll in range(1, MAX_POLLS + 1):
                page = await http.get(f"/v1/leaderboards/{board}", params={"limit": 1})
                entries = page.json().get("entries", []) if page.status_code == 200 else []
                if entries and entries[0]["playerId"] == player:
                    result.shown_ms.append((time.perf_counter() - answered) * 1000)
                    result.polls.append(poll)
                    break
            else:
                result.errors[f"not shown after {MAX_POLLS} GETs"] += 1
    return result
