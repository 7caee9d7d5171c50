"""Cost: write and read units of a typical player session (one three-board submission and five
rank reads) on boards of 10^3, 10^4 and 10^5 players, ours beside the earlier Lambda design
counted the same way, and in dollars.

Ours on the embedded backend where it holds the board (10^3 players on each of the three boards:
the real service, traced, every unit from real items); past that, the submission's fixed part
(its read of the state and its transaction) is the one measured on the embedded backend and the
rank part runs over ``bench.rank_sim``'s in-memory index (the real ``rank_many``/``rank_of`` over
``SimRankReader``, which accounts what each read would cost). The earlier Lambda design
(``seeds_*`` in names and run files): its write path as shipped and its rank read (a COUNT from
the top, capped at 2,000, then its metadata row).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
import numpy as np

from app.bootstrap import LAYOUT, open_runtime
from app.domain.clock import iso_ms
from app.domain.keys import RankKey
from app.domain.periods import Board, Period, PeriodKind
from app.domain.ranks import RankQuery
from app.domain.seed_file import parse_seed_text
from app.services.ranking.ranks import rank_many, rank_of
from bench import rank_sim
from bench.harness import cost, units
from bench.harness.calls import Driver
from bench.harness.service import (
    bench_client,
    bench_settings,
    in_process,
    run_tables,
    score_body,
)
from bench.harness.trace import Tracer

VARIANT = "session"
RANK_READS = 5
QUANTILES = (0.1, 0.5, 0.9)
"""Where the session's player lands on the board (share of players ahead): p50 is "typical"."""
PRICES: dict[str, Any] = {
    "write_request_unit_usd": 0.625 / 1_000_000,
    "read_request_unit_usd": 0.125 / 1_000_000,
    "region": "us-east-1",
    "table_class": "Standard",
    "source": "DynamoDB on-demand prices for US East (N. Virginia) as published since the "
    "price cut of 2024-11-01 (the earlier Lambda design's pricing example gives the same $0.625 "
    "per million writes); taken from what the harness's author knows, not fetched during the run",
}
SEEDS_CAP = 2_000
"""The earlier Lambda design's exact-rank limit: its COUNT from the top stopped at 2,000."""


@dataclass(frozen=True)
class SessionCost:
    size: int
    quantile: float
    source: str
    """"embedded backend" or "simulation"."""
    submit_write: float
    submit_read: float
    rank_read: float
    """Read units of one rank read (the mean of the session's five)."""
    # ``seeds_*``: the same for the earlier Lambda design (results.json stores these names).
    seeds_submit_write: float
    seeds_submit_read: float
    seeds_rank_read: float

    @property
    def read(self) -> float:
        return self.submit_read + RANK_READS * self.rank_read

    @property
    def seeds_read(self) -> float:
        """The earlier Lambda design's read units of the session."""
        return self.seeds_submit_read + RANK_READS * self.seeds_rank_read

    @staticmethod
    def dollars(write: float, read: float) -> float:
        """Per million sessions."""
        per_write, per_read = PRICES["write_request_unit_usd"], PRICES["read_request_unit_usd"]
        return float(1_000_000 * (write * per_write + read * per_read))

    def summary(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "quantile": self.quantile,
            "source": self.source,
            "submit_write_units": self.submit_write,
            "submit_read_units": self.submit_read,
            "rank_read_units": self.rank_read,
            "session_write_units": self.submit_write,
            "session_read_units": self.read,
            "usd_per_million_sessions": self.dollars(self.submit_write, self.read),
            "seeds_submit_write_units": self.seeds_submit_write,
            "seeds_submit_read_units": self.seeds_submit_read,
            "seeds_rank_read_units": self.seeds_rank_read,
            "seeds_session_read_units": self.seeds_read,
            "seeds_usd_per_million_sessions": self.dollars(
                self.seeds_submit_write, self.seeds_read
            ),
        }


# ---- the earlier Lambda design, counted by the same rules --------------------------------------


def seeds_write_units(boards: int = 3) -> float:
    """A new player's submission as the earlier Lambda design shipped it: the reservation (a put)
    and the outcome (an update), both standard; per board one transaction of a ConditionCheck on
    the seeding lease, the row (under 1 KB) and its 1.5 KB metadata row (2 KB: 2 units, 4 in a
    transaction); and the row's index entry."""
    row = units.write_blocks(rank_sim.INDEX_ENTRY_BYTES + 40)
    meta = units.write_blocks(rank_sim.seeds_meta_bytes([0] * 128, 0) + 64)
    per_board = 2 * (1 + row + meta) + 1  # check, row, meta in a transaction; the index entry
    return 2 + boards * per_board


