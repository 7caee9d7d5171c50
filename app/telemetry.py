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

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)

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
    events: Tally[str] = field(default_factory=Tally)
    """What else happened while the request was served, by ``EVENTS``' names."""
    submissions: Tally[str] = field(default_factory=Tally)
    """The request's submissions by outcome (``SUBMISSION_OUTCOMES``): one, or a batch's."""

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


current_stats: contextvars.ContextVar[CallStats | None] = contextvars.ContextVar(
    "dynamodb_call_stats", default=None
)

# A ``_created`` series beside every counter doubles what a scrape stores and no panel reads it.
disable_created_metrics()  # type: ignore[no-untyped-call]

EVENTS = (
    "dynamodb_retries",
    "dynamodb_throttles",
    "rank_exact",
    "rank_estimated",
    "admission_waits",
    "admission_refusals",
    "deadline_exceeded",
    "shed",
)
"""The per-request counts a request's log line carries as CloudWatch metrics (``emf_fields``),
each also a Prometheus series: the same figures, on AWS and locally."""


def _count(event: str, n: int = 1) -> None:
    stats = current_stats.get()
    if stats is not None:
        stats.events[event] += n


REGISTRY = CollectorRegistry(auto_describe=True)
"""The service's own metrics, and the process's and the interpreter's (memory, CPU, open files,
garbage collections): the collectors prometheus_client keeps for its default registry."""
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    REGISTRY.register(_collector)

