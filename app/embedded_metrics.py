"""CloudWatch's embedded metric format: the metrics block of a request's log line, of a batch's
outcomes and of a live reconcile's line (the stack's dashboard and alarms read them;
docs/operations.md). Prometheus' side is ``app.telemetry``.
"""

from __future__ import annotations

from typing import Any

from app.telemetry import EVENTS, NAMESPACE, CallStats


def emf_fields(*, route: str, status: int, stats: CallStats, timestamp_ms: int) -> dict[str, Any]:
    """The CloudWatch embedded-metric-format block for a request log line that already carries
    ``duration_ms``, ``dynamodb_calls``, ``read_units`` and ``write_units``; adds ``server_error``,
    ``transaction_conflicts`` and each of ``EVENTS``. Dimension: the route template (and none, for
    the service). A submission's line also counts it under its ``outcome`` (``submissions``), as
    does a batch's whose items share one outcome (``emf_outcome_lines`` for the others)."""
    directives: list[dict[str, Any]] = [
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
                *({"Name": event, "Unit": "Count"} for event in EVENTS),
            ],
        }
    ]
    fields: dict[str, Any] = {
        "server_error": int(status >= 500),
        "transaction_conflicts": stats.conflicts,
        **{event: stats.events[event] for event in EVENTS},
    }
    if len(stats.submissions) == 1:
        [(outcome, count)] = stats.submissions.items()
        fields |= {"outcome": outcome, "submissions": count}
        directives.append(_OUTCOME_DIRECTIVE)
    return {
        **fields,
        "_aws": {"Timestamp": timestamp_ms, "CloudWatchMetrics": directives},
        "route": route,
    }


_OUTCOME_DIRECTIVE = {
    "Namespace": NAMESPACE,
    "Dimensions": [["outcome"]],
    "Metrics": [{"Name": "submissions", "Unit": "Count"}],
}


def emf_outcome_lines(stats: CallStats, *, timestamp_ms: int) -> list[dict[str, Any]]:
    """A batch's submissions of several outcomes, a log line's fields for each outcome: a line
    holds one value per dimension, so the request's own line counts them only where they share
    one (``emf_fields``)."""
    if len(stats.submissions) < 2:
        return []
    return [
        {
            "outcome": outcome,
            "submissions": count,
            "_aws": {"Timestamp": timestamp_ms, "CloudWatchMetrics": [_OUTCOME_DIRECTIVE]},
        }
        for outcome, count in sorted(stats.submissions.items())
    ]


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
