"""What a leaderboard task is, whether the service, a schedule or an operator starts it: the
cluster it runs in, its definition (image, environment, secret, logs, health check, how it stops)
and its two roles, the task's own limited to the tables."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager

from infra.nag import acknowledge
from infra.tables import Tables

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


class Tasks:
    """The cluster, the task definition and what it needs, added to ``stack`` itself
    (leaderboard_stack.py says why)."""

    def __init__(
        self,
        stack: Stack,
        *,
        vpc: ec2.Vpc,
        tables: Tables,
        repository_name: str,
        image_tag: str,
        cpu: int,
        memory_mib: int,
    ) -> None:
        self.cluster = ecs.Cluster(
            stack,
            "Cluster",
            vpc=vpc,
            container_insights_v2=ecs.ContainerInsights.ENABLED,
        )
        self.log_group = logs.LogGroup(
            stack,
            "ServiceLogs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.cursor_secret = secretsmanager.Secret(
            stack,
            "CursorSecret",
            description="HMAC key of the leaderboard's page cursors (LEADERBOARD_CURSOR_SECRET)",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=64, exclude_punctuation=True, include_space=False
            ),
        )
        acknowledge(
            self.cursor_secret,
            "AwsSolutions-SMG4",
            "The secret only makes page cursors tamper-evident; rotating it turns every cursor "
            "in clients' hands into a 400, so it is rotated by hand (docs/deploy.md), not on a "
            "schedule.",
        )

        self.task_role = _task_role(stack, tables)
        self.execution_role = iam.Role(
            stack,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="ECS agent: pull the image, write logs, read the cursor secret",
        )
        acknowledge(
            self.execution_role,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken has no resource-level permissions; pulling is limited to "
            "the one repository.",
        )
        self.task_definition = self._task_definition(
            stack,
            vpc=vpc,
            tables=tables,
            repository_name=repository_name,
            image_tag=image_tag,
            cpu=cpu,
            memory_mib=memory_mib,
        )

    def _task_definition(
        self,
        stack: Stack,
        *,
        vpc: ec2.Vpc,
        tables: Tables,
        repository_name: str,
        image_tag: str,
        cpu: int,
        memory_mib: int,
    ) -> ecs.FargateTaskDefinition:
        task_definition = ecs.FargateTaskDefinition(
            stack,
            "Task",
            cpu=cpu,
            memory_limit_mib=memory_mib,
            runtime_platform=ecs.RuntimePlatform(
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
                cpu_architecture=ecs.CpuArchitecture.X86_64,
            ),
            task_role=self.task_role,
            execution_role=self.execution_role,
        )
        repository = ecr.Repository.from_repository_name(stack, "Repository", repository_name)
        task_definition.add_container(
            CONTAINER_NAME,
            image=ecs.ContainerImage.from_ecr_repository(repository, image_tag),
            essential=True,
            port_mappings=[ecs.PortMapping(container_port=CONTAINER_PORT)],
            environment={
                "LEADERBOARD_ENVIRONMENT": "production",
                "LEADERBOARD_REGION": stack.region,
                "LEADERBOARD_SCORES_TABLE": tables.scores.table_name,
                "LEADERBOARD_SNAPSHOTS_TABLE": tables.snapshots.table_name,
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
        acknowledge(
            task_definition,
            "AwsSolutions-ECS2",
            "The environment holds only non-secret configuration (table names, region, "
            "timeouts, the VPC range); the one secret arrives from Secrets Manager as an ECS "
            "secret, and API keys live in DynamoDB as hashes.",
        )
        return task_definition


def _task_role(stack: Stack, tables: Tables) -> iam.Role:
    role = iam.Role(
        stack,
        "TaskRole",
        assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
        description="The leaderboard process (service and scheduled snapshots): its tables only",
    )
    role.add_to_policy(
        iam.PolicyStatement(
            actions=list(SERVICE_DYNAMODB_ACTIONS),
            resources=[
                tables.scores.table_arn,
                *(f"{tables.scores.table_arn}/index/{name}" for name in tables.indexes_read()),
                tables.snapshots.table_arn,
            ],
        )
    )
    return role
