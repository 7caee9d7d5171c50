"""What the service counts, and where it goes: per request, the DynamoDB calls and capacity units
of its canonical log line (``CallStats``); per process, Prometheus metrics served at ``/metrics``,
whose labels are never a player id, a board id or a raw path; and, for CloudWatch, the embedded
metric format on a request's log line (docs/operations.md).
"""

from __future__ import annotations

import contextvars
import functools
from collections import Counter as Tally
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

NAMESPACE = "Leaderboard"
"""The CloudWatch namespace of the service's own metrics."""


@dataclass
class CallStats:
    """One request's DynamoDB calls and capacity units, bound to a context variable by whoever
    wants the figures (the request middleware, a benchmark) and filled by the adapter's client
    hook (``app.store.accounting``)."""

    calls: Tally[str] = field(default_factory=Tally)
    read_units: float = 0.0
    write_units: float = 0.0
    conflicts: int = 0
    """Transactions cancelled by a conflict on one of their items."""

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


current_stats: contextvars.ContextVar[CallStats | None] = contextvars.ContextVar(
    "dynamodb_call_stats", default=None
)

REGISTRY = CollectorRegistry(auto_describe=True)

HTTP_REQUESTS = Counter(
    "leaderboard_http_requests",
    "Requests answered, by route template, method and status.",
    ["route", "method", "status"],
    registry=REGISTRY,
)
HTTP_SECONDS = Histogram(
    "leaderboard_http_request_duration_seconds",
    "Time from a request's arrival to its answer, by route template and method.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
    registry=REGISTRY,
)
HTTP_IN_FLIGHT = Gauge(
    "leaderboard_http_requests_in_flight", "Requests being served now.", registry=REGISTRY
)
DYNAMODB_CALLS = Counter(
    "leaderboard_dynamodb_calls", "DynamoDB calls, by operation.", ["operation"], registry=REGISTRY
)
DYNAMODB_UNITS = Counter(
    "leaderboard_dynamodb_capacity_units",
    "Capacity units DynamoDB reported consumed, by operation and kind (read, write).",
    ["operation", "kind"],
    registry=REGISTRY,
)
DYNAMODB_RETRIES = Counter(
    "leaderboard_dynamodb_client_retries",
    "Calls botocore resent (throttling, 5xx, timeouts), by operation.",
    ["operation"],
    registry=REGISTRY,
)
DYNAMODB_FAILURES = Counter(
    "leaderboard_dynamodb_failures",
    "Calls that failed past botocore's retries, by kind (throttled, busy: a plain write met a "
    "transaction holding its item, unavailable, rejected).",
    ["kind"],
    registry=REGISTRY,
)
CANCELLATIONS = Counter(
    "leaderboard_transaction_cancellations",
    "Transactions DynamoDB cancelled, by what wrote them and why (conflict, condition and other "
    "are retried; throttled is answered at once).",
    ["writer", "reason"],
    registry=REGISTRY,
)
RANK_ANSWERS = Counter(
    "leaderboard_rank_answers",
    "Ranks answered, exact or an estimated range, or a submission's skipped (rankDelta throttled).",
    ["kind"],
    registry=REGISTRY,
)
IDEMPOTENCY = Counter(
    "leaderboard_idempotency",
    "Submissions answered from an idempotency record or refused for a key in flight.",
    ["outcome"],
    registry=REGISTRY,
)
KEY_CACHE_ENTRIES = Gauge(
    "leaderboard_api_key_cache_entries",
    "API key answers held (bounded by LEADERBOARD_API_KEY_CACHE_MAX_ENTRIES, twice).",
    registry=REGISTRY,
)
RATE_LIMIT_BUCKETS = Gauge(
    "leaderboard_rate_limit_buckets",
    "Token buckets held, by limit (bounded by LEADERBOARD_RATE_LIMIT_MAX_BUCKETS each).",
    ["limit"],
    registry=REGISTRY,
)


