"""The service: the HTTPS Application Load Balancer in front (its access logs, listener and
target group), the ECS Fargate service of the task definition behind it with its scaling, and the
optional WAF rate rule on reads (``-c waf=true``)."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_wafv2 as wafv2

from infra.nag import acknowledge
from infra.tasks import (
    CONTAINER_PORT,
    DEREGISTRATION_DELAY_SECONDS,
    LOAD_BALANCER_IDLE_TIMEOUT_SECONDS,
    Tasks,
)


class Service:
    """The load balancer and the Fargate service behind it, added to ``stack`` itself
    (leaderboard_stack.py says why)."""

    def __init__(
        self,
        stack: Stack,
        *,
        vpc: ec2.Vpc,
        tasks: Tasks,
        certificate_arn: str,
        min_tasks: int,
        max_tasks: int,
        requests_per_target_per_minute: int,
    ) -> None:
        self.load_balancer, self.target_group = _load_balancer(stack, vpc, certificate_arn)
        self.security_group = ec2.SecurityGroup(
            stack,
            "TaskSecurityGroup",
            vpc=vpc,
            description="Leaderboard tasks: the service port from the load balancer only",
            # ECR, CloudWatch Logs and Secrets Manager over the NAT gateway, DynamoDB through its
            # endpoint. Ingress: the service port from the load balancer, which attaching the
            # service to its target group opens.
            allow_all_outbound=True,
        )
        self.service = ecs.FargateService(
            stack,
            "Service",
            cluster=tasks.cluster,
            task_definition=tasks.task_definition,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            security_groups=[self.security_group],
            assign_public_ip=False,
            # No desired count: autoscaling owns it, and a deployment must not reset it.
            min_healthy_percent=100,
            max_healthy_percent=200,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            health_check_grace_period=Duration.seconds(60),
            enable_ecs_managed_tags=True,
            propagate_tags=ecs.PropagatedTagSource.SERVICE,
        )
        self.service.attach_to_application_target_group(self.target_group)
        scaling = self.service.auto_scale_task_count(min_capacity=min_tasks, max_capacity=max_tasks)
        # One worker per task, so a task's CPU is the service's CPU: scale out before it is busy.
        scaling.scale_on_cpu_utilization(
            "Cpu",
            target_utilization_percent=60,
            scale_out_cooldown=Duration.seconds(60),
            scale_in_cooldown=Duration.seconds(300),
        )
        scaling.scale_on_request_count(
            "Requests",
            requests_per_target=requests_per_target_per_minute,
            target_group=self.target_group,
            scale_out_cooldown=Duration.seconds(60),
            scale_in_cooldown=Duration.seconds(300),
        )


def _load_balancer(
    stack: Stack, vpc: ec2.Vpc, certificate_arn: str
) -> tuple[elbv2.ApplicationLoadBalancer, elbv2.ApplicationTargetGroup]:
    access_logs = s3.Bucket(
        stack,
        "LoadBalancerLogs",
        encryption=s3.BucketEncryption.S3_MANAGED,  # the only kind ALB log delivery writes
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(90))],
        removal_policy=RemovalPolicy.RETAIN,
    )
    acknowledge(
        access_logs,
        "AwsSolutions-S1",
        "This bucket holds the load balancer's access logs; logging access to the log "
        "bucket into another bucket would only move the question.",
    )
    load_balancer = elbv2.ApplicationLoadBalancer(
        stack,
        "LoadBalancer",
        vpc=vpc,
        internet_facing=True,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
        drop_invalid_header_fields=True,
        idle_timeout=Duration.seconds(LOAD_BALANCER_IDLE_TIMEOUT_SECONDS),
    )
    load_balancer.log_access_logs(access_logs, prefix="alb")
    acknowledge(
        load_balancer,
        "AwsSolutions-EC23",
        "A public HTTPS API: players' clients and game servers connect from anywhere on 443 "
        "(80 only redirects to 443). Abuse is met by the service's rate limits and the "
        "optional WAF rate rule.",
    )
    target_group = elbv2.ApplicationTargetGroup(
        stack,
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
        certificates=[acm.Certificate.from_certificate_arn(stack, "Certificate", certificate_arn)],
        ssl_policy=elbv2.SslPolicy.RECOMMENDED_TLS,
        default_target_groups=[target_group],
    )
    # /metrics is each task's own, for a scraper inside the VPC: from the internet it would
    # show one task at random, and its figures to anyone. The load balancer answers it
    # itself, as the service answers a path it does not serve. CloudWatch has the figures
    # (infra/dashboard.py).
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


class ReadRateLimit:
    """A per-address rate rule on reads (-c waf=true), added to ``stack`` itself. Submissions
    are left to the service's per-key limits: a game server posts a whole round's results from
    one address."""

    def __init__(
        self,
        stack: Stack,
        *,
        load_balancer: elbv2.ApplicationLoadBalancer,
        requests_per_5_minutes: int,
    ) -> None:
        def visibility(name: str) -> wafv2.CfnWebACL.VisibilityConfigProperty:
            return wafv2.CfnWebACL.VisibilityConfigProperty(
                cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True
            )

        self.web_acl = wafv2.CfnWebACL(
            stack,
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
                            limit=requests_per_5_minutes,
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
            stack,
            "WebAclAssociation",
            resource_arn=load_balancer.load_balancer_arn,
            web_acl_arn=self.web_acl.attr_arn,
        )
