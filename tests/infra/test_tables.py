"""The deployed tables are the service's own definition (app/store/tables.py), translated to
CloudFormation here independently of the stack's translation, plus what only production adds:
point-in-time recovery, deletion protection, retention on stack delete, and TTL on Scores only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.store.tables import (
    PREVIOUS_RANK_INDEX,
    RANK_INDEX,
    RANK_INDEX_PROJECTED,
    TTL_ATTRIBUTE,
    rank_index_spec,
    scores_table_spec,
    snapshots_table_spec,
)
from tests.infra.synthesis import (
    Match,
    Synthesized,
    listify,
    ref_target,
    statements_of_role,
    synthesize,
)

SCORES = "leaderboard-scores"
SNAPSHOTS = "leaderboard-snapshots"


def expected_properties(spec: dict[str, Any], *, ttl: bool) -> dict[str, Any]:
    """CreateTable's parameters as AWS::DynamoDB::Table properties (the same names and shapes for
    everything the definition uses), with production's additions."""
    expected = dict(spec)
    expected["PointInTimeRecoverySpecification"] = {"PointInTimeRecoveryEnabled": True}
    expected["DeletionProtectionEnabled"] = True
    if ttl:
        expected["TimeToLiveSpecification"] = {"AttributeName": TTL_ATTRIBUTE, "Enabled": True}
    return expected


def normalised(properties: dict[str, Any]) -> dict[str, Any]:
    """Attribute definitions are a set to DynamoDB: compare them in one order."""
    result = dict(properties)
    result["AttributeDefinitions"] = sorted(
        properties["AttributeDefinitions"], key=lambda a: a["AttributeName"]
    )
    return result


def table_named(synthesized: Synthesized, name: str) -> dict[str, Any]:
    tables = [
        resource
        for resource in synthesized.of_type("AWS::DynamoDB::Table").values()
        if resource["Properties"].get("TableName") == name
    ]
    assert len(tables) == 1, f"expected one table named {name}"
    return tables[0]


def test_the_stack_deploys_exactly_the_two_tables(synthesized: Synthesized) -> None:
    names = {
        r["Properties"]["TableName"] for r in synthesized.of_type("AWS::DynamoDB::Table").values()
    }
    assert names == {SCORES, SNAPSHOTS}
    assert not synthesized.of_type("AWS::DynamoDB::GlobalTable")


def test_scores_table_is_the_definition_with_ttl(synthesized: Synthesized) -> None:
    actual = table_named(synthesized, SCORES)["Properties"]
    assert normalised(actual) == normalised(
        expected_properties(scores_table_spec(SCORES), ttl=True)
    )


def test_snapshots_table_is_the_definition_without_ttl(synthesized: Synthesized) -> None:
    actual = table_named(synthesized, SNAPSHOTS)["Properties"]
    assert normalised(actual) == normalised(
        expected_properties(snapshots_table_spec(SNAPSHOTS), ttl=False)
    )
    # The archive is kept: nothing may expire it.
    assert "TimeToLiveSpecification" not in actual


def test_both_tables_are_on_demand_recoverable_protected_and_retained(
    synthesized: Synthesized,
) -> None:
    for name in (SCORES, SNAPSHOTS):
        synthesized.template.has_resource(
            "AWS::DynamoDB::Table",
            {
                "Properties": Match.object_like(
                    {
                        "TableName": name,
                        "BillingMode": "PAY_PER_REQUEST",
                        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                        "DeletionProtectionEnabled": True,
                        "ProvisionedThroughput": Match.absent(),
                    }
                ),
                "DeletionPolicy": "Retain",
                "UpdateReplacePolicy": "Retain",
            },
        )


def test_rank_index_is_sparse_on_rank_key_with_the_projected_attributes(
    synthesized: Synthesized,
) -> None:
    synthesized.template.has_resource_properties(
        "AWS::DynamoDB::Table",
        {
            "TableName": SCORES,
            "GlobalSecondaryIndexes": [
                {
                    "IndexName": RANK_INDEX,
                    "KeySchema": [
                        {"AttributeName": "leaderboardId", "KeyType": "HASH"},
                        {"AttributeName": "rankKey", "KeyType": "RANGE"},
                    ],
                    "Projection": {
                        "ProjectionType": "INCLUDE",
                        "NonKeyAttributes": list(RANK_INDEX_PROJECTED),
                    },
                }
            ],
        },
    )


@pytest.fixture(scope="module")
def migrating(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return synthesize(
        Path(tmp_path_factory.mktemp("cdk.out.migrating")), keepPreviousRankIndex="true"
    )


def test_a_stack_moving_to_the_second_rank_index_keeps_the_first_until_told(
    synthesized: Synthesized, migrating: Synthesized
) -> None:
    """The first of decision 0025's two deployments: the first definition stays, unchanged (one
    index added in the update, none altered), and the tasks may read both while old ones drain."""
    indexes = table_named(migrating, SCORES)["Properties"]["GlobalSecondaryIndexes"]
    assert indexes == [rank_index_spec(previous=True), rank_index_spec()]
    assert indexes[0]["IndexName"] == PREVIOUS_RANK_INDEX
    assert "lastPlayedAt" in indexes[0]["Projection"]["NonKeyAttributes"]
    assert "lastPlayedAt" not in indexes[1]["Projection"]["NonKeyAttributes"]

    def index_grants(stack: Synthesized) -> set[str]:
        role = ref_target(stack.task_definition()["TaskRoleArn"])
        statements = list(statements_of_role(stack, role))
        return {
            str(part).removeprefix("/index/")
            for statement in statements
            for resource in listify(statement["Resource"])
            if isinstance(resource, dict) and "Fn::Join" in resource
            for part in resource["Fn::Join"][1]
            if isinstance(part, str) and part.startswith("/index/")
        }

    assert index_grants(migrating) == {PREVIOUS_RANK_INDEX, RANK_INDEX}
    assert index_grants(synthesized) == {RANK_INDEX}
