"""The CloudWatch dashboard ``<stack>-service``, an operator's view of the deployed service: the
panels of compose's Grafana dashboard (tools/grafana_dashboard.py), drawn from CloudWatch's figures
instead of Prometheus's."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2

from app.telemetry import NAMESPACE as METRICS_NAMESPACE
from infra.tables import sum_over_operations


class Dashboard:
    """The dashboard, added to ``stack`` itself (leaderboard_stack.py says why). Its figures: the
    embedded metrics each request's log line carries (namespace ``Leaderboard``:
    ``app.embedded_metrics.emf_fields``), and the load balancer's, DynamoDB's and ECS's."""

    def __init__(
        self,
        stack: Stack,
        *,
        scores_table: dynamodb.Table,
        load_balancer: elbv2.ApplicationLoadBalancer,
        target_group: elbv2.ApplicationTargetGroup,
        service: ecs.FargateService,
    ) -> None:
        minute = Duration.minutes(1)

        def ours(name: str, statistic: str = "Sum") -> cloudwatch.Metric:
            return cloudwatch.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name=name,
                statistic=statistic,
                period=minute,
                label=name,
            )

        def search(query: str, statistic: str, label: str) -> cloudwatch.MathExpression:
            return cloudwatch.MathExpression(
                expression=f"SEARCH('{query}', '{statistic}', 60)",
                using_metrics={},
                label=label,
                period=minute,
            )

        by_route = f'{{{METRICS_NAMESPACE},route}} MetricName="duration_ms"'
        table = scores_table.table_name
        per_operation = f'{{AWS/DynamoDB,TableName,Operation}} TableName="{table}"'
        lb, tg = load_balancer.metrics, target_group.metrics

        def graph(
            title: str,
            left: Sequence[cloudwatch.IMetric],
            right: Sequence[cloudwatch.IMetric] = (),
        ) -> cloudwatch.GraphWidget:
            return cloudwatch.GraphWidget(
                title=title, left=list(left), right=list(right), width=12, height=6
            )

        widgets = [
            graph("Requests by route", [search(by_route, "SampleCount", "")]),
            graph(
                "Answers by status",
                [
                    lb.http_code_target(code, period=minute)
                    for code in (
                        elbv2.HttpCodeTarget.TARGET_2XX_COUNT,
                        elbv2.HttpCodeTarget.TARGET_4XX_COUNT,
                        elbv2.HttpCodeTarget.TARGET_5XX_COUNT,
                    )
                ]
                + [lb.http_code_elb(elbv2.HttpCodeElb.ELB_5XX_COUNT, period=minute)],
            ),
            graph(
                "Latency by route (p50, p99)",
                [search(by_route, "p50", "p50"), search(by_route, "p99", "p99")],
            ),
            graph(
                "Submissions by outcome",
                [search(f'{{{METRICS_NAMESPACE},outcome}} MetricName="submissions"', "Sum", "")],
            ),
            graph(
                "DynamoDB calls by operation",
                [
                    search(
                        f'{per_operation} MetricName="SuccessfulRequestLatency"', "SampleCount", ""
                    )
                ],
                [ours("dynamodb_calls")],
            ),
            graph(
                "DynamoDB capacity units",
                [ours("read_units"), ours("write_units")],
                [
                    scores_table.metric_consumed_read_capacity_units(period=minute),
                    scores_table.metric_consumed_write_capacity_units(period=minute),
                ],
            ),
            graph("DynamoDB retries", [ours("dynamodb_retries")]),
            graph(
                "Conflicts and throttles",
                [ours("transaction_conflicts"), ours("dynamodb_throttles")],
                [
                    sum_over_operations(scores_table, "ThrottledRequests", period=minute),
                    scores_table.metric("TransactionConflict", statistic="Sum", period=minute),
                ],
            ),
            graph("Rank answers: exact vs range", [ours("rank_exact"), ours("rank_estimated")]),
            graph(
                "Bursts and deadlines",
                [
                    ours("shed"),
                    ours("admission_waits"),
                    ours("admission_refusals"),
                    ours("deadline_exceeded"),
                ],
            ),
            graph(
                "In flight",
                [lb.active_connection_count(period=minute)],
                [tg.healthy_host_count(period=minute)],
            ),
            graph(
                "Process: memory, CPU, open files",
                [
                    service.metric_cpu_utilization(period=minute),
                    service.metric_memory_utilization(period=minute),
                ],
            ),
        ]
        self.dashboard = cloudwatch.Dashboard(
            stack,
            "Dashboard",
            dashboard_name=f"{stack.stack_name}-service",
            widgets=[widgets[i : i + 2] for i in range(0, len(widgets), 2)],
        )
