"""The leaderboard service on AWS in one stack: the two tables (from ``app/store/tables.py``), the
container on ECS Fargate behind an HTTPS Application Load Balancer in a VPC of its own, the hourly
snapshot of closed periods, and the alarms an operator reads (docs/deploy.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import (
    Acknowledgment,
    CfnOutput,
    Duration,
    RemovalPolicy,
    Stack,
    Validations,
)
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as sns_subscriptions
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct, Node

from app.store.tables import (
    PREVIOUS_RANK_INDEX,
    RANK_INDEX,
    TTL_ATTRIBUTE,
    rank_index_spec,
    scores_table_spec,
    snapshots_table_spec,
)
from app.telemetry import DATA_PLANE_OPERATIONS
from app.telemetry import NAMESPACE as METRICS_NAMESPACE

CONTAINER_NAME = "api"
CONTAINER_PORT = 8000

SERVICE_DYNAMODB_ACTIONS = (
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:DeleteItem",
    "dynamodb:DescribeTable",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
    "dynamodb:Query",
    "dynamodb:UpdateItem",
)
"""Exactly what the adapter under app/store/ calls, less what only operators run from their own
machines (CreateTable, UpdateTable, UpdateTimeToLive, ListTables, and the Scan behind `leaderboard
keys list/revoke`). TransactWriteItems has no action of its own: each of its items needs the action
of its kind. tests/infra derives this set from the adapter's source and compares."""

SNAPSHOT_COMMAND = ("snapshot", "--closed-periods")
RECONCILE_COMMAND = ("reconcile", "--live", "--apply")
"""Every hour, at minute 37: counters and tie counters of every live board made true again
(docs/operations.md), with metrics for the alarm on drift found twice in a row."""

# Shutdown, in the order ECS does it: the target is deregistered and drained (in-flight requests
# finish: none outlives the service's 10 s request deadline), then SIGTERM, after which the
# server has SHUTDOWN_GRACE_SECONDS to finish what is left, then SIGKILL at STOP_TIMEOUT.
DEREGISTRATION_DELAY_SECONDS = 30
SHUTDOWN_GRACE_SECONDS = 20
STOP_TIMEOUT_SECONDS = 30
# The server must keep idle connections open longer than the load balancer does, or the load
# balancer reuses a connection the server has just closed and answers 502.
LOAD_BALANCER_IDLE_TIMEOUT_SECONDS = 60
SERVER_KEEP_ALIVE_SECONDS = 75

# Alarm thresholds: starting points, tuned from the dashboards once real traffic is known.
HTTP_5XX_PERCENT = 1.0
P95_LATENCY_SECONDS = 0.5
TRANSACTION_CONFLICTS_PER_5_MINUTES = 1000
"""A burst of 1,000 new players onto one board from two tasks cancels up to a few hundred
transactions while the tasks part ways (docs/bursts.md); this many in each of three windows in a
row means they are not parting."""

_ATTRIBUTE_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_TRANSLATED_SPEC_KEYS = frozenset(
    {"TableName", "BillingMode", "AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes"}
)


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


def _sum_over_operations(
    table: dynamodb.Table, metric_name: str, *, period: Duration
) -> cloudwatch.MathExpression:
    """One of DynamoDB's per-operation counts, summed over the service's operations. DynamoDB
    reports these only when they happen, so each is filled with 0: a plain sum has no value
    wherever one operation has none (CDK's ``metric_*_for_operations`` sums without filling)."""
    metrics = {
        operation.lower(): table.metric(
            metric_name,
            dimensions_map={"TableName": table.table_name, "Operation": operation},
            statistic="Sum",
            period=period,
        )
        for operation in DATA_PLANE_OPERATIONS
    }
    return cloudwatch.MathExpression(
        expression=" + ".join(f"FILL({name}, 0)" for name in metrics),
        using_metrics=metrics,
        label=f"{metric_name} (all operations)",
        period=period,
    )


def _acknowledge(scope: Construct, rule: str, reason: str) -> None:
    """Accept one cdk-nag finding on ``scope`` (and what it contains), with the reason."""
    Validations.of(scope).acknowledge(Acknowledgment(id=f"AwsSolutions::{rule}", reason=reason))


