"""The service on Fargate: network, load balancer, the task's configuration and secret, rollouts,
scaling, and shutdown timings that agree with each other and with the service's settings."""

from __future__ import annotations

from typing import Any

import pytest

from app.settings import Settings
from tests.infra.synthesis import CERTIFICATE_ARN, IMAGE_TAG, REGION, Match, Synthesized, ref_target

PENDING_SETTINGS: set[str] = set()
"""Variables the stack sets that are not (yet) settings of the service: none."""


def environment(synthesized: Synthesized) -> dict[str, Any]:
    return {e["Name"]: e["Value"] for e in synthesized.container()["Environment"]}


def resolved_environment(synthesized: Synthesized) -> dict[str, str]:
    """The task's environment with its references replaced by what they will name."""
    values: dict[str, str] = {}
    for name, value in environment(synthesized).items():
        if isinstance(value, str):
            values[name] = value
            continue
        target = synthesized.resources[ref_target(value)]
        if target["Type"] == "AWS::DynamoDB::Table":
            values[name] = target["Properties"]["TableName"]
        elif target["Type"] == "AWS::EC2::VPC":
            values[name] = target["Properties"]["CidrBlock"]
        else:
            raise AssertionError(f"{name} refers to a {target['Type']}: add its resolution")
    return values


def load_balancer_attributes(synthesized: Synthesized) -> dict[str, str]:
    _, balancer = synthesized.one("AWS::ElasticLoadBalancingV2::LoadBalancer")
    return {a["Key"]: a["Value"] for a in balancer["Properties"]["LoadBalancerAttributes"]}


def target_group_attributes(synthesized: Synthesized) -> dict[str, str]:
    _, group = synthesized.one("AWS::ElasticLoadBalancingV2::TargetGroup")
    return {a["Key"]: a["Value"] for a in group["Properties"]["TargetGroupAttributes"]}


# ---- network and cluster -----------------------------------------------------------------------


def test_tasks_run_in_private_subnets_with_a_dynamodb_gateway_endpoint(
    synthesized: Synthesized,
) -> None:
    vpc_id, _ = synthesized.one("AWS::EC2::VPC")
    dynamodb_service = {"Fn::Join": ["", ["com.amazonaws.", {"Ref": "AWS::Region"}, ".dynamodb"]]}
    synthesized.template.has_resource_properties(
        "AWS::EC2::VPCEndpoint",
        {"VpcEndpointType": "Gateway", "VpcId": {"Ref": vpc_id}, "ServiceName": dynamodb_service},
    )
    _, service = synthesized.one("AWS::ECS::Service")
    network = service["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]
    assert network["AssignPublicIp"] == "DISABLED"
    for subnet in network["Subnets"]:
        properties = synthesized.resources[ref_target(subnet)]["Properties"]
        assert properties["MapPublicIpOnLaunch"] is False
    # The tasks' subnets route to the endpoint, so their DynamoDB traffic never leaves the VPC.
    (endpoint,) = [
        v
        for v in synthesized.of_type("AWS::EC2::VPCEndpoint").values()
        if v["Properties"]["ServiceName"] == dynamodb_service
    ]
    tables = {ref_target(t) for t in endpoint["Properties"]["RouteTableIds"]}
    associations = synthesized.of_type("AWS::EC2::SubnetRouteTableAssociation").values()
    for subnet in network["Subnets"]:
        (table,) = [
            ref_target(a["Properties"]["RouteTableId"])
            for a in associations
            if ref_target(a["Properties"]["SubnetId"]) == ref_target(subnet)
        ]
        assert table in tables


def test_cluster_has_container_insights(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::ECS::Cluster",
        {"ClusterSettings": [{"Name": "containerInsights", "Value": "enabled"}]},
    )


# ---- load balancer -----------------------------------------------------------------------------


def test_https_listener_uses_the_certificate_from_context(synthesized: Synthesized) -> None:
    group_id, _ = synthesized.one("AWS::ElasticLoadBalancingV2::TargetGroup")
    synthesized.template.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::Listener",
        {
            "Port": 443,
            "Protocol": "HTTPS",
            "Certificates": [{"CertificateArn": CERTIFICATE_ARN}],
            "SslPolicy": Match.string_like_regexp(r"TLS13"),
            "DefaultActions": [{"Type": "forward", "TargetGroupArn": {"Ref": group_id}}],
        },
    )
    listeners = synthesized.of_type("AWS::ElasticLoadBalancingV2::Listener").values()
    assert {p["Properties"]["Port"] for p in listeners} == {80, 443}


