"""The Grafana dashboard compose provisions (`docker compose --profile observe up`), written from
the panels below: `python -m tools.grafana_dashboard --write docker/grafana/dashboards/leaderboard.json`.

Each panel's queries are PromQL over the service's /metrics; `tests/integration/test_dashboard.py`
runs every one of them through a real Prometheus scraping the service under a short load. The
CDK stack's CloudWatch dashboard shows the same panels from the embedded metrics
(`infra/dashboard.py`).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATASOURCE = {"type": "prometheus", "uid": "prometheus"}
"""The data source compose provisions (docker/grafana/provisioning/datasources/prometheus.yml)."""

RATE = "$__rate_interval"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str


@dataclass(frozen=True)
class Panel:
    title: str
    description: str
    queries: tuple[Query, ...]
    unit: str = "short"


def rate(metric: str, by: str, where: str = "") -> str:
    return f"sum by ({by}) (rate({metric}{where}[{RATE}]))"


PANELS: tuple[Panel, ...] = (
    Panel(
        "Requests by route",
        "Requests answered a second, by route template.",
        (Query(rate("leaderboard_http_requests_total", "route"), "{{route}}"),),
        "reqps",
    ),
    Panel(
        "Answers by status",
        "Requests answered a second, by HTTP status: 4xx are the callers' (each a problem "
        "document), 5xx the service's or DynamoDB's (503s say throttled, busy or unavailable).",
        (Query(rate("leaderboard_http_requests_total", "status"), "{{status}}"),),
        "reqps",
    ),
    Panel(
        "Latency by route (p50, p99)",
        "Time from a request's arrival to its answer.",
        (
            Query(
                "histogram_quantile(0.5, sum by (route, le) "
                f"(rate(leaderboard_http_request_duration_seconds_bucket[{RATE}])))",
                "p50 {{route}}",
            ),
            Query(
                "histogram_quantile(0.99, sum by (route, le) "
                f"(rate(leaderboard_http_request_duration_seconds_bucket[{RATE}])))",
                "p99 {{route}}",
            ),
        ),
        "s",
    ),
    Panel(
        "Submissions by outcome",
        "written: a board's entry changed; unchanged: none did; replayed: answered from the same "
        "Idempotency-Key's stored outcome; the rest were refused (in_flight, board_busy, "
        "throttled, contended, unavailable, held, invalid).",
        (Query(rate("leaderboard_submissions_total", "outcome"), "{{outcome}}"),),
        "ops",
    ),
    Panel(
        "DynamoDB calls by operation",
        "Calls the service made a second.",
        (Query(rate("leaderboard_dynamodb_calls_total", "operation"), "{{operation}}"),),
        "ops",
    ),
    Panel(
        "DynamoDB capacity units",
        "Read and write units DynamoDB reported consumed a second (the embedded backend's are "
        "placeholders).",
        (Query(rate("leaderboard_dynamodb_capacity_units_total", "kind"), "{{kind}}"),),
        "short",
    ),
    Panel(
        "DynamoDB retries",
        "Calls botocore resent (throttling, 5xx, timeouts) a second, by operation.",
        (Query(rate("leaderboard_dynamodb_client_retries_total", "operation"), "{{operation}}"),),
        "ops",
    ),
    Panel(
        "Conflicts and throttles",
        "Transactions DynamoDB cancelled, by writer and reason (conflict, condition and other "
        "are retried; throttled is answered 503 at once), and calls that failed past the "
        "retries, by kind.",
        (
            Query(
                rate("leaderboard_transaction_cancellations_total", "writer, reason"),
                "{{writer}} {{reason}}",
            ),
            Query(rate("leaderboard_dynamodb_failures_total", "kind"), "failed: {{kind}}"),
        ),
        "ops",
    ),
    Panel(
        "Rank answers: exact vs range",
        "Ranks answered a second: exact, an honest range (estimated), or not read for a "
        "submission whose rank reads were throttled (skipped).",
        (Query(rate("leaderboard_rank_answers_total", "kind"), "{{kind}}"),),
        "ops",
    ),
    Panel(
        "Bursts and deadlines",
        "Requests refused at once as overloaded (shed), by kind; submissions that found a "
        "board's admission limit full and waited, or were refused board-busy; repeated "
        "Idempotency-Keys; requests cut at the request deadline.",
        (
            Query(rate("leaderboard_requests_shed_total", "kind"), "shed {{kind}}"),
            Query(
                rate("leaderboard_board_admission_waits_total", "outcome"), "admission {{outcome}}"
            ),
            Query(rate("leaderboard_submission_repeats_total", "outcome"), "repeat {{outcome}}"),
            Query(
                rate("leaderboard_request_deadlines_exceeded_total", "route"), "deadline {{route}}"
            ),
        ),
        "ops",
    ),
    Panel(
        "In flight",
        "Requests being served now, and how many under /v1/ the task lets in at once (the "
        "overload limit, which follows the backend's latency).",
        (
            Query("sum(leaderboard_http_requests_in_flight)", "requests"),
            Query("max(leaderboard_admission_limit)", "limit"),
        ),
        "short",
    ),
    Panel(
        "Process: memory, CPU, open files",
        "The service process's resident memory, CPU seconds a second and open file descriptors.",
        (
            Query("process_resident_memory_bytes", "resident memory (bytes)"),
            Query(f"rate(process_cpu_seconds_total[{RATE}])", "CPU (cores)"),
            Query("process_open_fds", "open files"),
        ),
        "short",
    ),
)


def dashboard() -> dict[str, Any]:
    """The dashboard as Grafana's JSON model: two panels a row, each a time series."""
    panels = []
    for i, panel in enumerate(PANELS):
        panels.append(
            {
                "id": i + 1,
                "type": "timeseries",
                "title": panel.title,
                "description": panel.description,
                "datasource": DATASOURCE,
                "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
                "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
                "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
                "targets": [
                    {
                        "refId": chr(ord("A") + j),
                        "datasource": DATASOURCE,
                        "expr": query.expr,
                        "legendFormat": query.legend,
                    }
                    for j, query in enumerate(panel.queries)
                ],
            }
        )
    return {
        "uid": "leaderboard",
        "title": "Leaderboard",
        "description": "The leaderboard service's requests, submissions, DynamoDB calls, ranks "
        "and process (docs/operations.md).",
        "tags": ["leaderboard"],
        "timezone": "utc",
        "schemaVersion": 39,
        "version": 1,
        "refresh": "10s",
        "time": {"from": "now-30m", "to": "now"},
        "panels": panels,
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", type=Path, help="write the dashboard here (else print it)")
    args = parser.parse_args()
    if args.write is None:
        sys.stdout.write(render())
    else:
        args.write.write_text(render())


if __name__ == "__main__":
    main()
