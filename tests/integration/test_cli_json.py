"""The `leaderboard` command for scripts, on the embedded backend: `--json` prints one line of JSON
in each command's own shape (the shapes docs/operations.md lists), each command says on stderr
what it works on, `--endpoint` beats the environment, key commands against AWS ask no cursor
secret, and a timeout names the setting that changes it.

The shapes are read from the command run in this process (``tests.commands``: the same entry point,
arguments and environment); the rest, which are about the environment a process starts with, run a
process of their own."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.store.client import open_client
from app.store.tables import TableNames
from tests.commands import Ran, command_environment, leaderboard_in_process


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")}
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=environment | env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def tables(dynamo_endpoint: str, table_names: TableNames) -> Iterator[TableNames]:
    """Fresh table names, the tables dropped afterwards (the commands create them)."""
    yield table_names

    async def drop() -> None:
        async with open_client(
            endpoint=dynamo_endpoint, region="us-east-1", dummy_credentials=True
        ) as client:
            listed = (await client.list_tables())["TableNames"]
            for name in (table_names.scores, table_names.snapshots):
                if name in listed:
                    await client.delete_table(TableName=name)

    asyncio.run(drop())


def _env(endpoint: str, tables: TableNames) -> dict[str, str]:
    return {
        "LEADERBOARD_DYNAMODB_ENDPOINT": endpoint,
        "LEADERBOARD_SCORES_TABLE": tables.scores,
        "LEADERBOARD_SNAPSHOTS_TABLE": tables.snapshots,
        "LEADERBOARD_DEFINITION_CHANGE_GRACE_SECONDS": "0",
        "LEADERBOARD_DEFINITION_CACHE_SECONDS": "0",
    }


def _json(ran: subprocess.CompletedProcess[str] | Ran) -> Any:
    """The command's one line of JSON, having checked it ran and said what it worked on."""
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.count("\n") == 1, ran.stdout  # one line
    assert "leaderboard: working on DynamoDB at " in ran.stderr.splitlines()[0]
    return json.loads(ran.stdout)


def test_every_reporting_command_prints_one_line_of_json_in_its_own_shape(
    dynamo_endpoint: str, tables: TableNames, tmp_path: Path
) -> None:
    environment = command_environment(_env(dynamo_endpoint, tables))

    def run(*args: str) -> Any:
        return _json(leaderboard_in_process(*args, "--json", environment=environment))

    created = run("create-tables")
    assert created == {
        "created": [tables.scores, tables.snapshots],
        "ttlEnabled": [],
        "deletionProtectionEnabled": [],
        "indexAdded": [],
        "unchanged": [],
    }
    assert run("create-tables")["unchanged"] == [tables.scores, tables.snapshots]

    key = run("keys", "create", "--name", "quiz", "--scope", "submit:trivia")
    assert set(key) == {"key", "keyId", "name", "scopes", "kind"}
    assert key["keyId"] == hashlib.sha256(key["key"].encode()).hexdigest()[:8]
    assert (key["name"], key["scopes"], key["kind"]) == ("quiz", ["submit:trivia"], "live")
    (listed,) = run("keys", "list")["keys"]
    assert listed == {
        "keyId": key["keyId"],
        "name": "quiz",
        "scopes": ["submit:trivia"],
        "createdAt": listed["createdAt"],
        "revokedAt": None,
    }
    assert key["key"] not in json.dumps(listed)
    (revoked,) = run("keys", "revoke", "quiz")["revoked"]
    assert revoked["keyId"] == key["keyId"]
    assert revoked["revokedAt"] is not None

    defined = run("boards", "define", "trivia", "classic", "--order", "asc")
    assert defined == run("boards", "show", "trivia", "classic")
    assert defined["order"] == "asc"
    assert run("boards", "list", "trivia") == {
        "game": "trivia",
        "variants": [defined],
        "undefinedVariants": "default",
    }

    rows = tmp_path / "rows.csv"
    rows.write_text("playerId,score,achievedAt\nann,30,2026-11-01T10:00:00Z\n")
    board = "trivia#classic#alltime"
    seeded = run("seed", board, str(rows), "--grace-seconds", "0")
    assert (seeded["boardId"], seeded["rowsWritten"], seeded["playerCount"]) == (board, 1, 1)

    reconciled = run("reconcile", board)
    assert {"boardId", "applied", "playerCount", "differences", "otherOrderRows"} <= set(reconciled)
    assert (reconciled["playerCount"], reconciled["differences"]) == (1, [])
    assert reconciled["otherOrderRows"] == {"found": 0, "rekeyed": 0, "skipped": 0}
    live = run("reconcile", "--live")
    assert {"applied", "drifted", "held", "failed", "_aws"} <= set(live)

    taken = run("snapshot", board)
    assert [e["playerId"] for e in taken["entries"]] == ["ann"]
    closed = run("snapshot", "--closed-periods")
    assert set(closed) == {"taken", "shortened", "alreadyTaken", "expired", "failed"}

    assert run("erase", "ann") == {
        "playerId": "ann",
        "removed": {"boards": 1, "snapshots": 1, "idempotencyRecords": 0},
    }