def seeds_rank_units(ahead: int, meta_bytes: int) -> float:
    """The earlier Lambda design's rank (beside the row read, counted apart): a COUNT from the top
    of the board of the entries ahead, capped at 2,000; when capped, its metadata row (eventually
    consistent)."""
    counted = min(ahead, SEEDS_CAP)
    read = units.read_units(counted * rank_sim.INDEX_ENTRY_BYTES, consistent=False)
    if ahead >= SEEDS_CAP:
        read += units.read_units(meta_bytes, consistent=False)
    return read


ROW_READ = units.read_units(rank_sim.INDEX_ENTRY_BYTES + 40, consistent=True)
"""A strongly consistent read of one player's row (under 4 KB): 1 unit, the earlier Lambda
design's and ours."""


def seeds_session(ahead: int, meta_bytes: int, boards: int = 3) -> tuple[float, float, float]:
    """The earlier Lambda design's (submission writes, submission reads, one rank read) for a new
    player with ``ahead`` players ahead on each board. Its submission reads each board's row, then
    counts once a board for the rank after (a new player has no rank before)."""
    submit_read = boards * (ROW_READ + seeds_rank_units(ahead, meta_bytes))
    return seeds_write_units(boards), submit_read, ROW_READ + seeds_rank_units(ahead, meta_bytes)


# ---- ours over the simulation -----------------------------------------------------------------


async def _sim_costs(
    size: int, quantiles: tuple[float, ...], seed: int
) -> list[tuple[float, float, int, int, int]]:
    """Per quantile: (rank part of a new player's submission on one board, one rank read's rank
    part, the true number ahead, the earlier Lambda design's meta bytes, index) over a simulated
    trivia board."""
    trivia = next(d for d in rank_sim.DISTRIBUTIONS if d.name == "trivia")
    board = rank_sim.build_board(trivia, size, np.random.default_rng(seed))
    spec = rank_sim.LayoutSpec(LAYOUT.coarse, LAYOUT.fine)
    _, placement = rank_sim.model(board, spec)
    reader = rank_sim.SimRankReader(board, LAYOUT, placement)
    seeds_counts = np.bincount(
        [min(127, int(np.log1p(s) / np.log(1e12) * 128)) for s in board.score.tolist()],
        minlength=128,
    )
    meta = rank_sim.seeds_meta_bytes(seeds_counts.tolist(), size)
    out = []
    for q in quantiles:
        i = min(size - 1, int(q * size))
        existing = board.key(i)
        newcomer = RankKey(existing.score, existing.achieved_at_ms + 1, "p-newcomer")
        reader.reset()
        await rank_many(
            reader, LAYOUT, [RankQuery(rank_sim.BOARD_ID, newcomer, on_board=False)], cap=SEEDS_CAP
        )
        submit = reader.reset().half_units / 2
        await rank_of(reader, LAYOUT, RankQuery(rank_sim.BOARD_ID, existing), cap=SEEDS_CAP)
        read = reader.reset().half_units / 2
        out.append((submit, read, i, meta, i))
    return out


def sim_sessions(
    size: int, *, fixed_submit_read: float, submit_write: float, boards: int = 3, seed: int = 11
) -> list[SessionCost]:
    found = asyncio.run(_sim_costs(size, QUANTILES, seed))
    sessions = []
    for q, (submit_rank, read_rank, ahead, meta, _) in zip(QUANTILES, found, strict=True):
        seeds_w, seeds_r, seeds_rank = seeds_session(ahead, meta, boards)
        sessions.append(
            SessionCost(
                size=size,
                quantile=q,
                source="simulation",
                submit_write=submit_write,
                submit_read=fixed_submit_read + boards * submit_rank,
                rank_read=ROW_READ + read_rank,
                seeds_submit_write=seeds_w,
                seeds_submit_read=seeds_r,
                seeds_rank_read=seeds_rank,
            )
        )
    return sessions


# ---- ours on the embedded backend --------------------------------------------------------------


def _trivia_score(rng: random.Random) -> int:
    return max(0, round(rng.gauss(5_000, 1_500)))