def test_http_only_redirects_to_https(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::Listener",
        {
            "Port": 80,
            "Protocol": "HTTP",
            "DefaultActions": [
                {
                    "Type": "redirect",
                    "RedirectConfig": {
                        "Protocol": "HTTPS",
                        "Port": "443",
                        "StatusCode": "HTTP_301",
                    },
                }
            ],
        },
    )


def test_targets_are_checked_for_readiness(synthesized: Synthesized) -> None:
    synthesized.template.has_resource_properties(
        "AWS::ElasticLoadBalancingV2::TargetGroup",
        {
            "HealthCheckPath": "/readyz",
            "Matcher": {"HttpCode": "200"},
            "Port": 8000,
            "TargetType": "ip",
        },
    )


def test_only_the_load_balancer_reaches_the_tasks(synthesized: Synthesized) -> None:
    _, service = synthesized.one("AWS::ECS::Service")
    (group,) = service["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"][
        "SecurityGroups"
    ]
    task_group = ref_target(group)
    balancer_id, balancer = synthesized.one("AWS::ElasticLoadBalancingV2::LoadBalancer")
    (balancer_group,) = {ref_target(g) for g in balancer["Properties"]["SecurityGroups"]}
    rules = synthesized.resources[task_group]["Properties"].get("SecurityGroupIngress", []) + [
        rule["Properties"]
        for rule in synthesized.of_type("AWS::EC2::SecurityGroupIngress").values()
        if ref_target(rule["Properties"]["GroupId"]) == task_group
    ]
    assert [
        (ref_target(r.get("SourceSecurityGroupId")), r["FromPort"], r["ToPort"]) for r in rules
    ] == [(balancer_group, 8000, 8000)]
    assert balancer["Properties"]["Scheme"] == "internet-facing", balancer_id


# ---- the task ----------------------------------------------------------------------------------


def test_the_image_is_the_tag_from_context_in_the_repository(synthesized: Synthesized) -> None:
    image = synthesized.container()["Image"]
    rendered = "".join(p if isinstance(p, str) else "<>" for p in image["Fn::Join"][1])
    assert rendered.endswith(f"/leaderboard:{IMAGE_TAG}")


def test_the_task_runs_in_production_against_the_stack_s_tables(
    synthesized: Synthesized,
) -> None:
    env = environment(synthesized)
    assert env["LEADERBOARD_ENVIRONMENT"] == "production"
    assert env["LEADERBOARD_REGION"] == REGION
    assert env["LEADERBOARD_SCORES_TABLE"] == {
        "Ref": synthesized.logical_id(synthesized.stack.scores_table)
    }
    assert env["LEADERBOARD_SNAPSHOTS_TABLE"] == {
        "Ref": synthesized.logical_id(synthesized.stack.snapshots_table)
    }
    assert "LEADERBOARD_DYNAMODB_ENDPOINT" not in env


def test_the_cursor_secret_comes_from_secrets_manager_and_no_secret_is_in_the_environment(
    synthesized: Synthesized,
) -> None:
    container = synthesized.container()
    secret_id = synthesized.logical_id(synthesized.stack.cursor_secret)
    assert container["Secrets"] == [
        {"Name": "LEADERBOARD_CURSOR_SECRET", "ValueFrom": {"Ref": secret_id}}
    ]
    _, secret = synthesized.one("AWS::SecretsManager::Secret")
    assert secret["Properties"]["GenerateSecretString"]["PasswordLength"] >= 32
    names = set(environment(synthesized))
    assert not {n for n in names if any(w in n for w in ("SECRET", "KEY", "PASSWORD", "TOKEN"))}


def test_every_variable_the_task_sets_is_a_setting_of_the_service(
    synthesized: Synthesized,
) -> None:
    fields = {f"LEADERBOARD_{name.upper()}" for name in Settings.model_fields}
    unknown = {name for name in environment(synthesized) if name not in fields}
    assert unknown == PENDING_SETTINGS, (
        f"not settings: {sorted(unknown - PENDING_SETTINGS)}; "
        f"landed (drop from PENDING_SETTINGS): {sorted(PENDING_SETTINGS - unknown)}"
    )


