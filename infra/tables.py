"""The two DynamoDB tables, Scores and Snapshots, translated from the service's own definition
(``app/store/tables.py``) so that production has exactly the tables the adapter creates locally,
and the per-operation DynamoDB figures the alarms and the dashboard both read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_dynamodb as dynamodb

from app.store.tables import (
    PREVIOUS_RANK_INDEX,
    RANK_INDEX,
    TTL_ATTRIBUTE,
    rank_index_spec,
    scores_table_spec,
    snapshots_table_spec,
)
from app.telemetry import DATA_PLANE_OPERATIONS

_ATTRIBUTE_TYPES = {
    "S": dynamodb.AttributeType.STRING,
    "N": dynamodb.AttributeType.NUMBER,
    "B": dynamodb.AttributeType.BINARY,
}
_TRANSLATED_SPEC_KEYS = frozenset(
    {"TableName", "BillingMode", "AttributeDefinitions", "KeySchema", "GlobalSecondaryIndexes"}
)


class Tables:
    """Scores and Snapshots, added to ``stack`` itself (leaderboard_stack.py says why): on
    demand, retained, deletion-protected, with point-in-time recovery, TTL on Scores only."""

    def __init__(self, stack: Stack, *, prefix: str, keep_previous_rank_index: bool) -> None:
        self.keep_previous_rank_index = keep_previous_rank_index
        scores = scores_table_spec(f"{prefix}-scores")
        if keep_previous_rank_index:
            # CloudFormation adds or drops one index per update, and never changes one in place.
            scores["GlobalSecondaryIndexes"] = [
                rank_index_spec(previous=True),
                *scores["GlobalSecondaryIndexes"],
            ]
        self.scores = _table(stack, "ScoresTable", scores, ttl=True)
        # No TTL on purpose: snapshots are the archive.
        self.snapshots = _table(
            stack, "SnapshotsTable", snapshots_table_spec(f"{prefix}-snapshots"), ttl=False
        )

    def indexes_read(self) -> list[str]:
        """The indexes of Scores the tasks read: during a move to RankIndex's second definition,
        tasks of the earlier version still read the first until they are replaced."""
        if self.keep_previous_rank_index:
            return [PREVIOUS_RANK_INDEX, RANK_INDEX]
        return [RANK_INDEX]


def _table(
    scope: Stack, construct_id: str, spec: Mapping[str, Any], *, ttl: bool
) -> dynamodb.Table:
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
        scope,
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


def sum_over_operations(
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
