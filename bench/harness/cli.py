"""``python -m bench``: the benchmark harness, end to end, writing docs/benchmarks/ (JSON and PNGs)
and docs/benchmarks.md.

    python3 tools/uv.py run --frozen --all-groups python -m bench

With no endpoint it starts an embedded backend (moto's server) of its own for everything, and a
service of its own on loopback for the HTTP parts. ``--dynamodb-endpoint`` runs the in-process and
process parts against another DynamoDB (each part makes and drops its own tables there);
``--base-url`` with ``--api-key`` (and ``--admin-key`` to seed through the admin endpoint) points the
HTTP parts (propagation, and the burst ladder over HTTP) at any deployment. ``--parts`` picks parts;
``--quick`` runs every part small (minutes), for trying the harness, not for the committed figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from bench import burst
from bench.harness import calls, document, http_load, memory, overhead, plots, report, session
from bench.harness.process import ServedService
from bench.harness.service import ADMIN_KEY, SUBMIT_KEY, bench_settings, run_tables

PARTS = ("calls", "cost", "cpu", "memory", "burst", "propagation")
LATENCY_S = 0.03


@dataclass(frozen=True)
class Scale:
    session_sizes: tuple[int, ...]
    embedded_session_size: int
    cpu_requests: int
    distinct: int
    burst_players: int
    burst_levels: tuple[int, ...]
    propagation: tuple[tuple[int, int], ...]
    """(players, samples)."""


FULL = Scale(
    session_sizes=(1_000, 10_000, 100_000),
    embedded_session_size=1_000,
    cpu_requests=100,
    distinct=100_000,
    burst_players=1_000,
    burst_levels=(8, 16, 64, 256, 1_000),
    propagation=((100, 100), (1_000, 100), (10_000, 30)),
)
QUICK = Scale(
    session_sizes=(1_000, 10_000),
    embedded_session_size=200,
    cpu_requests=20,
    distinct=2_000,
    burst_players=100,
    burst_levels=(8, 100),
    propagation=((100, 10), (1_000, 5)),
)


def _machine() -> str:
    cpus = os.cpu_count()
    memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return (
        f"{cpus} CPUs ({model or platform.machine()}), {memory_gib:.0f} GiB, "
        f"{platform.system()} {platform.release()}, CPython {platform.python_version()}"
    )


def _commit() -> str:
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],  # noqa: S607 - git from PATH, no input
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return found.stdout.strip()


@contextlib.contextmanager
def _endpoint(given: str | None) -> Iterator[str]:
    if given:
        yield given
        return
    with EmbeddedDynamo() as endpoint:
        yield endpoint


@contextlib.contextmanager
def _base_url(
    args: argparse.Namespace, endpoint: str, workdir: Path
) -> Iterator[tuple[str, str, str | None, int]]:
    """(base URL, submit key, admin key, seed piece bytes): the given deployment (under the
    default body limit), or a service of the harness's own (its body limit raised to 1 MiB)."""
    if args.base_url:
        yield args.base_url, args.api_key, args.admin_key, http_load.SEED_CHUNK_BYTES
        return
    settings = bench_settings(
        endpoint,
        run_tables("bench-http"),
        # The seeder waits out the request deadline before it writes: the default 10 s.
        dynamodb_read_timeout_seconds=30,
        max_body_bytes=1024 * 1024,
    )

    async def create() -> None:
        from app.bootstrap import open_runtime

        async with open_runtime(settings, create_tables=True):
            pass

    asyncio.run(create())
    with ServedService(settings, workdir, name="http") as served:
        yield served.url, SUBMIT_KEY, ADMIN_KEY, 1_000_000


def _bursts_in_process(endpoint: str, scale: Scale) -> list[dict[str, Any]]:
    rows = []
    for level in scale.burst_levels:
        r = asyncio.run(burst.run_level(endpoint, level, scale.burst_players))
        seeds = burst.SEEDS.get(level)
        rows.append(
            {
                "in_flight": level,
                "players": r.players,
                "succeeded": r.succeeded,
                "failures": dict(r.failures),
                # seeds_*: the earlier Lambda design's figures (results.json keeps the names).
                "seeds_succeeded": seeds[0] if seeds else None,
                "seeds_failed": seeds[1] if seeds else None,
                "conflicts_injected": r.conflicts_injected,
                "transactions": r.attempts,
                "most_attempts": r.most_attempts,
                "on_board": r.board_count,
                "counters": list(r.counters),
                "seconds": round(r.seconds, 1),
            }
        )
        print(
            f"  burst {level} in flight: {r.succeeded}/{r.players}, {dict(r.failures)}", flush=True
        )
    return rows


def _bursts_over_http(url: str, key: str, scale: Scale) -> list[dict[str, Any]]:
    rows = []
    for level in scale.burst_levels:
        r = asyncio.run(
            http_load.http_burst(
                url, key, players=scale.burst_players, in_flight=level, variant=f"burst{level}"
            )
        )
        seeds = burst.SEEDS.get(level)
        rows.append(
            {
                **r.summary(),
                "seeds_succeeded": seeds[0] if seeds else None,
                "seeds_failed": seeds[1] if seeds else None,
            }
        )
    return rows