class LeaderboardStack(Stack):
    """Everything the service needs in one AWS account and region."""

    def __init__(
        self, scope: Construct, construct_id: str, *, config: DeployConfig, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.config = config

        scores = scores_table_spec(f"{config.table_prefix}-scores")
        if config.keep_previous_rank_index:
            # CloudFormation adds or drops one index per update, and never changes one in place.
            scores["GlobalSecondaryIndexes"] = [
                rank_index_spec(previous=True),
                *scores["GlobalSecondaryIndexes"],
            ]
        self.scores_table = self._table("ScoresTable", scores, ttl=True)
        # No TTL on purpose: snapshots are the archive.
        self.snapshots_table = self._table(
            "SnapshotsTable", snapshots_table_spec(f"{config.table_prefix}-snapshots"), ttl=False
        )

        vpc = self._network()
        self.cluster = ecs.Cluster(
            self,
            "Cluster",
            vpc=vpc,
            container_insights_v2=ecs.ContainerInsights.ENABLED,
        )
        self.log_group = logs.LogGroup(
            self,
            "ServiceLogs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.cursor_secret = secretsmanager.Secret(
            self,
            "CursorSecret",
            description="HMAC key of the leaderboard's page cursors (LEADERBOARD_CURSOR_SECRET)",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True, include_space=False
            ),
        )
        _acknowledge(
            self.cursor_secret,
            "AwsSolutions-SMG4",
            "The secret only makes page cursors tamper-evident; rotating it turns every cursor "
            "in clients' hands into a 400, so it is rotated by hand (docs/deploy.md), not on a "
            "schedule.",
        )

        self.task_role = self._task_role()
        self.execution_role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="ECS agent: pull the image, write logs, read the cursor secret",
        )
        _acknowledge(
            self.execution_role,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken has no resource-level permissions; pulling is limited to "
            "the one repository.",
        )
        self.task_definition = self._task_definition(vpc)

        self.load_balancer, self.target_group = self._load_balancer(vpc)
        self.service = self._service()
        # Off the hour, when day and week periods close and every other job wakes up.
        self.snapshot_rule = self._scheduled("ClosedPeriodSnapshots", SNAPSHOT_COMMAND, minute="7")
        self.reconcile_rule = self._scheduled("LiveReconcile", RECONCILE_COMMAND, minute="37")
        self._acknowledge_scheduled_tasks()
        self.alarm_topic = self._alarms()
        self.dashboard = self._dashboard()
        self._task_failures(self.alarm_topic)
        if config.waf:
            self._web_acl()
        self._outputs()

    # ---- tables -----------------------------------------------------------------------------

    def _table(self, construct_id: str, spec: Mapping[str, Any], *, ttl: bool) -> dynamodb.Table:
        """A table exactly as the service's own definition says; anything in the definition this
        translation does not know stops the synthesis rather than being left out."""
        unknown = set(spec) - _TRANSLATED_SPEC_KEYS
        if unknown:
            raise ValueError(f"{spec['TableName']}: no CDK translation for {sorted(unknown)}")
        if spec["BillingMode"] != "PAY_PER_REQUEST":
            raise ValueError(f"{spec['TableName']}: only on-demand tables are deployed")
        types = {a["AttributeName"]: a["AttributeType"] for a in spec["AttributeDefinitions"]}

        def key(schema: list[dict[str, str]], kind: str) -> dynamodb.Attribute | None:
            names = [k["AttributeName"] for k in schema if k["KeyType"] == kind]
            if not names:
                return None
            return dynamodb.Attribute(name=names[0], type=_ATTRIBUTE_TYPES[types[names[0]]])

        partition_key = key(spec["KeySchema"], "HASH")
        if partition_key is None:
            raise ValueError(f"{spec['TableName']}: no partition key")
        table = dynamodb.Table(
            self,
            construct_id,
            table_name=spec["TableName"],
            partition_key=partition_key,
            sort_key=key(spec["KeySchema"], "RANGE"),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
            time_to_live_attribute=TTL_ATTRIBUTE if ttl else None,
        )
        for index in spec.get("GlobalSecondaryIndexes", []):
            index_key = key(index["KeySchema"], "HASH")
            if index_key is None:
                raise ValueError(f"{index['IndexName']}: no partition key")
            projection = index["Projection"]
            table.add_global_secondary_index(
                index_name=index["IndexName"],
                partition_key=index_key,
                sort_key=key(index["KeySchema"], "RANGE"),
                projection_type=dynamodb.ProjectionType(projection["ProjectionType"]),
                non_key_attributes=projection.get("NonKeyAttributes"),
            )
        return table

    # ---- network ----------------------------------------------------------------------------

    def _network(self) -> ec2.Vpc:
        flow_logs = logs.LogGroup(
            self,
            "FlowLogs",
            retention=logs.RetentionDays.TWO_WEEKS,
            removal_policy=RemovalPolicy.DESTROY,
        )
        return ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            # One NAT gateway by default: the tasks reach ECR, CloudWatch Logs and Secrets Manager
            # through it (DynamoDB and S3 through free gateway endpoints); -c natGateways=2 keeps
            # that path up when its zone is down, for another NAT gateway's hourly price.
            nat_gateways=self.config.nat_gateways,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24
                ),
                ec2.SubnetConfiguration(
                    name="tasks", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=22
                ),
            ],
            gateway_endpoints={
                # DynamoDB traffic never crosses the NAT gateway (no per-GB charge, no hop).
                "DynamoDb": ec2.GatewayVpcEndpointOptions(
                    service=ec2.GatewayVpcEndpointAwsService.DYNAMODB
                ),
                # Image layers come from S3.
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
            },
            flow_logs={
                "All": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.ALL,
                )
            },
        )

    # ---- the task ---------------------------------------------------------------------------

    def _task_role(self) -> iam.Role:
        role = iam.Role(
            self,
            "TaskRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="The leaderboard process (service and scheduled snapshots): its tables only",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=list(SERVICE_DYNAMODB_ACTIONS),
                resources=[
                    self.scores_table.table_arn,
                    *(f"{self.scores_table.table_arn}/index/{name}" for name in self._indexes()),
                    self.snapshots_table.table_arn,
                ],
            )
        )
        return role

    def _indexes(self) -> list[str]:
        """The indexes the tasks read: during a move to RankIndex's second definition, tasks of
        the earlier version still read the first until they are replaced."""
        if self.config.keep_previous_rank_index:
            return [PREVIOUS_RANK_INDEX, RANK_INDEX]
        return [RANK_INDEX]

    def _task_definition(self, vpc: ec2.Vpc) -> ecs.FargateTaskDefinition:
        task_definition = ecs.FargateTaskDefinition(
            self,
            "Task",
            cpu=self.config.task_cpu,
            memory_limit_mib=self.config.task_memory_mib,
            runtime_platform=ecs.RuntimePlatform(
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
                cpu_architecture=ecs.CpuArchitecture.X86_64,
            ),
            task_role=self.task_role,
            execution_role=self.execution_role,
        )
        repository = ecr.Repository.from_repository_name(
            self, "Repository", self.config.repository_name
        )
        task_definition.add_container(
            CONTAINER_NAME,
            image=ecs.ContainerImage.from_ecr_repository(repository, self.config.image_tag),
            essential=True,
            port_mappings=[ecs.PortMapping(container_port=CONTAINER_PORT)],
            environment={
                "LEADERBOARD_ENVIRONMENT": "production",
                "LEADERBOARD_REGION": self.region,
                "LEADERBOARD_SCORES_TABLE": self.scores_table.table_name,
                "LEADERBOARD_SNAPSHOTS_TABLE": self.snapshots_table.table_name,
                # Only the load balancer reaches the tasks (their security group), from inside the
                # VPC: its X-Forwarded-For is the client address the read limits key on.
                "LEADERBOARD_FORWARDED_ALLOW_IPS": vpc.vpc_cidr_block,
                "LEADERBOARD_SHUTDOWN_GRACE_SECONDS": str(SHUTDOWN_GRACE_SECONDS),
                "LEADERBOARD_KEEP_ALIVE_SECONDS": str(SERVER_KEEP_ALIVE_SECONDS),
            },
            secrets={
                "LEADERBOARD_CURSOR_SECRET": ecs.Secret.from_secrets_manager(self.cursor_secret)
            },
            logging=ecs.LogDriver.aws_logs(stream_prefix="leaderboard", log_group=self.log_group),
            # The image's HEALTHCHECK, which ECS ignores unless the task definition repeats it.
            health_check=ecs.HealthCheck(
                command=[
                    "CMD",
                    "python",
                    "-c",
                    "import urllib.request; "
                    f"urllib.request.urlopen('http://127.0.0.1:{CONTAINER_PORT}/healthz', timeout=2)",
                ],
                interval=Duration.seconds(15),
                timeout=Duration.seconds(5),
                retries=3,
                start_period=Duration.seconds(30),
            ),
            stop_timeout=Duration.seconds(STOP_TIMEOUT_SECONDS),
            readonly_root_filesystem=True,
        )
        _acknowledge(
            task_definition,
            "AwsSolutions-ECS2",
            "The environment holds only non-secret configuration (table names, region, "
            "timeouts, the VPC range); the one secret arrives from Secrets Manager as an ECS "
            "secret, and API keys live in DynamoDB as hashes.",
        )
        return task_definition

    # ---- load balancer and service ----------------------------------------------------------

    def _load_balancer(
        self, vpc: ec2.Vpc
    ) -> tuple[elbv2.ApplicationLoadBalancer, elbv2.ApplicationTargetGroup]:
        access_logs = s3.Bucket(
            self,
            "LoadBalancerLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,  # the only kind ALB log delivery writes
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90))],
            removal_policy=RemovalPolicy.RETAIN,
        )
        _acknowledge(
            access_logs,
            "AwsSolutions-S1",
            "This bucket holds the load balancer's access logs; logging access to the log "
            "bucket into another bucket would only move the question.",
        )
        load_balancer = elbv2.ApplicationLoadBalancer(
            self,
            "LoadBalancer",
            vpc=vpc,
            internet_facing=True,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
            drop_invalid_header_fields=True,
            idle_timeout=Duration.seconds(LOAD_BALANCER_IDLE_TIMEOUT_SECONDS),
        )
        load_balancer.log_access_logs(access_logs, prefix="alb")
        _acknowledge(
            load_balancer,
            "AwsSolutions-EC23",
            "A public HTTPS API: players' clients and game servers connect from anywhere on 443 "
            "(80 only redirects to 443). Abuse is met by the service's rate limits and the "
            "optional WAF rate rule.",
        )
        target_group = elbv2.ApplicationTargetGroup(
            self,
            "Targets",
            vpc=vpc,
            port=CONTAINER_PORT,
            protocol=elbv2.ApplicationProtocol.HTTP,
            target_type=elbv2.TargetType.IP,
            # Ready means both tables answer: a task that cannot reach them gets no traffic.
            health_check=elbv2.HealthCheck(
                path="/readyz",
                healthy_http_codes="200",
                interval=Duration.seconds(15),
                timeout=Duration.seconds(5),
                healthy_threshold_count=2,
                unhealthy_threshold_count=3,
            ),
            deregistration_delay=Duration.seconds(DEREGISTRATION_DELAY_SECONDS),
        )
        listener = load_balancer.add_listener(
            "Https",
            port=443,
            protocol=elbv2.ApplicationProtocol.HTTPS,
            certificates=[
                acm.Certificate.from_certificate_arn(
                    self, "Certificate", self.config.certificate_arn
                )
            ],
            ssl_policy=elbv2.SslPolicy.RECOMMENDED_TLS,
            default_target_groups=[target_group],
        )
        # /metrics is each task's own, for a scraper inside the VPC: from the internet it would
        # show one task at random, and its figures to anyone. The load balancer answers it
        # itself, as the service answers a path it does not serve. CloudWatch has the figures
        # (the dashboard below).
        listener.add_action(
            "NoPublicMetrics",
            priority=1,
            conditions=[elbv2.ListenerCondition.path_patterns(["/metrics", "/metrics/*"])],
            action=elbv2.ListenerAction.fixed_response(
                404,
                content_type="application/problem+json",
                message_body='{"type":"about:blank","title":"Not Found","status":404,'
                '"detail":"no such path: the metrics are on the CloudWatch dashboard"}',
            ),
        )
        load_balancer.add_redirect(source_port=80, target_port=443)
        return load_balancer, target_group

    def _service(self) -> ecs.FargateService:
        security_group = ec2.SecurityGroup(
            self,
            "TaskSecurityGroup",
            vpc=self.cluster.vpc,
            description="Leaderboard tasks: the service port from the load balancer only",
            # ECR, CloudWatch Logs and Secrets Manager over the NAT gateway, DynamoDB through its
            # endpoint. Ingress: the service port from the load balancer, which attaching the
            # service to its target group opens.
            allow_all_outbound=True,
        )
        self.task_security_group = security_group
        service = ecs.FargateService(
            self,
            "Service",
            cluster=self.cluster,
            task_definition=self.task_definition,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            security_groups=[security_group],
            assign_public_ip=False,
            # No desired count: autoscaling owns it, and a deployment must not reset it.
            min_healthy_percent=100,
            max_healthy_percent=200,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            health_check_grace_period=Duration.seconds(60),
            enable_ecs_managed_tags=True,
            propagate_tags=ecs.PropagatedTagSource.SERVICE,
        )
        service.attach_to_application_target_group(self.target_group)
        scaling = service.auto_scale_task_count(
            min_capacity=self.config.min_tasks, max_capacity=self.config.max_tasks
        )
        # One worker per task, so a task's CPU is the service's CPU: scale out before it is busy.
        scaling.scale_on_cpu_utilization(
            "Cpu",
            target_utilization_percent=60,
            scale_out_cooldown=Duration.seconds(60),
            scale_in_cooldown=Duration.seconds(300),
        )
        scaling.scale_on_request_count(
            "Requests",
            requests_per_target=self.config.requests_per_target_per_minute,
            target_group=self.target_group,
            scale_out_cooldown=Duration.seconds(60),
            scale_in_cooldown=Duration.seconds(300),
        )
        return service

    def _scheduled(
        self, construct_id: str, command: tuple[str, ...], *, minute: str
    ) -> events.Rule:
        """``leaderboard <command>`` every hour at ``minute``, as a task of the service's own
        definition with the command replaced (each is idempotent: `snapshot --closed-periods`
        writes nothing where nothing closed, `reconcile --live --apply` nothing where nothing
        drifted)."""
        return events.Rule(
            self,
            construct_id,
            description="leaderboard " + " ".join(command),
            schedule=events.Schedule.cron(minute=minute, hour="*"),
            targets=[
                events_targets.EcsTask(
                    cluster=self.cluster,
                    task_definition=self.task_definition,
                    launch_type=ecs.LaunchType.FARGATE,
                    subnet_selection=ec2.SubnetSelection(
                        subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS
                    ),
                    security_groups=[self.task_security_group],
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

    def _acknowledge_scheduled_tasks(self) -> None:
        # The finding names the resource as cdk-nag renders it: references as <LogicalId>.
        tasks = (
            f"arn:{self._as_nag_renders(self.partition)}:ecs:{self._as_nag_renders(self.region)}"
            f":*:task/{self._as_nag_renders(self.cluster.cluster_name)}/*"
        )
        _acknowledge(
            self.task_definition,
            f"AwsSolutions-IAM5[Resource::{tasks}]",
            "EventBridge tags the tasks it starts, whose ids exist only once started: tagging is "
            "limited to tasks of this cluster.",
        )

    def _as_nag_renders(self, value: str) -> str:
        resolved = self.resolve(value)
        if isinstance(resolved, str):
            return resolved
        if isinstance(resolved, dict) and set(resolved) == {"Ref"}:
            return f"<{resolved['Ref']}>"
        raise ValueError(f"no cdk-nag rendering known for {resolved!r}")

    # ---- alarms -----------------------------------------------------------------------------

    def _alarms(self) -> sns.Topic:
        topic = sns.Topic(self, "Alarms", display_name="Leaderboard alarms", enforce_ssl=True)
        if self.config.alarm_email is not None:
            topic.add_subscription(sns_subscriptions.EmailSubscription(self.config.alarm_email))
        action = cloudwatch_actions.SnsAction(topic)
        minute = Duration.minutes(1)
        lb_metrics = self.load_balancer.metrics
        tg_metrics = self.target_group.metrics

        def alarm(
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
                self,
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
            created.add_alarm_action(action)
            created.add_ok_action(action)

        alarm(
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
        alarm(
            "LatencyP95",
            f"p95 of the service's response time above {P95_LATENCY_SECONDS} s",
            tg_metrics.target_response_time(statistic="p95", period=minute),
            P95_LATENCY_SECONDS,
            periods=5,
        )
        alarm(
            "UnhealthyTargets",
            "A task failed the load balancer's readiness check (/readyz) for 3 minutes",
            tg_metrics.unhealthy_host_count(statistic="Maximum", period=minute),
            0,
            periods=3,
        )
        for name, table in (("Scores", self.scores_table), ("Snapshots", self.snapshots_table)):
            alarm(
                f"{name}Throttled",
                f"DynamoDB throttled requests on the {name} table for 3 minutes in a row "
                "(a hot board: docs/deploy.md, where it stops)",
                _sum_over_operations(table, "ThrottledRequests", period=minute),
                0,
                periods=3,
            )
            alarm(
                f"{name}SystemErrors",
                f"DynamoDB answered 5xx on the {name} table for 3 minutes in a row",
                _sum_over_operations(table, "SystemErrors", period=minute),
                0,
                periods=3,
            )
        alarm(
            "TransactionConflicts",
            "Transactions on the Scores table cancelled by conflicts, sustained for 15 minutes",
            self.scores_table.metric(
                "TransactionConflict", statistic="Sum", period=Duration.minutes(5)
            ),
            TRANSACTION_CONFLICTS_PER_5_MINUTES,
            periods=3,
        )
        for construct_id, rule, what in (
            ("SnapshotScheduleFailed", self.snapshot_rule, "snapshot"),
            ("ReconcileScheduleFailed", self.reconcile_rule, "reconcile"),
        ):
            alarm(
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
        alarm(
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
        return topic

    # ---- dashboard --------------------------------------------------------------------------

    def _dashboard(self) -> cloudwatch.Dashboard:
        """The panels of compose's Grafana dashboard (docker/), from the embedded metrics each
        request's log line carries (namespace ``Leaderboard``: ``app.telemetry.emf_fields``), the
        load balancer's, DynamoDB's and ECS's."""
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
        table = self.scores_table.table_name
        per_operation = f'{{AWS/DynamoDB,TableName,Operation}} TableName="{table}"'
        lb, tg = self.load_balancer.metrics, self.target_group.metrics

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
                    self.scores_table.metric_consumed_read_capacity_units(period=minute),
                    self.scores_table.metric_consumed_write_capacity_units(period=minute),
                ],
            ),
            graph("DynamoDB retries", [ours("dynamodb_retries")]),
            graph(
                "Conflicts and throttles",
                [ours("transaction_conflicts"), ours("dynamodb_throttles")],
                [
                    _sum_over_operations(self.scores_table, "ThrottledRequests", period=minute),
                    self.scores_table.metric("TransactionConflict", statistic="Sum", period=minute),
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
                    self.service.metric_cpu_utilization(period=minute),
                    self.service.metric_memory_utilization(period=minute),
                ],
            ),
        ]
        return cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=f"{self.stack_name}-service",
            widgets=[widgets[i : i + 2] for i in range(0, len(widgets), 2)],
        )

    def _task_failures(self, topic: sns.Topic) -> None:
        """A task of the service's definition started outside the service (the hourly snapshot, a
        one-off `keys create`) that exits non-zero: `snapshot --closed-periods` does when a board
        could not be snapshotted. Service tasks are left to the circuit breaker and the alarms."""
        events.Rule(
            self,
            "TaskFailed",
            description="a scheduled or one-off leaderboard task exited non-zero",
            event_pattern=events.EventPattern(
                source=["aws.ecs"],
                detail_type=["ECS Task State Change"],
                detail={
                    "clusterArn": [self.cluster.cluster_arn],
                    "lastStatus": ["STOPPED"],
                    "group": [f"family:{self.task_definition.family}"],
                    "containers": {"exitCode": [{"anything-but": 0}]},
                },
            ),
            targets=[events_targets.SnsTopic(topic)],
        )

    # ---- optional WAF -----------------------------------------------------------------------

    def _web_acl(self) -> None:
        """A per-address rate rule on reads (-c waf=true). Submissions are left to the service's
        per-key limits: a game server posts a whole round's results from one address."""

        def visibility(name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
            return wafv2.CfnWebACL.VisibilityConfigProperty(
                cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True
            )

        acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            scope="REGIONAL",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=visibility("leaderboard"),
            rules=[
                wafv2.CfnWebACL.RuleProperty(
                    name="reads-per-address",
                    priority=0,
                    action=wafv2.CfnWebACL.RuleActionProperty(block={}),
                    visibility_config=visibility("reads-per-address"),
                    statement=wafv2.CfnWebACL.StatementProperty(
                        rate_based_statement=wafv2.CfnWebACL.RateBasedStatementProperty(
                            aggregate_key_type="IP",
                            limit=self.config.waf_requests_per_5_minutes,
                            evaluation_window_sec=300,
                            scope_down_statement=wafv2.CfnWebACL.StatementProperty(
                                byte_match_statement=wafv2.CfnWebACL.ByteMatchStatementProperty(
                                    field_to_match=wafv2.CfnWebACL.FieldToMatchProperty(method={}),
                                    positional_constraint="EXACTLY",
                                    search_string="GET",
                                    text_transformations=[
                                        wafv2.CfnWebACL.TextTransformationProperty(
                                            priority=0, type="NONE"
                                        )
                                    ],
                                )
                            ),
                        )
                    ),
                )
            ],
        )
        wafv2.CfnWebACLAssociation(
            self,
            "WebAclAssociation",
            resource_arn=self.load_balancer.load_balancer_arn,
            web_acl_arn=acl.attr_arn,
        )

    # ---- outputs ----------------------------------------------------------------------------

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
