"""The leaderboard service on AWS in one stack, composed of the parts in this package: the two
tables (tables.py), the VPC (network.py), the task definition (tasks.py), the service behind an
HTTPS load balancer (service.py), the hourly jobs (schedules.py), the alarms (alarms.py) and the
dashboard (dashboard.py); what differs between deployments is ``DeployConfig``, read from CDK
context (docs/deploy.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct, Node

from infra.alarms import Alarms, TaskFailures
from infra.dashboard import Dashboard
from infra.network import Network
from infra.schedules import Schedules
from infra.service import ReadRateLimit, Service
from infra.tables import Tables
from infra.tasks import Tasks


def _flag(value: object) -> bool:
    """A context flag: ``-c waf=true`` arrives as the string "true", cdk.json gives a bool."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class DeployConfig:
    """What differs between deployments, read from CDK context (``-c name=value`` or cdk.json)."""

    certificate_arn: str
    image_tag: str
    repository_name: str = "leaderboard"
    table_prefix: str = "leaderboard"
    domain_name: str | None = None
    alarm_email: str | None = None
    min_tasks: int = 2
    max_tasks: int = 10
    task_cpu: int = 512
    task_memory_mib: int = 1024
    requests_per_target_per_minute: int = 6000
    nat_gateways: int = 1
    waf: bool = False
    waf_requests_per_5_minutes: int = 6000
    keep_previous_rank_index: bool = False
    """Keep RankIndex's first definition beside its second (``-c keepPreviousRankIndex=true``):
    the first of the two deployments that move an existing stack to it (decision 0025)."""

    @classmethod
    def from_context(cls, node: Node) -> DeployConfig:
        def text(name: str) -> str | None:
            value = node.try_get_context(name)
            return None if value is None or str(value).strip() == "" else str(value).strip()

        def required(name: str, example: str) -> str:
            value = text(name)
            if value is None:
                raise ValueError(f"set the {name} context value: cdk deploy -c {name}={example}")
            return value

        def number(name: str, default: int) -> int:
            value = text(name)
            return default if value is None else int(value)

        return cls(
            certificate_arn=required("certificateArn", "arn:aws:acm:REGION:ACCOUNT:certificate/ID"),
            image_tag=required("imageTag", "$(git rev-parse --short HEAD)"),
            repository_name=text("repositoryName") or cls.repository_name,
            table_prefix=text("tablePrefix") or cls.table_prefix,
            domain_name=text("domainName"),
            alarm_email=text("alarmEmail"),
            min_tasks=number("minTasks", cls.min_tasks),
            max_tasks=number("maxTasks", cls.max_tasks),
            task_cpu=number("taskCpu", cls.task_cpu),
            task_memory_mib=number("taskMemoryMiB", cls.task_memory_mib),
            requests_per_target_per_minute=number(
                "requestsPerTargetPerMinute", cls.requests_per_target_per_minute
            ),
            nat_gateways=number("natGateways", cls.nat_gateways),
            waf=_flag(node.try_get_context("waf") or False),
            waf_requests_per_5_minutes=number(
                "wafRequestsPer5Minutes", cls.waf_requests_per_5_minutes
            ),
            keep_previous_rank_index=_flag(node.try_get_context("keepPreviousRankIndex") or False),
        )


class LeaderboardStack(Stack):
    """Everything the service needs in one AWS account and region.

    Each part adds its resources to this stack itself rather than under a construct of its own.
    CDK derives a resource's logical id from its construct path, and some values from the path
    as well (the task definition's family, the load balancer's security group description, the
    scaling policies' names): a construct's id in the path would change them all, and
    CloudFormation would replace what they name; the retained tables, whose names are fixed,
    would fail the deployment. tests/infra/test_layout.py holds every logical id to a list."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config

        tables = Tables(
            self,
            prefix=config.table_prefix,
            keep_previous_rank_index=config.keep_previous_rank_index,
        )
        self.scores_table = tables.scores
        self.snapshots_table = tables.snapshots

        vpc = Network(self, nat_gateways=config.nat_gateways).vpc
        tasks = Tasks(
            self,
            vpc=vpc,
            tables=tables,
            repository_name=config.repository_name,
            image_tag=config.image_tag,
            cpu=config.task_cpu,
            memory_mib=config.task_memory_mib,
        )
        self.cluster = tasks.cluster
        self.log_group = tasks.log_group
        self.cursor_secret = tasks.cursor_secret
        self.task_role = tasks.task_role
        self.execution_role = tasks.execution_role
        self.task_definition = tasks.task_definition

        service = Service(
            self,
            vpc=vpc,
            tasks=tasks,
            certificate_arn=config.certificate_arn,
            min_tasks=config.min_tasks,
            max_tasks=config.max_tasks,
            requests_per_target_per_minute=config.requests_per_target_per_minute,
        )
        self.load_balancer = service.load_balancer
        self.target_group = service.target_group
        self.task_security_group = service.security_group
        self.service = service.service

        schedules = Schedules(self, tasks=tasks, security_group=service.security_group)
        self.snapshot_rule = schedules.snapshot_rule
        self.reconcile_rule = schedules.reconcile_rule

        self.alarm_topic = Alarms(
            self,
            tables=tables,
            load_balancer=service.load_balancer,
            target_group=service.target_group,
            schedules=schedules,
            email=config.alarm_email,
        ).topic
        self.dashboard = Dashboard(
            self,
            scores_table=tables.scores,
            load_balancer=service.load_balancer,
            target_group=service.target_group,
            service=service.service,
        ).dashboard
        TaskFailures(self, tasks=tasks, topic=self.alarm_topic)
        if config.waf:
            ReadRateLimit(
                self,
                load_balancer=service.load_balancer,
                requests_per_5_minutes=config.waf_requests_per_5_minutes,
            )
        self._outputs()

    def _outputs(self) -> None:
        host = self.config.domain_name or self.load_balancer.load_balancer_dns_name
        private = self.cluster.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
        values = {
            "ServiceUrl": (f"https://{host}", "The API (point domainName's DNS at the ALB)"),
            "LoadBalancerDnsName": (
                self.load_balancer.load_balancer_dns_name,
                "CNAME or alias target for domainName",
            ),
            "ScoresTableName": (self.scores_table.table_name, "LEADERBOARD_SCORES_TABLE"),
            "SnapshotsTableName": (self.snapshots_table.table_name, "LEADERBOARD_SNAPSHOTS_TABLE"),
            "ClusterName": (self.cluster.cluster_name, "for one-off tasks (aws ecs run-task)"),
            "TaskDefinitionArn": (self.task_definition.task_definition_arn, "for one-off tasks"),
            "TaskSubnetIds": (",".join(private.subnet_ids), "for one-off tasks"),
            "TaskSecurityGroupId": (
                self.task_security_group.security_group_id,
                "for one-off tasks",
            ),
            "ServiceName": (self.service.service_name, "aws ecs update-service --service"),
            "LogGroupName": (self.log_group.log_group_name, "the service's logs"),
            "AlarmTopicArn": (self.alarm_topic.topic_arn, "subscribe to be told of alarms"),
        }
        for name, (value, description) in values.items():
            CfnOutput(self, name, value=value, description=description)
