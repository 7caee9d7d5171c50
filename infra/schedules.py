"""The hourly jobs: the snapshot of closed periods and the reconcile of live boards, each a task of
the service's own definition that EventBridge starts with the command replaced."""

from __future__ import annotations

from aws_cdk import Duration, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets

from infra.nag import acknowledge
from infra.tasks import CONTAINER_NAME, Tasks

SNAPSHOT_COMMAND = ("snapshot", "--closed-periods")
RECONCILE_COMMAND = ("reconcile", "--live", "--apply")
"""Every hour, at minute 37: counters and tie counters of every live board made true again
(docs/operations.md), with metrics for the alarm on drift found twice in a row."""


class Schedules:
    """The two rules, added to ``stack`` itself (leaderboard_stack.py says why)."""

    def __init__(self, stack: Stack, *, tasks: Tasks, security_group: ec2.ISecurityGroup) -> None:
        self._stack = stack
        self._tasks = tasks
        self._security_group = security_group
        # Off the hour, when day and week periods close and every other job wakes up.
        self.snapshot_rule = self._scheduled("ClosedPeriodSnapshots", SNAPSHOT_COMMAND, minute="7")
        self.reconcile_rule = self._scheduled("LiveReconcile", RECONCILE_COMMAND, minute="37")
        # The finding names the resource as cdk-nag renders it: references as <LogicalId>.
        task_arns = (
            f"arn:{self._as_nag_renders(stack.partition)}:ecs:{self._as_nag_renders(stack.region)}"
            f":*:task/{self._as_nag_renders(tasks.cluster.cluster_name)}/*"
        )
        acknowledge(
            tasks.task_definition,
            f"AwsSolutions-IAM5[Resource::{task_arns}]",
            "EventBridge tags the tasks it starts, whose ids exist only once started: tagging is "
            "limited to tasks of this cluster.",
        )

    def _scheduled(
        self, construct_id: str, command: tuple[str, ...], *, minute: str
    ) -> events.Rule:
        """``leaderboard <command>`` every hour at ``minute``, as a task of the service's own
        definition with the command replaced (each is idempotent: `snapshot --closed-periods`
        writes nothing where nothing closed, `reconcile --live --apply` nothing where nothing
        drifted)."""
        return events.Rule(
            self._stack,
            construct_id,
            description="leaderboard " + " ".join(command),
            schedule=events.Schedule.cron(minute=minute, hour="*"),
            targets=[
                events_targets.EcsTask(
                    cluster=self._tasks.cluster,
                    task_definition=self._tasks.task_definition,
                    launch_type=ecs.LaunchType.FARGATE,
                    subnet_selection=ec2.SubnetSelection(
                        subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                    ),
                    security_groups=[self._security_group],
                    container_overrides=[
                        events_targets.ContainerOverride(
                            container_name=CONTAINER_NAME, command=list(command)
                        )
                    ],
                    retry_attempts=2,
                    max_event_age=Duration.hours(1),
                )
            ],
        )

    def _as_nag_renders(self, value: str) -> str:
        resolved = self._stack.resolve(value)
        if isinstance(resolved, str):
            return resolved
        if isinstance(resolved, dict) and set(resolved) == {"Ref"}:
            return f"<{resolved['Ref']}>"
        raise ValueError(f"no cdk-nag rendering known for {resolved!r}")
