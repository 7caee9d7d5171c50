"""The ``leaderboard`` command against the embedded DynamoDB: tables and keys."""

from __future__ import annotations

import os
import subprocess
import sys

from app.store.dynamo import DynamoStore, open_client
from app.store.tables import TableNames
from tests.support import scores_items


def _run(endpoint: str, tables: TableNames, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")}
    env |= {
        "LEADERBOARD_DYNAMODB_ENDPOINT": endpoint,
        "LEADERBOARD_SCORES_TABLE": tables.scores,
        "LEADERBOARD_SNAPSHOTS_TABLE": tables.snapshots,
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_create_tables_is_idempotent(dynamo_endpoint: str, table_names: TableNames) -> None:
    first = _run(dynamo_endpoint, table_names, "create-tables")
    assert first.returncode == 0, first.stderr
    assert table_names.scores in first.stdout
    again = _run(dynamo_endpoint, table_names, "create-tables")
    assert again.returncode == 0
    assert "nothing" in again.stdout
    async with open_client(
        endpoint=dynamo_endpoint, region="us-east-1", dummy_credentials=True
    ) as client:  # tidy up: moto slows with every table it holds
        for name in (table_names.scores, table_names.snapshots):
            await client.delete_table(TableName=name)


async def test_keys_create_list_revoke(
    dynamo_endpoint: str, table_names: TableNames, store: DynamoStore
) -> None:
    created = _run(
        dynamo_endpoint, table_names, "keys", "create", "--name", "quiz", "--scope", "submit:trivia"
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("lb_live_")
    assert len(key) >= len("lb_live_") + 43  # 32 random bytes, base64url
    listed = _run(dynamo_endpoint, table_names, "keys", "list")
    assert "quiz" in listed.stdout
    assert "submit:trivia" in listed.stdout
    assert "active" in listed.stdout
    assert key not in listed.stdout + listed.stderr
    assert key not in str(await scores_items(store))
    revoked = _run(dynamo_endpoint, table_names, "keys", "revoke", "quiz")
    assert revoked.returncode == 0, revoked.stderr
    assert "revoked" in _run(dynamo_endpoint, table_names, "keys", "list").stdout
    bad = _run(dynamo_endpoint, table_names, "keys", "create", "--name", "x", "--scope", "root")
    assert bad.returncode == 2
    assert "scope" in bad.stderr
