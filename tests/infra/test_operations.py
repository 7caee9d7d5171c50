"""What operators rely on after the deployment: alarms that reach the SNS topic, and the hourly
snapshot of closed periods and reconcile of live boards, each run as a task of the service's own
definition."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.infra.containers import dockerfile_instructions, exec_form
from tests.infra.synthesis import CONTAINER_NAME, REPO, Synthesized, ref_target, references

Metric = tuple[str, str, frozenset[tuple[str, str]]]


def metrics_of(alarm: dict[str, Any]) -> list[Metric]:
    """(namespace, name, dimensions) of every metric an alarm reads, a math expression's too;
    a dimension's value is its literal, or the logical ids it is made from."""

    def dimensions(items: list[dict[str, Any]]) -> frozenset[tuple[str, str]]:
        return frozenset(
            (
                d["Name"],
                d["Value"]
                if isinstance(d["Value"], str)
                else ",".join(sorted(references(d["Value"]))),
            )
            for d in items
        )

    properties = alarm["Properties"]
    if "MetricName" in properties:
        return [
            (
                properties["Namespace"],
                properties["MetricName"],
                dimensions(properties.get("Dimensions", [])),
            )
        ]
    found = []
    for query in properties["Metrics"]:
        if "MetricStat" in query:
            metric = query["MetricStat"]["Metric"]
            found.append(
                (
                    metric["Namespace"],
                    metric["MetricName"],
                    dimensions(metric.get("Dimensions", [])),
                )
            )
    return found


def alarms_on(synthesized: Synthesized, namespace: str, name: str) -> list[dict[str, Any]]:
    return [
        alarm
        for alarm in synthesized.of_type("AWS::CloudWatch::Alarm").values()
        if any(m[:2] == (namespace, name) for m in metrics_of(alarm))
    ]


def test_every_alarm_tells_the_topic_when_it_fires_and_when_it_clears(
    synthesized: Synthesized,
) -> None:
    topic_id, _ = synthesized.one("AWS::SNS::Topic")
    alarms = synthesized.of_type("AWS::CloudWatch::Alarm")
    assert len(alarms) >= 8
    for alarm_id, alarm in alarms.items():
        properties = alarm["Properties"]
        assert properties["AlarmActions"] == [{"Ref": topic_id}], alarm_id
        assert properties["OKActions"] == [{"Ref": topic_id}], alarm_id
        assert properties["TreatMissingData"] == "notBreaching", alarm_id


def test_5xx_rate_alarm_divides_the_5xx_answers_by_the_requests(
    synthesized: Synthesized,
) -> None:
    (alarm,) = alarms_on(synthesized, "AWS/ApplicationELB", "HTTPCode_Target_5XX_Count")
    names = {m[1] for m in metrics_of(alarm)}
    assert names == {"HTTPCode_Target_5XX_Count", "HTTPCode_ELB_5XX_Count", "RequestCount"}
    (expression,) = [q["Expression"] for q in alarm["Properties"]["Metrics"] if "Expression" in q]
    assert "/ requests" in expression
    assert alarm["Properties"]["Threshold"] <= 5  # a percentage, not a count


def test_latency_alarm_is_on_the_p95_of_target_response_time(synthesized: Synthesized) -> None:
    (alarm,) = alarms_on(synthesized, "AWS/ApplicationELB", "TargetResponseTime")
    assert alarm["Properties"]["ExtendedStatistic"] == "p95"


def test_unhealthy_targets_alarm_watches_the_service_s_target_group(
    synthesized: Synthesized,
) -> None:
    group_id, _ = synthesized.one("AWS::ElasticLoadBalancingV2::TargetGroup")
    (alarm,) = alarms_on(synthesized, "AWS/ApplicationELB", "UnHealthyHostCount")
    ((_, _, dimensions),) = metrics_of(alarm)
    assert dict(dimensions)["TargetGroup"] == group_id
    assert alarm["Properties"]["ComparisonOperator"] == "GreaterThanThreshold"
    assert alarm["Properties"]["Threshold"] == 0


@pytest.mark.parametrize("metric", ["ThrottledRequests", "SystemErrors"])
def test_each_table_has_an_alarm_on_its_dynamodb_errors(
    synthesized: Synthesized, metric: str
) -> None:
    tables = {
        synthesized.logical_id(synthesized.stack.scores_table),
        synthesized.logical_id(synthesized.stack.snapshots_table),
    }
    alarmed = set()
    for alarm in alarms_on(synthesized, "AWS/DynamoDB", metric):
        read = {dict(d)["TableName"] for _, name, d in metrics_of(alarm) if name == metric}
        assert len(read) == 1  # one table per alarm, so the alarm names the table
        operations = {dict(d)["Operation"] for _, _, d in metrics_of(alarm)}
        # Every write and read the service sends, transactions included.
        assert {"GetItem", "Query", "PutItem", "UpdateItem", "TransactWriteItems"} <= operations
        (expression,) = [
            q["Expression"] for q in alarm["Properties"]["Metrics"] if "Expression" in q
        ]
        # DynamoDB reports these only when they happen: an unfilled sum would have no value.
        assert expression.count("FILL(") == len(operations)
        alarmed |= read
    assert alarmed == tables


def test_transaction_conflicts_alarm_watches_the_scores_table(synthesized: Synthesized) -> None:
    (alarm,) = alarms_on(synthesized, "AWS/DynamoDB", "TransactionConflict")
    ((_, _, dimensions),) = metrics_of(alarm)
    assert dict(dimensions) == {"TableName": synthesized.logical_id(synthesized.stack.scores_table)}
    assert alarm["Properties"]["Statistic"] == "Sum"


