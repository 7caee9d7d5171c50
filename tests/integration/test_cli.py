"""The ``leaderboard`` command against the embedded DynamoDB: tables and keys.

Most tests run the command in this process (``tests.commands``); those about the process itself
run one of its own: create-tables twice, the imports, the top-level help, and an operator's seed,
reconcile and snapshot with their output, progress and logs as the process writes them."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from app.bootstrap import Runtime
from app.cli import build_parser, main
from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey
from app.domain.periods import Board
from app.domain.storage_keys import coarse_pk, fine_pk
from app.services.registry import register_board
from app.store.client import open_client
from app.store.tables import TTL_ATTRIBUTE, TableNames, table_specs
from tests.commands import Ran, command_environment, leaderboard
from tests.support import counter_total, lasting, put_wide_rows, scores_items

LAYOUT = BucketLayout()


def _environment(
    endpoint: str, tables: TableNames, env: dict[str, str] | None = None
) -> dict[str, str]:
    return command_environment(
        {
            "LEADERBOARD_DYNAMODB_ENDPOINT": endpoint,
            "LEADERBOARD_SCORES_TABLE": tables.scores,
            "LEADERBOARD_SNAPSHOTS_TABLE": tables.snapshots,
            # No request in flight when a command changes a variant's ranking: no grace period,
            # and no task holding the old definition after it.
            "LEADERBOARD_DEFINITION_CHANGE_GRACE_SECONDS": "0",
            "LEADERBOARD_DEFINITION_CACHE_SECONDS": "0",
            **(env or {}),
        }
    )


def _run(
    endpoint: str, tables: TableNames, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own, as an operator runs it."""
    return subprocess.run(
        [sys.executable, "-m", "app.cli", *args],
        env=_environment(endpoint, tables, env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def _command(
    endpoint: str, tables: TableNames, *args: str, env: dict[str, str] | None = None
) -> Ran:
    """The command in this process (``tests.commands``), for the tests of what a command does
    rather than of its process: the same entry point, arguments and environment."""
    return await leaderboard(*args, environment=_environment(endpoint, tables, env))


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
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    empty = await _command(dynamo_endpoint, table_names, "keys", "list")
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.split() == ["KEY", "ID", "NAME", "SCOPES", "CREATED", "STATE"]
    assert "no stored keys" in empty.stderr
    created = await _command(
        dynamo_endpoint, table_names, "keys", "create", "--name", "quiz", "--scope", "submit:trivia"
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("lb_live_")
    assert len(key) >= len("lb_live_") + 43  # 32 random bytes, base64url
    listed = await _command(dynamo_endpoint, table_names, "keys", "list")
    header, row = listed.stdout.splitlines()
    assert header.split() == ["KEY", "ID", "NAME", "SCOPES", "CREATED", "STATE"]
    assert row.index("quiz") == header.index("NAME")  # aligned under its header
    assert "quiz" in listed.stdout
    assert "submit:trivia" in listed.stdout
    assert "active" in listed.stdout
    assert key not in listed.stdout + listed.stderr
    assert key not in str(await scores_items(runtime))
    revoked = await _command(dynamo_endpoint, table_names, "keys", "revoke", "quiz")
    assert revoked.returncode == 0, revoked.stderr
    assert "revoked" in (await _command(dynamo_endpoint, table_names, "keys", "list")).stdout
    bad = await _command(
        dynamo_endpoint, table_names, "keys", "create", "--name", "x", "--scope", "root"
    )
    assert bad.returncode == 2
    assert "scope" in bad.stderr


async def test_seed_then_reconcile_from_the_command_line(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime, tmp_path: Path
) -> None:
    achieved = "2026-11-01T10:00:00.000Z"
    rows = ["playerId,score,achievedAt,displayName,country"]
    rows += [f"p{i},{i * 10},{achieved},Player {i},FR" for i in range(12)]
    seed_file = tmp_path / "players.csv"
    seed_file.write_text("\n".join(rows) + "\n")
    board = "trivia#classic#alltime"
    seeded = await _command(
        dynamo_endpoint, table_names, "seed", board, str(seed_file), "--grace-seconds", "0"
    )
    assert seeded.returncode == 0, seeded.stderr
    report = json.loads(seeded.stdout)
    assert (report["rowsWritten"], report["playerCount"]) == (12, 12)
    page = await runtime.stores.index.query_board(board, limit=20, start=None)
    assert [e.player_id for e in page.entries] == [f"p{i}" for i in reversed(range(12))]
    assert await counter_total(runtime, board) == (12, 12)

    clean = await _command(dynamo_endpoint, table_names, "reconcile", board)
    assert clean.returncode == 0, clean.stderr
    assert "0 differences" in clean.stdout
    await runtime.client.update_item(  # drift one fine counter
        TableName=runtime.tables.scores,
        Key={"playerId": {"S": fine_pk(board, 0)}, "leaderboardId": {"S": "0000"}},
        UpdateExpression="ADD n :d",
        ExpressionAttributeValues={":d": {"N": "5"}},
    )
    dry = await _command(dynamo_endpoint, table_names, "reconcile", board)
    assert "1 differences, 0 repaired" in dry.stdout
    fixed = await _command(dynamo_endpoint, table_names, "reconcile", board, "--apply")
    assert "1 repaired" in fixed.stdout, fixed.stdout + fixed.stderr
    assert await counter_total(runtime, board) == (12, 12)


async def test_a_bad_seed_file_reports_lines_and_writes_nothing(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime, tmp_path: Path
) -> None:
    seed_file = tmp_path / "bad.jsonl"
    seed_file.write_text(
        '{"playerId": "ok", "score": 1, "achievedAt": "2026-11-01T10:00:00Z"}\n'
        '{"playerId": "a#b", "score": 1, "achievedAt": "2026-11-01T10:00:00Z"}\n'
        '{"playerId": "neg", "score": -1, "achievedAt": "2026-11-01T10:00:00Z"}\n'
    )
    result = await _command(
        dynamo_endpoint, table_names, "seed", "trivia#classic#alltime", str(seed_file)
    )
    assert result.returncode == 2
    assert "line: 2" in result.stderr
    assert "line: 3" in result.stderr
    assert await scores_items(runtime) == []


async def test_snapshot_and_erase_from_the_command_line(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime, tmp_path: Path
) -> None:
    seed_file = tmp_path / "players.csv"
    seed_file.write_text(
        "playerId,score,achievedAt\nann,30,2026-11-01T10:00:00Z\nbob,20,2026-11-01T10:00:00Z\n"
    )
    board = "trivia#classic#alltime"
    seeded = await _command(
        dynamo_endpoint, table_names, "seed", board, str(seed_file), "--grace-seconds", "0"
    )
    assert seeded.returncode == 0, seeded.stderr
    taken = await _command(dynamo_endpoint, table_names, "snapshot", board, "--top", "10")
    assert taken.returncode == 0, taken.stderr
    assert [e["playerId"] for e in json.loads(taken.stdout)["entries"]] == ["ann", "bob"]
    closed = await _command(dynamo_endpoint, table_names, "snapshot", "--closed-periods")
    assert closed.returncode == 0, closed.stderr
    # The scheduled jobs say how far they have got off a terminal too (here: a pipe).
    assert "snapshotting 0 closed boards ..." in closed.stderr
    live = await _command(dynamo_endpoint, table_names, "reconcile", "--live")
    assert live.returncode == 0, live.stderr
    assert "reconciling 1 live board ..." in live.stderr
    assert "done in" in live.stderr
    erased = await _command(dynamo_endpoint, table_names, "erase", "ann")
    assert erased.returncode == 0, erased.stderr
    assert json.loads(erased.stdout)["removed"] == {
        "boards": 1,
        "snapshots": 1,
        "idempotencyRecords": 0,
    }
    assert await counter_total(runtime, board) == (1, 1)


async def test_a_snapshot_too_large_for_one_item_from_the_command_line(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """A BOARD whose top does not fit in one item is refused with the numbers (exit 2, nothing
    written); the closed-periods run keeps what fits and lists it as shortened."""
    day = (datetime.now(UTC) - timedelta(days=2)).date()
    board = Board.from_id(f"trivia#classic#day#{day.isoformat()}")
    await put_wide_rows(runtime, board.board_id, 1000)
    await register_board(
        registry=runtime.stores.registry, board=board, definition=lasting(timedelta(days=30))
    )
    refused = await _command(
        dynamo_endpoint, table_names, "snapshot", board.board_id, "--top", "1000"
    )
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == ""
    assert "409,600 bytes" in refused.stderr
    found = re.search(r"largestTop: (\d+)", refused.stderr)
    assert found, refused.stderr
    largest = int(found[1])
    closed = await _command(
        dynamo_endpoint, table_names, "snapshot", "--closed-periods", "--top", "1000"
    )
    assert closed.returncode == 0, closed.stderr
    document = json.loads(closed.stdout)
    (taken,) = document["taken"]
    assert document["shortened"] == [
        {
            "leaderboardId": board.board_id,
            "snapshotTakenAt": taken["snapshotTakenAt"],
            "topN": 1000,
            "kept": largest,
            "itemBytes": document["shortened"][0]["itemBytes"],
            "itemLimitBytes": 409_600,
        }
    ]
    assert document["shortened"][0]["itemBytes"] > 409_600
    assert "snapshot_shortened" in closed.stderr


async def test_the_cli_builds_its_adapters_as_the_service_does(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """With more than the default 4 counter shards, a board's players are counted on all of them;
    the CLI must read every shard the service writes (it once built its own adapters with 4)."""
    board = "trivia#classic#alltime"
    shards = 8
    for shard in range(shards):
        player = f"p{shard}"
        await runtime.client.put_item(
            TableName=runtime.tables.scores,
            Item={
                "playerId": {"S": player},
                "leaderboardId": {"S": board},
                "rankKey": {"S": RankKey(100 + shard, 1_700_000_000_000, player).encode()},
                "version": {"N": "1"},
            },
        )
        bucket, slot = LAYOUT.slot_of(100 + shard)
        for pk, sk in ((coarse_pk(board, shard), bucket), (fine_pk(board, bucket), slot)):
            await runtime.client.update_item(
                TableName=runtime.tables.scores,
                Key={"playerId": {"S": pk}, "leaderboardId": {"S": f"{sk:04d}"}},
                UpdateExpression="ADD n :one",
                ExpressionAttributeValues={":one": {"N": "1"}},
            )
    taken = await _command(
        dynamo_endpoint,
        table_names,
        "snapshot",
        board,
        env={"LEADERBOARD_COUNTER_SHARDS": str(shards)},
    )
    assert taken.returncode == 0, taken.stderr
    assert json.loads(taken.stdout)["playerCount"] == shards
    clean = await _command(
        dynamo_endpoint,
        table_names,
        "reconcile",
        board,
        env={"LEADERBOARD_COUNTER_SHARDS": str(shards)},
    )
    assert "0 differences" in clean.stdout, clean.stdout + clean.stderr


async def test_a_board_seeded_from_the_command_line_gets_its_closed_period_snapshot(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime, tmp_path: Path
) -> None:
    day = (datetime.now(UTC) - timedelta(days=1, hours=6)).date()
    seed_file = tmp_path / "yesterday.csv"
    seed_file.write_text(f"playerId,score,achievedAt\nann,30,{day.isoformat()}T12:00:00Z\n")
    board = f"trivia#classic#day#{day.isoformat()}"
    seeded = await _command(
        dynamo_endpoint, table_names, "seed", board, str(seed_file), "--grace-seconds", "0"
    )
    assert seeded.returncode == 0, seeded.stderr
    closed = await _command(dynamo_endpoint, table_names, "snapshot", "--closed-periods")
    assert closed.returncode == 0, closed.stderr
    # The scheduled job says how far it has got off a terminal too (here: a pipe).
    assert "snapshotting 1 closed board ..." in closed.stderr
    assert [s["leaderboardId"] for s in json.loads(closed.stdout)["taken"]] == [board]


async def test_create_tables_turns_deletion_protection_on_for_tables_already_there(
    dynamo_endpoint: str, table_names: TableNames
) -> None:
    assert (await _command(dynamo_endpoint, table_names, "create-tables")).returncode == 0
    protected = await _command(
        dynamo_endpoint, table_names, "create-tables", "--deletion-protection"
    )
    assert protected.returncode == 0, protected.stderr
    assert f"deletion protection turned on: {table_names.scores}, {table_names.snapshots}" in (
        protected.stdout
    )
    again = await _command(dynamo_endpoint, table_names, "create-tables", "--deletion-protection")
    assert f"already there: {table_names.scores}, {table_names.snapshots}" in again.stdout
    async with open_client(
        endpoint=dynamo_endpoint, region="us-east-1", dummy_credentials=True
    ) as client:
        for name in (table_names.scores, table_names.snapshots):
            described = await client.describe_table(TableName=name)
            assert described["Table"].get("DeletionProtectionEnabled") is True
            await client.update_table(TableName=name, DeletionProtectionEnabled=False)
            await client.delete_table(TableName=name)


async def test_create_tables_reads_every_page_of_the_table_list(runtime: Runtime) -> None:
    """An account with more tables than one ListTables page holds (100) still finds its own:
    a page of one name makes moto page over the few it holds, as DynamoDB does over many."""
    pages: list[dict[str, Any]] = []

    def one_name_a_page(params: dict[str, Any], **_: Any) -> None:
        params["Limit"] = 1
        pages.append(dict(params))

    runtime.client.meta.events.register(
        "provide-client-params.dynamodb.ListTables", one_name_a_page
    )
    report = await runtime.table_admin.create_tables()
    assert report.created == []
    assert report.unchanged == [runtime.tables.scores, runtime.tables.snapshots]
    assert len(pages) >= 2
    assert "ExclusiveStartTableName" not in pages[0]
    assert all(page.get("ExclusiveStartTableName") for page in pages[1:])


async def test_create_tables_turns_ttl_on_for_a_scores_table_already_there_without_it(
    dynamo_endpoint: str, table_names: TableNames
) -> None:
    async with open_client(
        endpoint=dynamo_endpoint, region="us-east-1", dummy_credentials=True
    ) as client:  # the tables as made by hand, or by a create-tables that stopped half-way
        for spec in table_specs(table_names):
            await client.create_table(**spec)
    turned = await _command(dynamo_endpoint, table_names, "create-tables")
    assert turned.returncode == 0, turned.stderr
    assert f"TTL turned on: {table_names.scores}\n" in turned.stdout
    assert f"already there: {table_names.snapshots}\n" in turned.stdout
    again = await _command(dynamo_endpoint, table_names, "create-tables")
    assert "TTL turned on" not in again.stdout
    assert f"already there: {table_names.scores}, {table_names.snapshots}" in again.stdout
    async with open_client(
        endpoint=dynamo_endpoint, region="us-east-1", dummy_credentials=True
    ) as client:
        described = await client.describe_time_to_live(TableName=table_names.scores)
        assert described["TimeToLiveDescription"] == {
            "TimeToLiveStatus": "ENABLED",
            "AttributeName": TTL_ATTRIBUTE,
        }
        snapshots = await client.describe_time_to_live(TableName=table_names.snapshots)
        assert snapshots["TimeToLiveDescription"]["TimeToLiveStatus"] == "DISABLED"
        for name in (table_names.scores, table_names.snapshots):
            await client.delete_table(TableName=name)


async def test_boards_are_defined_listed_and_shown_from_the_command_line(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    empty = await _command(dynamo_endpoint, table_names, "boards", "list", "kart")
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.split() == [
        "VARIANT",
        "ORDER",
        "OPERATOR",
        "PERIODS",
        "RETENTION",
        "DAYS",
        "SHARDS",
        "SCORES",
        "DEFINED",
    ]
    assert "follow the default (desc, best, alltime,day,week, 30 days)" in empty.stderr
    defined = await _command(
        dynamo_endpoint,
        table_names,
        *("boards", "define", "kart", "time-trial", "--order", "asc"),
        *("--periods", "alltime,month", "--retention-days", "90", "--shards", "16"),
        *("--score-min", "0", "--score-max", "600000"),
    )
    assert defined.returncode == 0, defined.stderr
    shown = json.loads(defined.stdout)
    assert (
        shown["order"],
        shown["operator"],
        shown["periods"],
        shown["retentionDays"],
        shown["shards"],
        shown["scoreMin"],
        shown["scoreMax"],
    ) == ("asc", "best", ["alltime", "month"], 90, 16, 0, 600000)
    again = await _command(dynamo_endpoint, table_names, "boards", "show", "kart", "time-trial")
    assert json.loads(again.stdout) == shown
    stored = await runtime.stores.definitions.get_definition("kart", "time-trial")
    assert stored is not None
    assert stored.definition.periods[1].value == "month"
    assert stored.definition.shards == 16
    assert (stored.definition.score_min, stored.definition.score_max) == (0, 600000)
    listed = (
        await _command(dynamo_endpoint, table_names, "boards", "list", "kart")
    ).stdout.splitlines()
    assert listed[1].split()[:7] == [
        *("time-trial", "asc", "best", "alltime,month", "90", "16", "0..600000")
    ]
    bad = await _command(
        dynamo_endpoint, table_names, "boards", "define", "kart", "x", "--periods", "day,year"
    )
    assert bad.returncode == 2
    assert "periods" in bad.stderr
    uneven = await _command(
        dynamo_endpoint, table_names, "boards", "define", "kart", "x", "--shards", "3"
    )
    assert uneven.returncode == 2
    assert "--shards" in uneven.stderr
    crossed = await _command(
        dynamo_endpoint,
        table_names,
        *("boards", "define", "kart", "x", "--score-min", "10", "--score-max", "9"),
    )
    assert crossed.returncode == 2
    assert "scoreMax: must be at least scoreMin (10), got 9" in crossed.stderr
    assert (await runtime.stores.definitions.get_definition("kart", "x")) is None


async def test_a_variant_s_time_zone_and_seasons_are_defined_from_the_command_line(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    defined = await _command(
        dynamo_endpoint,
        table_names,
        *("boards", "define", "kart", "league", "--time-zone", "America/New_York"),
        *("--season", "s1,2030-01-01T00:00Z,2030-04-01T00:00Z"),
        *("--season", "s2, 2030-04-01T00:00:00-04:00, 2030-07-01T00:00Z"),
    )
    assert defined.returncode == 0, defined.stderr
    shown = json.loads(defined.stdout)
    assert shown["timeZone"] == "America/New_York"
    assert shown["periods"] == ["alltime", "day", "week", "season"]
    assert shown["seasons"] == [
        {"id": "s1", "startsAt": "2030-01-01T00:00:00.000Z", "endsAt": "2030-04-01T00:00:00.000Z"},
        {"id": "s2", "startsAt": "2030-04-01T04:00:00.000Z", "endsAt": "2030-07-01T00:00:00.000Z"},
    ]
    stored = await runtime.stores.definitions.get_definition("kart", "league")
    assert stored is not None
    assert stored.definition.time_zone == "America/New_York"
    for flags, words in (
        (("--time-zone", "Mars/Olympus"), "unknown time zone"),
        (("--season", "s1,2030-01-01T00:00Z"), "is not ID,START,END"),
        (("--season", "s1,2030-02-01T00:00Z,2030-01-01T00:00Z"), "must end after it starts"),
    ):
        refused = await _command(
            dynamo_endpoint, table_names, "boards", "define", "kart", "other", *flags
        )
        assert refused.returncode == 2, refused.stderr
        assert words in refused.stderr
    assert (await runtime.stores.definitions.get_definition("kart", "other")) is None


def test_the_command_loads_no_web_framework() -> None:
    # Every command starts in a process of its own: FastAPI's import is a third of a second of
    # each, for nothing but `serve` (which imports the app when it runs).
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, app.cli; print(sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert "'fastapi'" not in loaded
    assert "'starlette'" not in loaded
    assert "'app.cli'" in loaded


def test_help_says_what_every_option_does_and_its_defaults(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps to it, in a terminal or not

    def help_of(*command: str) -> str:
        # In-process (a subprocess each took 2 s of imports); the entry point itself is run once,
        # for the top-level help, below.
        with pytest.raises(SystemExit) as shown:
            main([*command, "--help"])
        assert shown.value.code == 0
        return capsys.readouterr().out

    assert "(default: 127.0.0.1)" in help_of("serve")
    assert "(default: 8000)" in help_of("serve")
    kind = help_of("keys", "create")
    assert "lb_test_" in kind
    assert "(default: live)" in kind
    for command in (
        ("serve",),
        ("create-tables",),
        ("keys", "create"),
        ("keys", "list"),
        ("keys", "revoke"),
        ("boards", "define"),
        ("boards", "list"),
        ("boards", "show"),
        ("seed",),
        ("reconcile",),
        ("snapshot",),
        ("erase",),
    ):
        text = help_of(*command)
        assert "``" not in text, command  # no docstring markup
        assert "as they land" not in text, command
    top = subprocess.run(
        [sys.executable, "-m", "app.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=os.environ | {"COLUMNS": "100"},
    ).stdout
    assert top == help_of()
    assert "GAME#VARIANT#PERIOD" in help_of("seed")

    def undocumented(parser: argparse.ArgumentParser, path: str) -> list[str]:
        missing = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, inner in action.choices.items():
                    missing += undocumented(inner, f"{path} {name}")
            elif not action.help:
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
        return missing

    assert undocumented(build_parser(), "leaderboard") == []
    assert "leaderboard serve" in top  # where the operator commands find the embedded backend


async def test_output_is_the_command_s_own_with_progress_and_logs_on_stderr(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime, tmp_path: Path
) -> None:
    now = datetime.now(UTC) - timedelta(seconds=30)
    today = now.date().isoformat()
    if now.date() != datetime.now(UTC).date():
        today = datetime.now(UTC).date().isoformat()  # just past midnight: all of today is ahead
        now = datetime.now(UTC)
    seed_file = tmp_path / "today.csv"
    seed_file.write_text(f"playerId,score,achievedAt\nann,30,{now.isoformat()}\n")
    # The board in the CLI's and the API's forms alike, the current day among them.
    seeded = _run(
        dynamo_endpoint,
        table_names,
        "seed",
        "trivia#classic#day",
        str(seed_file),
        "--grace-seconds",
        "1",
    )
    assert seeded.returncode == 0, seeded.stderr
    report = json.loads(seeded.stdout)  # stdout is the report alone
    assert report["boardId"] == f"trivia#classic#day#{today}"
    # Progress from start to end, one line a stage off a terminal; no info log lines.
    for stage in (
        "waiting 1 s for submissions already under way",
        "writing 1 row",
        "recounting the board",
        "reading the counters",
        "writing 2 counter items",
        "done in",
    ):
        assert stage in seeded.stderr, seeded.stderr
    assert '"level": "info"' not in seeded.stderr
    for board in (f"trivia/classic/day:{today}", f"trivia#classic#day:{today}"):
        checked = _run(dynamo_endpoint, table_names, "reconcile", board, "-v")
        assert checked.returncode == 0, checked.stderr
        assert checked.stdout.startswith(f"trivia#classic#day#{today}: 1 players counted")
        assert '"event": "reconciled"' in checked.stderr  # -v: the info lines too
    taken = _run(dynamo_endpoint, table_names, "snapshot", f"trivia#classic#day#{today}")
    assert [e["playerId"] for e in json.loads(taken.stdout)["entries"]] == ["ann"]


async def test_a_board_at_the_calendar_s_edge_is_refused_with_the_reason(
    dynamo_endpoint: str, table_names: TableNames
) -> None:
    for board in ("trivia#classic#day#9999-12-31", "trivia#classic#week#9999-W52"):
        refused = await _command(dynamo_endpoint, table_names, "snapshot", board)
        assert refused.returncode == 2, refused.stderr
        assert "outside the years 1970 to 9899" in refused.stderr
        assert "Traceback" not in refused.stderr
    unknown = await _command(dynamo_endpoint, table_names, "reconcile", "trivia-classic-alltime")
    assert unknown.returncode == 2
    assert "GAME#VARIANT#PERIOD" in unknown.stderr