async def embedded_sessions(endpoint: str, size: int, *, seed: int = 5) -> list[SessionCost]:
    """Three boards of ``size`` players each on the embedded backend, seeded by the service's own
    seeder; then per quantile a new player's submission and five rank reads, traced."""
    tables = run_tables("bench-session")
    # The seeder waits out the request deadline before writing: short here, nothing else runs.
    seeding = bench_settings(endpoint, tables, request_deadline_seconds=0.05)
    settings = bench_settings(
        endpoint, tables, request_deadline_seconds=600, dynamodb_read_timeout_seconds=120
    )
    rng = random.Random(seed)
    now = datetime.now(UTC)
    now_ms = int(now.timestamp() * 1000)
    since_midnight_ms = now_ms - int(
        datetime(now.year, now.month, now.day, tzinfo=UTC).timestamp() * 1000
    )
    window = max(1_000, min(since_midnight_ms, 3_000_000))
    players = [
        (f"s{i:06d}", _trivia_score(rng), now_ms - rng.randrange(1, window)) for i in range(size)
    ]
    header = "playerId,score,achievedAt,displayName,country\n"
    text = header + "".join(f"{p},{s},{iso_ms(t)},Player {p[-5:]},GB\n" for p, s, t in players)
    results: list[SessionCost] = []
    started = time.perf_counter()
    async with open_runtime(seeding, create_tables=True) as admin:
        for kind in (PeriodKind.ALLTIME, PeriodKind.DAY, PeriodKind.WEEK):
            board = Board("trivia", VARIANT, Period.containing(kind, now))
            seed_file = parse_seed_text(text, board=board, now=now, file_format="csv")
            await admin.leaderboard.operations.seed(board, seed_file)
        ordered = sorted(players, key=lambda p: (-p[1], p[2], p[0]))
        seeds_counts = [0] * 128
        for _, s, _ in players:
            seeds_counts[min(127, int(np.log1p(s) / np.log(1e12) * 128))] += 1
        meta = rank_sim.seeds_meta_bytes(seeds_counts, size)
        print(timed(f"  seeded 3 boards of {size}", started), flush=True)
        async with bench_client(endpoint) as client, in_process(settings) as service:
            tracer = Tracer(latency_s=0.0, after=cost.Sizer(client).read_back)
            tracer.install(service.runtime.client)
            # Before and after the submission, only the player's own items and the counters they
            # touch change: read the whole table (it holds the three boards) once each.
            state = cost.TableState({tables.scores: ("playerId", "leaderboardId")})
            drive = Driver(service.http, tracer, state, client)
            # The first submission a task makes to a board also registers the board: not part of
            # a typical session.
            tracer.enabled = False
            warm = score_body("warm-up", 1, variant=VARIANT, achievedAt=iso_ms(now_ms))
            (await drive.post(warm)).raise_for_status()
            tracer.enabled = True
            for q in QUANTILES:
                i = min(size - 1, int(q * size))
                _, score, _ = ordered[i]
                player = f"new-q{int(q * 100):02d}"
                body = score_body(player, score, variant=VARIANT, achievedAt=iso_ms(now_ms))
                path = f"/v1/leaderboards/trivia/{VARIANT}/alltime/players/{player}"

                async def post(b: dict[str, Any] = body) -> httpx.Response:
                    return await drive.post(b)

                async def read(p: str = path) -> httpx.Response:
                    return await drive.http.get(p)

                submitted = await drive.measure(f"session {size} q{q}: submit", post)
                reads = []
                for r in range(RANK_READS):
                    scenario = await drive.measure(
                        f"session {size} q{q}: rank read {r}", read, writes=False
                    )
                    reads.append(scenario.read_units)
                seeds_w, seeds_r, seeds_rank = seeds_session(i, meta)
                results.append(
                    SessionCost(
                        size=size,
                        quantile=q,
                        source="embedded backend",
                        submit_write=submitted.write_units,
                        submit_read=submitted.read_units,
                        rank_read=sum(reads) / len(reads),
                        seeds_submit_write=seeds_w,
                        seeds_submit_read=seeds_r,
                        seeds_rank_read=seeds_rank,
                    )
                )
        for name in (tables.scores, tables.snapshots):
            await admin.client.delete_table(TableName=name)
    return results


def timed(label: str, started: float) -> str:
    return f"{label}: {time.perf_counter() - started:.1f} s"