def run(args: argparse.Namespace, partial: Path | None = None) -> dict[str, Any]:  # noqa: PLR0915 - one block a part, in order
    """Every part asked for; after each, what is known so far is saved to ``partial``."""
    scale = QUICK if args.quick else FULL
    parts = set(args.parts.split(",")) if args.parts else set(PARTS)
    unknown = parts - set(PARTS)
    if unknown:
        raise SystemExit(f"unknown parts: {', '.join(sorted(unknown))} (known: {', '.join(PARTS)})")
    began = time.perf_counter()
    results: dict[str, Any] = {
        "run": {
            "command": "python3 tools/uv.py run --frozen --all-groups python -m bench"
            + (f" --parts {args.parts}" if args.parts else "")
            + (" --quick" if args.quick else ""),
            "machine": _machine(),
            "started": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
            "commit": _commit(),
            "dynamodb": args.dynamodb_endpoint
            or "an embedded backend the harness started (moto's server, one call at a time)",
            "base_url": args.base_url or "a service the harness started on loopback",
            "latency_ms": int(LATENCY_S * 1000),
            "scale": scale.__dict__,
        }
    }
    with (
        tempfile.TemporaryDirectory(prefix="bench-") as tmp,
        _endpoint(args.dynamodb_endpoint) as endpoint,
    ):
        workdir = Path(tmp)
        if "calls" in parts or "cost" in parts:
            print("calls and critical path", flush=True)
            scenarios = asyncio.run(calls.run_calls(endpoint, latency_s=LATENCY_S))
            results["calls"] = [s.summary() for s in scenarios]
        _save(results, partial)
        if "cost" in parts:
            print("cost of a session", flush=True)
            by_name = {s["name"]: s for s in results["calls"]}
            new = by_name["new player"]
            state_read = next(c for c in new["sequence"] if c["operation"] == "BatchGetItem")
            rows = asyncio.run(session.embedded_sessions(endpoint, scale.embedded_session_size))
            for size in scale.session_sizes:
                rows += session.sim_sessions(
                    size,
                    fixed_submit_read=state_read["read_units"],
                    submit_write=new["write_units"],
                )
            results["session"] = [r.summary() for r in rows]
            results["prices"] = session.PRICES
        _save(results, partial)
        if "cpu" in parts:
            print("service CPU beside a bare replay", flush=True)
            measured, floor = overhead.run_overhead(endpoint, workdir, n=scale.cpu_requests)
            results["overhead"] = [o.summary() for o in measured]
            results["overhead_floor"] = floor.summary()
        _save(results, partial)
        if "memory" in parts:
            print("service memory", flush=True)
            m = memory.run_memory(
                endpoint, workdir, distinct=scale.distinct, burst=scale.burst_players
            )
            results["memory"] = m.summary()
        _save(results, partial)
        if "burst" in parts:
            print("burst ladder", flush=True)
            if args.base_url:
                results["bursts_how"] = (
                    f"over HTTP against {args.base_url}, {scale.burst_players} new players a "
                    "level, `rankDelta` false, each request tried once (no conflicts injected: "
                    "what the deployment's DynamoDB does is what happens)."
                )
                results["bursts"] = _bursts_over_http(args.base_url, args.api_key, scale)
            else:
                results["bursts_how"] = (
                    "`bench/burst.py`'s level (the driver behind docs/bursts.md and the CI burst "
                    f"test): {scale.burst_players} new players onto one all-time board, "
                    "`rankDelta` false, through two in-process app instances (standing for two "
                    "tasks) on the embedded backend, DynamoDB's per-item transaction conflicts "
                    "injected as it raises them; the board and its counters checked after."
                )
                results["bursts"] = _bursts_in_process(endpoint, scale)
        _save(results, partial)
        if "propagation" in parts:
            print("propagation", flush=True)
            with _base_url(args, endpoint, workdir) as (url, key, admin, piece):
                shown: list[dict[str, Any]] = []
                for players, samples in scale.propagation:
                    found = asyncio.run(
                        http_load.propagation(
                            url,
                            key,
                            players=players,
                            samples=samples,
                            admin_key=admin,
                            piece_bytes=piece,
                        )
                    )
                    shown.append(found.summary())
                    print(f"  {players} players: {shown[-1]}", flush=True)
                results["propagation"] = shown
    results["run"]["minutes"] = (time.perf_counter() - began) / 60
    return results


def _save(results: dict[str, Any], path: Path | None) -> None:
    if path is not None:
        path.write_text(json.dumps(results, indent=1, default=str) + "\n")


def write(results: dict[str, Any], out: Path, doc: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
    results["plots"] = plots.all_plots(results, out)
    doc.write_text(document.render(results, report.kept_notes(doc)))


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--parts", help=f"comma-separated, of: {', '.join(PARTS)} (default: all)")
    parser.add_argument("--dynamodb-endpoint", help="default: an embedded backend of its own")
    parser.add_argument("--base-url", help="the HTTP parts' target (default: a service of its own)")
    parser.add_argument("--api-key", help="a submitting key for --base-url")
    parser.add_argument("--admin-key", help="an admin key for --base-url (seeds faster)")
    parser.add_argument("--out", default="docs/benchmarks", type=Path)
    parser.add_argument("--doc", default="docs/benchmarks.md", type=Path)
    parser.add_argument("--quick", action="store_true", help="every part small: for a try")
    parser.add_argument(
        "--render", type=Path, metavar="RESULTS_JSON", help="only write the plots and the page"
    )
    args = parser.parse_args(argv)
    if args.base_url and not args.api_key:
        parser.error("--base-url needs --api-key")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(json=True, level=30, cache=False)
    structlog.contextvars.clear_contextvars()
    args.out.mkdir(parents=True, exist_ok=True)
    partial = args.out / "results.partial.json"
    results = json.loads(args.render.read_text()) if args.render else run(args, partial)
    partial.unlink(missing_ok=True)
    write(results, args.out, args.doc)
    print(f"wrote {args.out}/ and {args.doc} in {results['run']['minutes']:.1f} minutes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