SERVED_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"})
"""The methods the API serves; any other is labelled ``other``, so a scanner's made-up methods
cannot grow the series."""

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
SUBMISSIONS = Counter(
    "leaderboard_submissions",
    "Score submissions answered, by outcome: written (a board's entry changed), unchanged (no "
    "board's did), replayed (answered from the stored outcome of the same Idempotency-Key), or "
    "refused: in_flight (the same key in flight), board_busy (the board's admission limit), "
    "throttled, contended (conflicts past the retries), unavailable, held (a seed, an erasure or "
    "a definition change holds the board), invalid (any other 4xx).",
    ["outcome"],
    registry=REGISTRY,
)
SUBMISSION_OUTCOMES = (
    "written",
    "unchanged",
    "replayed",
    "in_flight",
    "board_busy",
    "throttled",
    "contended",
    "unavailable",
    "held",
    "banned",
    "invalid",
)
MODERATION_ACTIONS = Counter(
    "leaderboard_moderation_actions",
    "Moderation actions taken on players (decision 0036), by action: hide, ban, restore, void.",
    ["action"],
    registry=REGISTRY,
)
MODERATION_ACTION_NAMES = ("hide", "ban", "restore", "void")
MODERATED_ROWS = Counter(
    "leaderboard_moderated_rows",
    "Players' rows moderation changed, by change: hidden (off the boards and their counters), "
    "shown (back, by a restore), voided (deleted), written_hidden (a hidden player's submission).",
    ["change"],
    registry=REGISTRY,
)
MODERATED_ROW_CHANGES = ("hidden", "shown", "voided", "written_hidden")
CLOSES = Counter(
    "leaderboard_period_closes",
    "Boards whose period closed, by what a closer did: closed (wrote its final snapshot and "
    "board.closed event), raced (another task or run closed it first), failed (left for the "
    "next run).",
    ["outcome"],
    registry=REGISTRY,
)
CLOSE_OUTCOMES = ("closed", "raced", "failed")
CLAIMS = Counter(
    "leaderboard_reward_claims",
    "Reward claims answered, by outcome: first (201: grant the reward), repeat (200), open "
    "(409: the period has not closed), absent (404).",
    ["outcome"],
    registry=REGISTRY,
)
CLAIM_OUTCOMES = ("first", "repeat", "open", "absent")
BATCH_ITEMS = Counter(
    "leaderboard_batch_items",
    "Items of POST /v1/scores:batch answered, by the status each was answered with (what POST "
    "/v1/scores would have answered it alone; leaderboard_http_requests counts the batch once).",
    ["status"],
    registry=REGISTRY,
)
BOARD_ADMISSIONS = Counter(
    "leaderboard_board_admission_waits",
    "Submissions that found a board's admission limit full (a burst): waited for a place "
    "(waited), or waited in vain and were refused 503 board-busy (refused).",
    ["outcome"],
    registry=REGISTRY,
)
DEADLINES = Counter(
    "leaderboard_request_deadlines_exceeded",
    "Requests answered 503 at the request deadline (LEADERBOARD_REQUEST_DEADLINE_SECONDS), by "
    "route template.",
    ["route"],
    registry=REGISTRY,
)
RANK_ANSWERS = Counter(
    "leaderboard_rank_answers",
    "Ranks answered, exact or an estimated range, or a submission's skipped (rankDelta throttled).",
    ["kind"],
    registry=REGISTRY,
)
REPEATS = Counter(
    "leaderboard_submission_repeats",
    "Submissions that repeated an Idempotency-Key already used, by outcome: answered from the "
    "first one's stored outcome (replayed), or refused 409 while the first was still in flight "
    "(in_flight).",
    ["outcome"],
    registry=REGISTRY,
)
SHED = Counter(
    "leaderboard_requests_shed",
    "Requests refused at once (503 overloaded) because the task already had in flight all it "
    "answers within the latency target (LEADERBOARD_ADMISSION_LATENCY_TARGET_SECONDS), by kind: "
    "public reads (read) and submissions and other writes (write).",
    ["kind"],
    registry=REGISTRY,
)
ADMISSION_LIMIT = Gauge(
    "leaderboard_admission_limit",
    "Requests under /v1/ the task lets in at once: the limit that follows the backend's latency.",
    registry=REGISTRY,
)
MIRROR_REFRESHES = Counter(
    "leaderboard_hot_board_mirror_refreshes",
    "Refreshes of a task's mirrors of hot boards, by outcome (ok, failed: ranks read live "
    "until one succeeds).",
    ["outcome"],
    registry=REGISTRY,
)
MIRROR_BUCKETS_READ = Counter(
    "leaderboard_hot_board_mirror_buckets_read", "Buckets mirrors read again.", registry=REGISTRY
)
MIRROR_KEYS = Gauge("leaderboard_hot_board_mirror_keys", "Keys mirrors hold.", registry=REGISTRY)
RANKS_FROM_MIRROR = Counter(
    "leaderboard_ranks_from_mirror", "Ranks answered from a mirror.", registry=REGISTRY
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


DATA_PLANE_OPERATIONS = (
    "GetItem",
    "BatchGetItem",
    "Query",
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "BatchWriteItem",
    "TransactWriteItems",
)
"""The operations the service sends, as DynamoDB (and its per-operation metrics) names them."""

KNOWN_LABELS: dict[Counter, tuple[tuple[str, ...], ...]] = {
    DYNAMODB_FAILURES: tuple((kind,) for kind in ("throttled", "busy", "unavailable", "rejected")),
    CANCELLATIONS: tuple(
        (writer, reason)
        for writer in ("submission", "erasure", "moderation")
        for reason in ("conflict", "condition", "other", "throttled")
    ),
    RANK_ANSWERS: (("exact",), ("estimated",), ("skipped",)),
    REPEATS: (("replayed",), ("in_flight",)),
    SUBMISSIONS: tuple((outcome,) for outcome in SUBMISSION_OUTCOMES),
    MODERATION_ACTIONS: tuple((action,) for action in MODERATION_ACTION_NAMES),
    MODERATED_ROWS: tuple((change,) for change in MODERATED_ROW_CHANGES),
    CLOSES: tuple((outcome,) for outcome in CLOSE_OUTCOMES),
    CLAIMS: tuple((outcome,) for outcome in CLAIM_OUTCOMES),
    BOARD_ADMISSIONS: (("waited",), ("refused",)),
    SHED: (("read",), ("write",)),
    MIRROR_REFRESHES: (("ok",), ("failed",)),
    DYNAMODB_RETRIES: tuple((operation,) for operation in DATA_PLANE_OPERATIONS),
}
"""The label values each counter is known to take, shown at 0 from the start: a dashboard's panel
then draws a flat line where nothing has happened yet, not "no data"."""


def show_known_series(routes: list[str]) -> None:
    """Every known series at 0 (``KNOWN_LABELS``), and a deadline series for each of ``routes``
    (the app's route templates)."""
    for metric, labels in KNOWN_LABELS.items():
        for values in labels:
            metric.labels(*values)
    for route in routes:
        DEADLINES.labels(route)


def method_label(method: str) -> str:
    return method if method in SERVED_METHODS else "other"


def request_answered(route: str, method: str, status: int, seconds: float) -> None:
    method = method_label(method)
    _child(HTTP_REQUESTS, route, method, str(status)).inc()
    _child(HTTP_SECONDS, route, method).observe(seconds)


def deadline_exceeded(route: str) -> None:
    DEADLINES.labels(route).inc()
    _count("deadline_exceeded")


def submission_answered(outcome: str) -> None:
    """One of ``SUBMISSION_OUTCOMES``."""
    SUBMISSIONS.labels(outcome).inc()
    stats = current_stats.get()
    if stats is not None:
        stats.submissions[outcome] += 1


def batch_item(status: int) -> None:
    """One item of a batch answered with ``status``, as ``POST /v1/scores`` would have been."""
    _child(BATCH_ITEMS, str(status)).inc()


def board_admission(outcome: Literal["waited", "refused"]) -> None:
    BOARD_ADMISSIONS.labels(outcome).inc()
    _count("admission_waits" if outcome == "waited" else "admission_refusals")


def request_shed(kind: Literal["read", "write"]) -> None:
    SHED.labels(kind).inc()
    _count("shed")


def admission_limit(limit: float) -> None:
    ADMISSION_LIMIT.set(limit)


def dynamodb_call(operation: str, *, read_units: float, write_units: float, retries: int) -> None:
    _child(DYNAMODB_CALLS, operation).inc()
    if read_units:
        _child(DYNAMODB_UNITS, operation, "read").inc(read_units)
    if write_units:
        _child(DYNAMODB_UNITS, operation, "write").inc(write_units)
    if retries:
        _child(DYNAMODB_RETRIES, operation).inc(retries)
        _count("dynamodb_retries", retries)


def dynamodb_failed(kind: Literal["throttled", "busy", "unavailable", "rejected"]) -> None:
    DYNAMODB_FAILURES.labels(kind).inc()
    if kind == "throttled":
        _count("dynamodb_throttles")


def moderation_action(action: Literal["hide", "ban", "restore", "void"]) -> None:
    MODERATION_ACTIONS.labels(action).inc()


def periods_closed(outcome: Literal["closed", "raced", "failed"], n: int) -> None:
    if n:
        CLOSES.labels(outcome).inc(n)


def claim_answered(outcome: Literal["first", "repeat", "open", "absent"]) -> None:
    CLAIMS.labels(outcome).inc()


def rows_moderated(
    change: Literal["hidden", "shown", "voided", "written_hidden"], n: int = 1
) -> None:
    if n:
        MODERATED_ROWS.labels(change).inc(n)


def transaction_cancelled(writer: str, reason: str) -> None:
    CANCELLATIONS.labels(writer, reason).inc()
    stats = current_stats.get()
    if stats is not None and reason == "conflict":
        stats.conflicts += 1
    if reason == "throttled":
        _count("dynamodb_throttles")


def rank_answered(kind: str) -> None:
    """``exact`` or ``estimated`` (a ``Rank``'s kind)."""
    RANK_ANSWERS.labels(kind).inc()
    _count(f"rank_{kind}")


def mirror_refreshed(*, ok: bool, buckets_read: int, keys_held: int) -> None:
    MIRROR_REFRESHES.labels("ok" if ok else "failed").inc()
    if buckets_read:
        MIRROR_BUCKETS_READ.inc(buckets_read)
    MIRROR_KEYS.set(keys_held)


def rank_from_mirror() -> None:
    RANKS_FROM_MIRROR.inc()
    _count("rank_from_mirror")


def rank_delta_skipped(reason: Literal["throttled"]) -> None:
    """A submission's ranks not read (its score written all the same): ``kind="skipped"``."""
    RANK_ANSWERS.labels("skipped").inc()


def idempotent(outcome: Literal["replayed", "in_flight"]) -> None:
    REPEATS.labels(outcome).inc()


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
