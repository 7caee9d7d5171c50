"""What pages an operator: the SNS topic, the alarms on the load balancer's, DynamoDB's, the
schedules' and the reconcile's figures, and the rule that reports a task that failed outside
the service (docs/deploy.md lists each alarm and where to look)."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as sns_subscriptions

from app.telemetry import NAMESPACE as METRICS_NAMESPACE
from infra.schedules import Schedules
from infra.tables import Tables, sum_over_operations
from infra.tasks import Tasks

# Alarm thresholds: starting points, tuned from the dashboards once real traffic is known.
HTTP_5XX_PERCENT = 1.0
P95_LATENCY_SECONDS = 0.5
TRANSACTION_CONFLICTS_PER_5_MINUTES = 1000
"""A burst of 1,000 new players onto one board from two tasks cancels up to a few hundred
transactions while the tasks part ways (docs/bursts.md); this many in each of three windows in a
row means they are not parting."""


class Alarms:
    """The topic and the alarms, added to ``stack`` itself (leaderboard_stack.py says why). Each
    alarm tells the topic when it fires and when it clears."""

    def __init__(
        self,
        stack: Stack,
        *,
        tables: Tables,
        load_balancer: elbv2.ApplicationLoadBalancer,
        target_group: elbv2.ApplicationTargetGroup,
        schedules: Schedules,
        email: str | None,
    ) -> None:
        self._stack = stack
        self.topic = sns.Topic(stack, "Alarms", display_name="Leaderboard alarms", enforce_ssl=True)
        if email is not None:
            self.topic.add_subscription(sns_subscriptions.EmailSubscription(email))
        self._action = cloudwatch_actions.SnsAction(self.topic)
        minute = Duration.minutes(1)
        lb_metrics = load_balancer.metrics
        tg_metrics = target_group.metrics

        self._alarm(
            "Http5xxRate",
            f"More than {HTTP_5XX_PERCENT}% of requests answered 5xx (service or load balancer)",
            cloudwatch.MathExpression(
                expression="IF(requests > 0, 100 * (FILL(target5xx, 0) + FILL(elb5xx, 0)) "
                "/ requests, 0)",
                using_metrics={
                    "requests": lb_metrics.request_count(period=minute),
                    "target5xx": lb_metrics.http_code_target(
                        elbv2.HttpCodeTarget.TARGET_5XX_COUNT, period=minute
                    ),
                    "elb5xx": lb_metrics.http_code_elb(
                        elbv2.HttpCodeElb.ELB_5XX_COUNT, period=minute
                    ),
                },
                label="5xx %",
                period=minute,
            ),
            HTTP_5XX_PERCENT,
            periods=3,
        )
        self._alarm(
            "LatencyP95",
            f"p95 of the service's response time above {P95_LATENCY_SECONDS} s",
            tg_metrics.target_response_time(statistic="p95", period=minute),
            P95_LATENCY_SECONDS,
            periods=5,
        )
        self._alarm(
            "UnhealthyTargets",
            "A task failed the load balancer's readiness check (/readyz) for 3 minutes",
            tg_metrics.unhealthy_host_count(statistic="Maximum", period=minute),
            0,
            periods=3,
        )
        for name, table in (("Scores", tables.scores), ("Snapshots", tables.snapshots)):
            self._alarm(
                f"{name}Throttled",
                f"DynamoDB throttled requests on the {name} table for 3 minutes in a row "
                "(a hot board: docs/deploy.md, where it stops)",
                sum_over_operations(table, "ThrottledRequests", period=minute),
                0,
                periods=3,
            )
            self._alarm(
                f"{name}SystemErrors",
                f"DynamoDB answered 5xx on the {name} table for 3 minutes in a row",
                sum_over_operations(table, "SystemErrors", period=minute),
                0,
                periods=3,
            )
        self._alarm(
            "TransactionConflicts",
            "Transactions on the Scores table cancelled by conflicts, sustained for 15 minutes",
            tables.scores.metric(
                "TransactionConflict", statistic="Sum", period=Duration.minutes(5)
            ),
            TRANSACTION_CONFLICTS_PER_5_MINUTES,
            periods=3,
        )
        for construct_id, rule, what in (
            ("SnapshotScheduleFailed", schedules.snapshot_rule, "snapshot"),
            ("ReconcileScheduleFailed", schedules.reconcile_rule, "reconcile"),
        ):
            self._alarm(
                construct_id,
                f"EventBridge could not start the hourly {what} task",
                cloudwatch.Metric(
                    namespace="AWS/Events",
                    metric_name="FailedInvocations",
                    dimensions_map={"RuleName": rule.rule_name},
                    statistic="Sum",
                    period=Duration.hours(1),
                ),
                0,
                periods=1,
            )
        self._alarm(
            "CounterDrift",
            "The hourly reconcile found boards whose counters drifted in two runs in a row: "
            "something writes rows without their counters (docs/operations.md)",
            cloudwatch.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name="reconcile_drifted_boards",
                statistic="Maximum",
                period=Duration.hours(1),
            ),
            0,
            periods=2,
        )

    def _alarm(
        self,
        construct_id: str,
        description: str,
        metric: cloudwatch.IMetric,
        threshold: float,
        *,
        periods: int,
        comparison: cloudwatch.ComparisonOperator = (
            cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
        ),
    ) -> None:
        created = cloudwatch.Alarm(
            self._stack,
            construct_id,
            alarm_description=description,
            metric=metric,
            threshold=threshold,
            evaluation_periods=periods,
            datapoints_to_alarm=periods,
            comparison_operator=comparison,
            # No requests is no news: quiet nights must not page anyone.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        created.add_alarm_action(self._action)
        created.add_ok_action(self._action)


class TaskFailures:
    """A task of the service's definition started outside the service (the hourly jobs, a
    one-off `keys create`) that exits non-zero, told to the alarm topic: `snapshot
    --closed-periods` does when a board could not be snapshotted. Service tasks are left to the
    circuit breaker and the alarms. Added to ``stack`` itself (leaderboard_stack.py says why)."""

    def __init__(self, stack: Stack, *, tasks: Tasks, topic: sns.ITopic) -> None:
        self.rule = events.Rule(
            stack,
            "TaskFailed",
            description="a scheduled or one-off leaderboard task exited non-zero",
            event_pattern=events.EventPattern(
                source=["aws.ecs"],
                detail_type=["ECS Task State Change"],
                detail={
                    "clusterArn": [tasks.cluster.cluster_arn],
                    "lastStatus": ["STOPPED"],
                    "group": [f"family:{tasks.task_definition.family}"],
                    "containers": {"exitCode": [{"anything-but": 0}]},
                },
            ),
            targets=[events_targets.SnsTopic(topic)],
        )
