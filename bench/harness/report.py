"""docs/benchmarks.md from a run's results: every figure beside its baseline and the command that
made it. The block between the notes markers is written by hand and kept when the file is made
again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

NOTES_START, NOTES_END = "<!-- notes:start -->", "<!-- notes:end -->"


def kept_notes(path: Path) -> str:
    if not path.exists():
        return f"{NOTES_START}\n(Notes on this run, by hand.)\n{NOTES_END}"
    text = path.read_text()
    if NOTES_START in text and NOTES_END in text:
        return text[text.index(NOTES_START) : text.index(NOTES_END) + len(NOTES_END)]
    return f"{NOTES_START}\n{NOTES_END}"


def _u(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}"


def _before(calls: int | None, trips: int | None) -> str:
    if calls is None:
        return "-"
    return f"{calls}" + (f" in {trips}" if trips else "")


def calls_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| request | status | calls in round trips | before: calls in round trips | read units | "
        "write units (of which index) | moto's ConsumedCapacity (read / write) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines.extend(
        f"| {s['name']} | {s['status']} | {s['calls']} in {s['round_trips']} "
        f"| {_before(s['before_calls'], s['before_round_trips'])} "
        f"| {_u(s['read_units'])} | {_u(s['write_units'])} ({_u(s['index_write_units'])}) "
        f"| {_u(s['backend_read_units'])} / {_u(s['backend_write_units'])} |"
        for s in results["calls"]
    )
    return lines


def sequence_table(results: dict[str, Any], name: str) -> list[str]:
    scenario = next(s for s in results["calls"] if s["name"] == name)
    lines = [
        "| # | round trip | call | what | start-end (ms) | read units | write units (index) |",
        "| ---: | ---: | --- | --- | --- | ---: | ---: |",
    ]
    for i, c in enumerate(scenario["sequence"], 1):
        writes = c["write_units_table"] + c["write_units_index"]
        lines.append(
            f"| {i} | {c['round_trip']} | {c['operation']} | `{c['target']}` "
            f"| {c['start_ms']:.0f}-{c['end_ms']:.0f} | {_u(c['read_units'])} "
            f"| {_u(writes)} ({_u(c['write_units_index'])}) |"
        )
    return lines


def session_table(results: dict[str, Any]) -> list[str]:
    where = {0.1: "top 10%", 0.5: "median", 0.9: "bottom 10%"}
    lines = [
        "| players a board | player | counted on | ours: submission W / R | ours: rank read R "
        "| ours: session W + R | $ per 10^6 sessions | Lambda design: submission W / R "
        "| Lambda design: rank read R | Lambda design: session W + R | Lambda design: $ per 10^6 |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    lines.extend(
        f"| {r['size']:,} | {where.get(r['quantile'], r['quantile'])} | {r['source']} "
        f"| {_u(r['submit_write_units'])} / {_u(r['submit_read_units'])} "
        f"| {_u(r['rank_read_units'])} "
        f"| {_u(r['session_write_units'])} + {_u(r['session_read_units'])} "
        f"| {r['usd_per_million_sessions']:.2f} "
        f"| {_u(r['seeds_submit_write_units'])} / {_u(r['seeds_submit_read_units'])} "
        f"| {_u(r['seeds_rank_read_units'])} "
        f"| {_u(r['seeds_submit_write_units'])} + {_u(r['seeds_session_read_units'])} "
        f"| {r['seeds_usd_per_million_sessions']:.2f} |"
        for r in results["session"]
    )
    return lines


def overhead_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| operation | requests compared (left out) | calls a request | service CPU ms a request "
        "| bare aiobotocore CPU ms | ratio | 95% interval | at most 1.2 | before |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for r in results["overhead"]:
        before = f"{r['before_ratio']:.2f}x" if r["before_ratio"] else "-"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"  # none compared
        interval = r.get("ratio_interval")
        between = "-" if interval is None else f"{interval[0]:.2f}-{interval[1]:.2f}"
        lines.append(
            f"| {r['operation']} | {r['requests']} ({r.get('left_out', 0)}) "
            f"| {r['calls_per_request']:.2f} "
            f"| {r['service_cpu_ms_per_request']:.2f} | {r['bare_cpu_ms_per_request']:.2f} "
            f"| {ratio} | {between} | {r.get('target') or '-'} | {before} |"
        )
    return lines


def floor_table(results: dict[str, Any]) -> list[str]:
    f = results["overhead_floor"]

    def least(ratio: float | None) -> str:
        return "-" if ratio is None else f"{ratio:.2f}x"

    return [
        "| what was served | CPU ms a request | least ratio of a one-call request on it |",
        "| --- | ---: | ---: |",
        f"| the bare script's one Query (a top page's, replayed) | {f['bare_call_cpu_ms']:.2f} | |",
        f"| FastAPI and uvicorn alone, one route answering `{{}}` (`bench/harness/floor.py`) "
        f"| {f['stack_no_call_cpu_ms']:.2f} | {least(f['least_one_call_ratio_stack'])} |",
        f"| the service's `GET /healthz` (its middleware, metrics and log line; no call) "
        f"| {f['service_no_call_cpu_ms']:.2f} | {least(f['least_one_call_ratio_service'])} |",
    ]


def memory_table(results: dict[str, Any]) -> list[str]:
    m = results["memory"]
    mib = 1024
    keys_last = m["keys_series"][-1] if m["keys_series"] else (0, 0)
    addr_last = m["addresses_series"][-1] if m["addresses_series"] else (0, 0)
    task = m["fargate"].get("task_memory_mib")
    lines = [
        "| moment | service resident set | share of the Fargate task's memory |",
        "| --- | ---: | ---: |",
    ]
    for label, kib in (
        ("idle (after one request of each kind)", m["idle_kib"]),
        ("peak of 1,000 new players at 1,000 in flight (sampled every 20 ms)", m["burst_peak_kib"]),
        (f"after {keys_last[0]:,} distinct API keys", keys_last[1]),
        (f"after {addr_last[0]:,} distinct client addresses as well", addr_last[1]),
        ("peak over the whole run (VmHWM)", max(m["burst_hwm_kib"], m["after_kib"])),
    ):
        share = f"{100 * kib / mib / task:.0f}%" if task else "-"
        lines.append(f"| {label} | {kib / mib:.1f} MiB | {share} |")
    return lines


def bursts_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| in flight | succeeded | failed (reason) | Lambda design: succeeded / failed "
        "| conflicts injected | transactions sent | most attempts | on the board "
        "| counters (coarse, fine) | seconds |",
        "| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | ---: |",
    ]
    for r in results["bursts"]:
        failed = ", ".join(f"{n} x {k}" for k, n in r["failures"].items()) or "0"
        seeds = (
            f"{r['seeds_succeeded']} / {r['seeds_failed']}"
            if r["seeds_succeeded"] is not None
            else "-"
        )
        lines.append(
            f"| {r['in_flight']} | {r['succeeded']} | {failed} | {seeds} "
            f"| {r.get('conflicts_injected', '-')} | {r.get('transactions', '-')} "
            f"| {r.get('most_attempts', '-')} | {r.get('on_board', '-')} | {r.get('counters', '-')} "
            f"| {r['seconds']} |"
        )
    return lines


def propagation_table(results: dict[str, Any]) -> list[str]:
    lines = [
        "| players | samples | errors | ours p50 / p95 / p99 (ms) "
        "| Lambda design p50 / p95 / p99 (ms) | GETs until shown (mean, max) | POST p50 (ms) |",
        "| ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in results["propagation"]:
        seeds = " / ".join(str(v) for v in r["seeds_ms_p50_p95_p99"] or ()) or "-"
        lines.append(
            f"| {r['players']:,} | {r['samples']} | {r['errors'] or 0} "
            f"| {r['propagation_ms_p50']:.0f} / {r['propagation_ms_p95']:.0f} / "
            f"{r['propagation_ms_p99']:.0f} | {seeds} "
            f"| {r['gets_until_shown_mean']}, {r['gets_until_shown_max']} | {r['post_ms_p50']:.0f} |"
        )
    return lines