SCHEDULED = [("snapshot", "--closed-periods"), ("reconcile", "--live", "--apply")]


def _command(rule: dict[str, Any]) -> list[str]:
    (target,) = rule["Properties"]["Targets"]
    return list(json.loads(target["Input"])["containerOverrides"][0]["command"])


def scheduled_rules(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    """Each scheduled rule, by its logical id."""
    return {
        k: r
        for k, r in synthesized.of_type("AWS::Events::Rule").items()
        if "ScheduleExpression" in r["Properties"]
    }


def scheduled_rule(synthesized: Synthesized, command: tuple[str, ...]) -> dict[str, Any]:
    (rule,) = [r for r in scheduled_rules(synthesized).values() if _command(r) == list(command)]
    return rule


def test_exactly_the_two_hourly_jobs_are_scheduled(synthesized: Synthesized) -> None:
    commands = sorted(_command(r) for r in scheduled_rules(synthesized).values())
    assert commands == sorted(list(c) for c in SCHEDULED)
    minutes = {r["Properties"]["ScheduleExpression"] for r in scheduled_rules(synthesized).values()}
    assert len(minutes) == 2  # never at the same minute: the reconcile is not the snapshot's load


@pytest.mark.parametrize("command", SCHEDULED, ids=[c[0] for c in SCHEDULED])
def test_each_hourly_job_runs_as_the_service_s_task(
    synthesized: Synthesized, command: tuple[str, ...]
) -> None:
    properties = scheduled_rule(synthesized, command)["Properties"]
    assert re.fullmatch(
        r"cron\([0-5]?\d \* \* \* \? \*\)|rate\(1 hour\)", properties["ScheduleExpression"]
    )
    (target,) = properties["Targets"]
    task_id, _ = synthesized.one("AWS::ECS::TaskDefinition")
    parameters = target["EcsParameters"]
    assert parameters["TaskDefinitionArn"] == {"Ref": task_id}
    assert parameters["LaunchType"] == "FARGATE"
    overrides = json.loads(target["Input"])["containerOverrides"]
    assert overrides == [{"name": CONTAINER_NAME, "command": list(command)}]
    # The override replaces the image's CMD and keeps its ENTRYPOINT.
    (entrypoint,) = [
        exec_form(args)
        for instruction, args in dockerfile_instructions(REPO / "Dockerfile")
        if instruction == "ENTRYPOINT"
    ]
    assert [*entrypoint, *overrides[0]["command"]] == ["leaderboard", *command]


@pytest.mark.parametrize("command", SCHEDULED, ids=[c[0] for c in SCHEDULED])
def test_the_scheduled_task_runs_where_the_service_runs(
    synthesized: Synthesized, command: tuple[str, ...]
) -> None:
    (target,) = scheduled_rule(synthesized, command)["Properties"]["Targets"]
    scheduled = target["EcsParameters"]["NetworkConfiguration"]["AwsVpcConfiguration"]
    _, service = synthesized.one("AWS::ECS::Service")
    served = service["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]
    assert scheduled["AssignPublicIp"] == "DISABLED"
    assert scheduled["Subnets"] == served["Subnets"]
    assert scheduled["SecurityGroups"] == served["SecurityGroups"]
    # EventBridge starts it with a role of its own, never the task's.
    task_role = ref_target(synthesized.task_definition()["TaskRoleArn"])
    assert ref_target(target["RoleArn"]) != task_role


def test_a_snapshot_run_that_fails_or_cannot_start_reaches_the_topic(
    synthesized: Synthesized,
) -> None:
    topic_id, _ = synthesized.one("AWS::SNS::Topic")
    task_id, _ = synthesized.one("AWS::ECS::TaskDefinition")
    cluster_id, _ = synthesized.one("AWS::ECS::Cluster")
    (stopped,) = [
        r["Properties"]
        for r in synthesized.of_type("AWS::Events::Rule").values()
        if "EventPattern" in r["Properties"]
    ]
    pattern = stopped["EventPattern"]
    assert pattern["detail-type"] == ["ECS Task State Change"]
    detail = pattern["detail"]
    assert [ref_target(c) for c in detail["clusterArn"]] == [cluster_id]
    assert detail["lastStatus"] == ["STOPPED"]
    # Tasks of the definition started on their own; the service's tasks are "service:...".
    family = synthesized.resources[task_id]["Properties"]["Family"]
    assert detail["group"] == [f"family:{family}"]
    assert detail["containers"] == {"exitCode": [{"anything-but": 0}]}
    assert [t["Arn"] for t in stopped["Targets"]] == [{"Ref": topic_id}]
    watched = set()
    for alarm in alarms_on(synthesized, "AWS/Events", "FailedInvocations"):
        ((_, _, dimensions),) = metrics_of(alarm)
        watched.add(dict(dimensions)["RuleName"])
    assert watched == set(scheduled_rules(synthesized))


def test_drift_found_by_two_hourly_reconciles_in_a_row_pages(synthesized: Synthesized) -> None:
    (alarm,) = alarms_on(synthesized, "Leaderboard", "reconcile_drifted_boards")
    properties = alarm["Properties"]
    assert properties["Period"] == 3600
    assert (properties["EvaluationPeriods"], properties["DatapointsToAlarm"]) == (2, 2)
    assert properties["ComparisonOperator"] == "GreaterThanThreshold"
    assert properties["Threshold"] == 0
    assert properties["TreatMissingData"] == "notBreaching"
