"""What an operator looks at on AWS: a CloudWatch dashboard with the panels of compose's Grafana
dashboard, fed by the metrics the service really emits; and /metrics, which is each task's own,
answered by the load balancer itself rather than forwarded from the internet."""

from __future__ import annotations

import json
from typing import Any

from app import telemetry
from tests.infra.synthesis import Synthesized
from tools.grafana_dashboard import PANELS

EMITTED = {
    "duration_ms",
    "dynamodb_calls",
    "read_units",
    "write_units",
    "server_error",
    "transaction_conflicts",
    "submissions",
    *telemetry.EVENTS,
}
"""Every metric a request's log line carries in the embedded metric format."""


def _rendered(body: Any) -> str:
    """The dashboard body with each reference (a table name, the region) as ``TOKEN``."""
    if isinstance(body, str):
        return str(body)
    (parts,) = body.values()  # {"Fn::Join": ["", [...]]}
    separator, pieces = parts
    return str(separator).join(piece if isinstance(piece, str) else "TOKEN" for piece in pieces)


def dashboard_widgets(synthesized: Synthesized) -> list[dict[str, Any]]:
    _, dashboard = synthesized.one("AWS::CloudWatch::Dashboard")
    widgets: list[dict[str, Any]] = json.loads(_rendered(dashboard["Properties"]["DashboardBody"]))[
        "widgets"
    ]
    return widgets


def test_the_dashboard_has_the_grafana_dashboard_s_panels(synthesized: Synthesized) -> None:
    titles = [w["properties"]["title"] for w in dashboard_widgets(synthesized)]
    assert sorted(titles) == sorted(panel.title for panel in PANELS)


def _ours(widget: dict[str, Any]) -> tuple[set[str], list[str]]:
    """The service's own metrics a widget reads, and its SEARCH expressions."""
    names, searches = set(), []
    for metric in widget["properties"].get("metrics", []):
        if metric and isinstance(metric[-1], dict) and "expression" in metric[-1]:
            searches.append(metric[-1]["expression"])
        elif metric and metric[0] == telemetry.NAMESPACE:
            names.add(metric[1])
    return names, searches


def test_every_metric_the_dashboard_reads_is_one_the_service_emits(
    synthesized: Synthesized,
) -> None:
    read: set[str] = set()
    searched: list[str] = []
    for widget in dashboard_widgets(synthesized):
        names, searches = _ours(widget)
        read |= names
        searched += searches
    for expression in searched:
        if telemetry.NAMESPACE in expression:
            read.add(expression.split('MetricName="')[1].split('"')[0])
    assert read <= EMITTED, read - EMITTED
    # Every count a request carries is on the dashboard, and the per-outcome submissions.
    assert set(telemetry.EVENTS) | {"submissions", "duration_ms"} <= read


def test_metrics_are_answered_by_the_load_balancer_not_forwarded(
    synthesized: Synthesized,
) -> None:
    _, rule = synthesized.one("AWS::ElasticLoadBalancingV2::ListenerRule")
    properties = rule["Properties"]
    assert properties["Priority"] == 1
    (condition,) = properties["Conditions"]
    assert condition["Field"] == "path-pattern"
    assert sorted(condition["PathPatternConfig"]["Values"]) == ["/metrics", "/metrics/*"]
    (action,) = properties["Actions"]
    assert action["Type"] == "fixed-response"
    assert action["FixedResponseConfig"]["StatusCode"] == "404"
    listeners = synthesized.of_type("AWS::ElasticLoadBalancingV2::Listener")
    https = [k for k, v in listeners.items() if v["Properties"]["Port"] == 443]
    assert properties["ListenerArn"] == {"Ref": https[0]}