def test_the_task_s_configuration_passes_the_service_s_own_checks(
    synthesized: Synthesized, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the task gets, secret included, is a configuration the service starts with."""
    for name in Settings.model_fields:
        monkeypatch.delenv(f"LEADERBOARD_{name.upper()}", raising=False)
    for name, value in resolved_environment(synthesized).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LEADERBOARD_CURSOR_SECRET", "x" * 64)  # what the generator makes
    settings = Settings()
    assert settings.environment == "production"
    assert not settings.uses_embedded_backend
    assert settings.scores_table == "leaderboard-scores"
    assert settings.snapshots_table == "leaderboard-snapshots"


def test_logs_go_to_a_log_group_with_retention(synthesized: Synthesized) -> None:
    options = synthesized.container()["LogConfiguration"]
    assert options["LogDriver"] == "awslogs"
    group = synthesized.resources[ref_target(options["Options"]["awslogs-group"])]
    assert group["Type"] == "AWS::Logs::LogGroup"
    assert group["Properties"]["RetentionInDays"] > 0


def test_the_container_checks_liveness_as_the_image_does(synthesized: Synthesized) -> None:
    command = synthesized.container()["HealthCheck"]["Command"]
    assert command[:3] == ["CMD", "python", "-c"]
    assert "/healthz" in command[3]
    assert "urllib.request" in command[3]


# ---- shutdown ----------------------------------------------------------------------------------


def test_ecs_waits_longer_than_the_service_s_shutdown_grace(synthesized: Synthesized) -> None:
    grace = int(environment(synthesized)["LEADERBOARD_SHUTDOWN_GRACE_SECONDS"])
    assert synthesized.container()["StopTimeout"] > grace


def test_draining_outlasts_the_longest_request(synthesized: Synthesized) -> None:
    deadline = float(
        environment(synthesized).get(
            "LEADERBOARD_REQUEST_DEADLINE_SECONDS",
            Settings.model_fields["request_deadline_seconds"].default,
        )
    )
    delay = int(target_group_attributes(synthesized)["deregistration_delay.timeout_seconds"])
    assert deadline < delay <= synthesized.container()["StopTimeout"]


def test_the_server_keeps_idle_connections_longer_than_the_load_balancer(
    synthesized: Synthesized,
) -> None:
    idle = int(load_balancer_attributes(synthesized)["idle_timeout.timeout_seconds"])
    keep_alive = int(environment(synthesized)["LEADERBOARD_KEEP_ALIVE_SECONDS"])
    assert keep_alive > idle


# ---- rollouts and scaling ----------------------------------------------------------------------


def test_deployments_roll_back_on_failure_without_dropping_capacity(
    synthesized: Synthesized,
) -> None:
    synthesized.template.has_resource_properties(
        "AWS::ECS::Service",
        {
            "LaunchType": "FARGATE",
            "DeploymentConfiguration": {
                "DeploymentCircuitBreaker": {"Enable": True, "Rollback": True},
                "MinimumHealthyPercent": 100,
                "MaximumPercent": 200,
            },
            "HealthCheckGracePeriodSeconds": Match.any_value(),
            # Autoscaling owns the count; a deployment must not reset it.
            "DesiredCount": Match.absent(),
        },
    )


def test_the_service_scales_on_cpu_and_on_requests_per_target(synthesized: Synthesized) -> None:
    target_id, target = synthesized.one("AWS::ApplicationAutoScaling::ScalableTarget")
    assert target["Properties"]["MinCapacity"] >= 2  # one task per zone
    assert target["Properties"]["MaxCapacity"] > target["Properties"]["MinCapacity"]
    metrics = {
        policy["Properties"]["TargetTrackingScalingPolicyConfiguration"][
            "PredefinedMetricSpecification"
        ]["PredefinedMetricType"]
        for policy in synthesized.of_type("AWS::ApplicationAutoScaling::ScalingPolicy").values()
        if ref_target(policy["Properties"]["ScalingTargetId"]) == target_id
    }
    assert metrics == {"ECSServiceAverageCPUUtilization", "ALBRequestCountPerTarget"}