@functools.lru_cache(maxsize=1024)
def _child(metric: Counter | Histogram, *labels: str) -> Any:
    """``metric.labels(*labels)``, looked up once: the series of every request and every call
    (route templates, methods, statuses and operations, a bounded set) are the same few."""
    return metric.labels(*labels)


def request_answered(route: str, method: str, status: int, seconds: float) -> None:
    _child(HTTP_REQUESTS, route, method, str(status)).inc()
    _child(HTTP_SECONDS, route, method).observe(seconds)


def dynamodb_call(operation: str, *, read_units: float, write_units: float, retries: int) -> None:
    _child(DYNAMODB_CALLS, operation).inc()
    if read_units:
        _child(DYNAMODB_UNITS, operation, "read").inc(read_units)
    if write_units:
        _child(DYNAMODB_UNITS, operation, "write").inc(write_units)
    if retries:
        _child(DYNAMODB_RETRIES, operation).inc(retries)


def dynamodb_failed(kind: Literal["throttled", "busy", "unavailable", "rejected"]) -> None:
    DYNAMODB_FAILURES.labels(kind).inc()


def transaction_cancelled(writer: str, reason: str) -> None:
    CANCELLATIONS.labels(writer, reason).inc()
    stats = current_stats.get()
    if stats is not None and reason == "conflict":
        stats.conflicts += 1


def rank_answered(kind: str) -> None:
    RANK_ANSWERS.labels(kind).inc()


def rank_delta_skipped(reason: Literal["throttled"]) -> None:
    """A submission's ranks not read (its score written all the same): ``kind="skipped"``."""
    RANK_ANSWERS.labels("skipped").inc()


def idempotent(outcome: Literal["replayed", "in_flight"]) -> None:
    IDEMPOTENCY.labels(outcome).inc()


def watch_bounds(
    *,
    key_cache: Callable[[], float],
    write_buckets: Callable[[], float],
    read_buckets: Callable[[], float],
) -> None:
    """The bounded memories' sizes, read when /metrics is scraped (the last app built wins)."""
    KEY_CACHE_ENTRIES.set_function(key_cache)
    RATE_LIMIT_BUCKETS.labels("write").set_function(write_buckets)
    RATE_LIMIT_BUCKETS.labels("read").set_function(read_buckets)


def emf_fields(*, route: str, status: int, stats: CallStats, timestamp_ms: int) -> dict[str, Any]:
    """The CloudWatch embedded-metric-format block for a request log line that already carries
    ``duration_ms``, ``dynamodb_calls``, ``read_units`` and ``write_units``; adds ``server_error``
    and ``transaction_conflicts``. Dimension: the route template (and none, for the service)."""
    return {
        "server_error": int(status >= 500),
        "transaction_conflicts": stats.conflicts,
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [["route"], []],
                    "Metrics": [
                        {"Name": "duration_ms", "Unit": "Milliseconds"},
                        {"Name": "dynamodb_calls", "Unit": "Count"},
                        {"Name": "read_units", "Unit": "Count"},
                        {"Name": "write_units", "Unit": "Count"},
                        {"Name": "server_error", "Unit": "Count"},
                        {"Name": "transaction_conflicts", "Unit": "Count"},
                    ],
                }
            ],
        },
        "route": route,
    }


def reconcile_emf(
    *, boards: int, drifted: int, differences: int, left: int, failed: int, timestamp_ms: int
) -> dict[str, Any]:
    """The embedded-metric-format fields of a live reconcile's log line: the boards walked, those
    found drifted, the counters found wrong and those left wrong, the boards that failed. The
    stack pages when ``reconcile_drifted_boards`` is above 0 in two runs in a row."""
    return {
        "reconcile_boards": boards,
        "reconcile_drifted_boards": drifted,
        "reconcile_differences": differences,
        "reconcile_left": left,
        "reconcile_failed_boards": failed,
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [[]],
                    "Metrics": [
                        {"Name": name, "Unit": "Count"}
                        for name in (
                            "reconcile_boards",
                            "reconcile_drifted_boards",
                            "reconcile_differences",
                            "reconcile_left",
                            "reconcile_failed_boards",
                        )
                    ],
                }
            ],
        },
    }