def test_endpoint_beats_the_environment_and_key_commands_on_aws_ask_no_cursor_secret(
    dynamo_endpoint: str, tables: TableNames
) -> None:
    env = _env("http://127.0.0.1:9", tables)  # nothing listens there
    made = _cli("create-tables", "--endpoint", dynamo_endpoint, env=env)
    assert made.returncode == 0, made.stderr
    assert f"working on DynamoDB at {dynamo_endpoint} (--endpoint)" in made.stderr
    # As against AWS: production, credentials from the environment, and no cursor secret.
    aws = {
        "LEADERBOARD_ENVIRONMENT": "production",
        "LEADERBOARD_SCORES_TABLE": tables.scores,
        "LEADERBOARD_SNAPSHOTS_TABLE": tables.snapshots,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    # In this process (the same settings from the same environment): a process of its own for
    # each is what the lines before and after run.
    environment = command_environment(aws)
    for command in (
        ["keys", "create", "--name", "ops", "--scope", "admin"],
        ["keys", "list"],
        ["keys", "revoke", "ops"],
    ):
        ran = leaderboard_in_process(
            *command, "--json", "--endpoint", dynamo_endpoint, environment=environment
        )
        assert ran.returncode == 0, (command, ran.stderr)
        assert "CURSOR_SECRET" not in ran.stderr
    listed = _json(
        leaderboard_in_process(
            "keys", "list", "--json", "--endpoint", dynamo_endpoint, environment=environment
        )
    )
    assert [(k["name"], k["revokedAt"] is not None) for k in listed["keys"]] == [("ops", True)]
    # The service itself still refuses to start so.
    served = _cli("serve", "--port", "0", env=aws)
    assert served.returncode == 2
    assert "LEADERBOARD_CURSOR_SECRET of 32+" in served.stderr
    # Where on AWS it works, it says so.
    no_endpoint = aws | {"LEADERBOARD_REGION": "eu-west-1", "AWS_MAX_ATTEMPTS": "1"}
    said = _cli("keys", "list", env=no_endpoint | {"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
    assert (
        "working on AWS DynamoDB in eu-west-1 (LEADERBOARD_ENVIRONMENT=production)"
        in said.stderr.splitlines()[0]
    )


def test_a_timeout_names_what_was_being_done_and_the_setting_that_changes_it(
    tables: TableNames,
) -> None:
    with socket.socket() as silent:  # takes connections, and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        env = _env("http://127.0.0.1:9", tables)
        env["LEADERBOARD_DYNAMODB_READ_TIMEOUT_SECONDS"] = "0.3"
        ran = _cli("keys", "list", "--endpoint", endpoint, env=env)
    assert ran.returncode == 2
    assert "DynamoDB did not answer during" in ran.stderr
    assert "within the read timeout (0.3 s, LEADERBOARD_DYNAMODB_READ_TIMEOUT_SECONDS)" in (
        ran.stderr
    )
    assert "Traceback" not in ran.stderr
