"""The one definition of the tables, used by ``leaderboard create-tables``, the embedded backend,
compose's bootstrap and the tests (and checked against the CDK stack).

Scores (``playerId`` / ``leaderboardId``) holds players' standings, which alone carry ``rankKey`` and
so alone reach the sparse ``RankIndex`` (``leaderboardId`` / ``rankKey``), plus the bookkeeping rows:
idempotency records, histogram counters and seeding leases. Snapshots (``leaderboardId`` /
``snapshotTakenAt``) holds frozen tops of boards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RANK_INDEX = "RankIndex"
RANK_INDEX_PROJECTED = ("displayName", "country", "lastPlayedAt")
TTL_ATTRIBUTE = "expiresAt"


@dataclass(frozen=True)
class TableNames:
    scores: str
    snapshots: str


def scores_table_spec(name: str) -> dict[str, Any]:
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "playerId", "AttributeType": "S"},
            {"AttributeName": "leaderboardId", "AttributeType": "S"},
            {"AttributeName": "rankKey", "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": "playerId", "KeyType": "HASH"},
            {"AttributeName": "leaderboardId", "KeyType": "RANGE"},
        ],
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
    }


def snapshots_table_spec(name: str) -> dict[str, Any]:
    return {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [
            {"AttributeName": "leaderboardId", "AttributeType": "S"},
            {"AttributeName": "snapshotTakenAt", "AttributeType": "S"},
        ],
        "KeySchema": [
            {"AttributeName": "leaderboardId", "KeyType": "HASH"},
            {"AttributeName": "snapshotTakenAt", "KeyType": "RANGE"},
        ],
    }


def table_specs(names: TableNames) -> list[dict[str, Any]]:
    return [scores_table_spec(names.scores), snapshots_table_spec(names.snapshots)]


TABLES_WITH_TTL = ("scores",)
"""Snapshots keep no TTL on purpose: they are the archive."""
