"""The harness's figures as PNGs (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.harness.overhead import TARGET_RATIO

OURS, SEEDS, BEFORE = "#1f77b4", "#d62728", "#7f7f7f"
"""Colours of ours, of the earlier Lambda design (``SEEDS``) and of the figures before."""


def _save(fig: Any, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def calls(results: dict[str, Any], out: Path) -> str:
    rows = [s for s in results["calls"] if s["name"] in _CALLS_SHOWN]
    names = [s["name"] for s in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    y = range(len(rows))
    left.barh([i + 0.2 for i in y], [s["calls"] for s in rows], 0.4, color=OURS, label="now")
    left.barh(
        [i - 0.2 for i in y],
        [s["before_calls"] or 0 for s in rows],
        0.4,
        color=BEFORE,
        label="before (logging proxy)",
    )
    left.set_yticks(list(y), names)
    left.invert_yaxis()
    left.set_xlabel("DynamoDB calls per request")
    left.legend()
    right.barh([i + 0.2 for i in y], [s["round_trips"] for s in rows], 0.4, color=OURS, label="now")
    right.barh(
        [i - 0.2 for i in y],
        [s["before_round_trips"] or 0 for s in rows],
        0.4,
        color=BEFORE,
        label="before (where measured)",
    )
    right.set_xlabel("sequential round trips")
    right.legend()
    fig.suptitle("Calls and critical path per request (client-side trace, 30 ms per call added)")
    return _save(fig, out / "calls.png")


_CALLS_SHOWN = (
    "new player, first time the task sees its boards",
    "new player",
    "new player, rankDelta false",
    "improvement, same slot",
    "improvement, crossing buckets",
    "no improvement",
    "replay",
    "409 (same key in flight, same task)",
    "top page (25)",
    "rank read",
    "around",
    "standings",
)


def timeline(results: dict[str, Any], out: Path, name: str = "new player") -> str:
    scenario = next(s for s in results["calls"] if s["name"] == name)
    seq = scenario["sequence"]
    fig, ax = plt.subplots(figsize=(10, 0.28 * len(seq) + 1.5))
    for i, c in enumerate(seq):
        ax.barh(i, c["end_ms"] - c["start_ms"], left=c["start_ms"], color=f"C{c['round_trip']}")
        ax.text(c["end_ms"] + 2, i, f"{c['operation']} {c['target']}", va="center", fontsize=7)
    ax.set_yticks([])
    ax.invert_yaxis()
    ax.set_xlabel(
        "ms from the first call (each call delayed 30 ms; the backend serves one at a time)"
    )
    ax.set_title(f"{name}: {len(seq)} calls in {scenario['round_trips']} round trips")
    return _save(fig, out / "timeline-new-player.png")


def session_cost(results: dict[str, Any], out: Path) -> str:
    rows = [r for r in results["session"] if r["quantile"] == 0.5]
    sizes = sorted({r["size"] for r in rows})
    pick = {r["size"]: r for r in rows if r["source"] == "simulation"}
    pick |= {r["size"]: r for r in rows if r["source"] == "embedded backend"}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = range(len(sizes))
    ours = [pick[s]["session_read_units"] + pick[s]["session_write_units"] for s in sizes]
    seeds = [
        pick[s]["seeds_session_read_units"] + pick[s]["seeds_submit_write_units"] for s in sizes
    ]
    ax.bar([i - 0.2 for i in x], ours, 0.4, color=OURS, label="ours")
    ax.bar([i + 0.2 for i in x], seeds, 0.4, color=SEEDS, label="the earlier Lambda design")
    ax.set_xticks(list(x), [f"{s:,} players" for s in sizes])
    ax.set_ylabel("read + write units")
    ax.set_title("A median player's session: one 3-board submission and 5 rank reads")
    ax.legend()
    return _save(fig, out / "session-cost.png")


def overhead(results: dict[str, Any], out: Path) -> str:
    rows = results["overhead"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = range(len(rows))
    ratios = [r["ratio"] or 0 for r in rows]
    # The 95% interval as error bars (none where a run has none).
    errors = [
        [
            max(0, r["ratio"] - r["ratio_interval"][0]) if r.get("ratio_interval") else 0
            for r in rows
        ],
        [
            max(0, r["ratio_interval"][1] - r["ratio"]) if r.get("ratio_interval") else 0
            for r in rows
        ],
    ]
    ax.bar([i - 0.2 for i in x], ratios, 0.4, yerr=errors, capsize=3, color=OURS, label="now")
    ax.bar(
        [i + 0.2 for i in x],
        [r["before_ratio"] or 0 for r in rows],
        0.4,
        color=BEFORE,
        label="before",
    )
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(TARGET_RATIO, color="black", linewidth=0.8, linestyle="--", label="target")
    ax.set_xticks(list(x), [r["operation"] for r in rows])
    ax.set_ylabel("service CPU / bare aiobotocore CPU")
    ax.set_title("CPU per request: the service process over a bare replay of its calls")
    ax.legend()
    return _save(fig, out / "cpu-overhead.png")


def memory(results: dict[str, Any], out: Path) -> str:
    m = results["memory"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for series, label in (
        ("keys_series", "distinct API keys"),
        ("addresses_series", "distinct client addresses"),
    ):
        pts = m[series]
        ax.plot([p[0] for p in pts], [p[1] / 1024 for p in pts], marker="o", label=label)
    ax.axhline(m["idle_kib"] / 1024, color=BEFORE, linestyle=":", label="idle")
    ax.axhline(
        m["burst_peak_kib"] / 1024, color=SEEDS, linestyle="--", label="peak of the 1,000 burst"
    )
    ax.set_xlabel("distinct values seen")
    ax.set_ylabel("service resident set (MiB)")
    ax.set_ylim(0, max(200, m["burst_peak_kib"] / 1024 * 1.3))
    ax.set_title(f"Service memory (the Fargate task has {m['fargate'].get('task_memory_mib')} MiB)")
    ax.legend()
    return _save(fig, out / "memory.png")


def bursts(results: dict[str, Any], out: Path) -> str:
    rows = results["bursts"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = range(len(rows))
    ax.bar([i - 0.2 for i in x], [r["succeeded"] for r in rows], 0.4, color=OURS, label="ours")
    ax.bar(
        [i + 0.2 for i in x],
        [r["seeds_succeeded"] or 0 for r in rows],
        0.4,
        color=SEEDS,
        label="the earlier Lambda design (2026-08-19; none at 256)",
    )
    ax.set_xticks(list(x), [str(r["in_flight"]) for r in rows])
    ax.set_xlabel("requests in flight")
    ax.set_ylabel("of 1,000 new players, succeeded")
    ax.set_title("1,000 new players onto one board")
    ax.legend(loc="lower left")
    return _save(fig, out / "bursts.png")


def propagation(results: dict[str, Any], out: Path) -> str:
    rows = results["propagation"]
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x = range(len(rows))
    for k, (q, shade) in enumerate((("p50", 0.5), ("p95", 0.75), ("p99", 1.0))):
        ax.bar(
            [i - 0.3 + 0.1 * k for i in x],
            [r[f"propagation_ms_{q}"] for r in rows],
            0.1,
            color=OURS,
            alpha=shade,
            label=f"ours {q}",
        )
        ax.bar(
            [i + 0.05 + 0.1 * k for i in x],
            [(r["seeds_ms_p50_p95_p99"] or (0, 0, 0))[k] for r in rows],
            0.1,
            color=SEEDS,
            alpha=shade,
            label=f"Lambda design {q}",
        )
    ax.set_xticks(list(x), [f"{r['players']:,} players" for r in rows])
    ax.set_ylabel("ms from the POST's answer to a GET showing it")
    ax.set_title("Propagation (ours: this machine, embedded backend; Lambda design: AWS DEV)")
    ax.legend(ncol=2, fontsize=8)
    return _save(fig, out / "propagation.png")


def all_plots(results: dict[str, Any], out: Path) -> list[str]:
    made = []
    for plot, part in (
        (calls, "calls"),
        (timeline, "calls"),
        (session_cost, "session"),
        (overhead, "overhead"),
        (memory, "memory"),
        (bursts, "bursts"),
        (propagation, "propagation"),
    ):
        if results.get(part):
            made.append(plot(results, out))
    return made
