"""The ``leaderboard`` command: serve, create-tables, keys, seed, reconcile (and the other operator
tools as they land)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvicorn

from app.api.admin import report_document
from app.domain.buckets import BucketLayout
from app.domain.periods import Board
from app.errors import InvalidInput, LeaderboardError
from app.logging import configure_logging
from app.services.erasure import erase_player
from app.services.keys import create_api_key, list_api_keys, revoke_api_key
from app.services.reconcile import reconcile_board
from app.services.seeding import SeedPolicy, parse_seed_file, seed_board
from app.services.snapshots import snapshot_closed_periods, take_snapshot
from app.settings import Settings, get_settings
from app.store.archive import ArchiveStore
from app.store.dynamo import DynamoStore, open_client
from app.store.keys import DynamoKeyStore
from app.store.operations import BoardOperations
from app.store.tables import TableNames


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from app.main import create_app

    uvicorn.run(
        create_app(settings, demo=args.demo),
        host=args.host,
        port=args.port,
        access_log=False,
        log_config=None,
        lifespan="on",
        # The client address (read limits) comes from X-Forwarded-For only behind these proxies.
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
    )
    return 0


@asynccontextmanager
async def _store(settings: Settings) -> AsyncIterator[DynamoStore]:
    if settings.dynamodb_endpoint is None and settings.environment != "production":
        raise SystemExit(
            "set LEADERBOARD_DYNAMODB_ENDPOINT: the embedded backend lives only as long as "
            "`leaderboard serve`"
        )
    async with open_client(
        endpoint=settings.dynamodb_endpoint,
        region=settings.region,
        dummy_credentials=settings.dynamodb_endpoint is not None
        and "AWS_ACCESS_KEY_ID" not in os.environ,
    ) as client:
        yield DynamoStore(client, TableNames(settings.scores_table, settings.snapshots_table))


async def _create_tables(settings: Settings, args: argparse.Namespace) -> int:
    async with _store(settings) as store:
        created = await store.create_tables(deletion_protection=args.deletion_protection)
    print("created: " + (", ".join(created) if created else "nothing (all tables exist)"))
    return 0


def _board(text: str) -> Board:
    try:
        return Board.from_id(text)
    except ValueError:
        raise InvalidInput(
            f"{text!r} is not a board id: use game#variant#alltime, game#variant#day#YYYY-MM-DD "
            "or game#variant#week#YYYY-Www"
        ) from None


def _progress_bar() -> Callable[[int, int], None] | None:
    """A one-line progress bar on a terminal; nothing when output goes elsewhere."""
    if not sys.stderr.isatty():
        return None

    def draw(done: int, total: int) -> None:
        width = 40
        filled = width * done // max(total, 1)
        end = "\n" if done >= total else ""
        print(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end, file=sys.stderr
        )

    return draw


async def _seed(settings: Settings, args: argparse.Namespace) -> int:
    board = _board(args.board)
    seed = parse_seed_file(
        Path(args.file), board=board, now=datetime.now(UTC), file_format=args.format
    )
    overrides = {
        name: value
        for name, value in (
            ("grace_s", args.grace_seconds),
            ("lease_ttl_s", args.lease_ttl),
            ("concurrency", args.concurrency),
        )
        if value is not None
    }
    async with _store(settings) as store:
        operations = BoardOperations(
            store.client, store.tables, counter_shards=settings.counter_shards
        )
        report = await seed_board(
            store=operations,
            board=board,
            seed=seed,
            policy=SeedPolicy.from_settings(settings, **overrides),
            progress=_progress_bar(),
        )
    print(json.dumps(report_document(report), indent=2))
    if report.counter_conflicts:
        print("some counters changed under the lease: run `leaderboard reconcile`", file=sys.stderr)
    return 0


async def _reconcile(settings: Settings, args: argparse.Namespace) -> int:
    board = _board(args.board)
    async with _store(settings) as store:
        operations = BoardOperations(
            store.client, store.tables, counter_shards=settings.counter_shards
        )
        report = await reconcile_board(
            store=operations,
            board=board,
            layout=BucketLayout(),
            retention=settings.retention,
            apply=args.apply,
        )
    mode = "applied" if report.applied else "dry run (use --apply to repair)"
    print(f"{report.board_id}: {report.player_count} players counted; {mode}")
    for diff in report.differences:
        where = f"bucket {diff.cell.bucket}" + (
            "" if diff.cell.slot is None else f" slot {diff.cell.slot}"
        )
        print(f"  {where}: stored {diff.stored}, counted {diff.counted}")
    for cell in report.unsettled:
        print(
            f"  bucket {cell.bucket} slot {cell.slot}: the board changed between passes; not compared"
        )
    print(
        f"{len(report.differences)} differences, {len(report.repaired)} repaired, "
        f"{len(report.skipped)} skipped (changed meanwhile)"
    )
    return 0


async def _snapshot(settings: Settings, args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    async with _store(settings) as store:
        archive = ArchiveStore(store.client, store.tables, counter_shards=settings.counter_shards)
        if args.closed_periods:
            report = await snapshot_closed_periods(
                store=store,
                archive=archive,
                now=now,
                retention=settings.retention,
                settle=timedelta(seconds=settings.max_lateness_seconds),
                top_n=args.top,
            )
            print(json.dumps(report.document(), indent=2))
            return 1 if report.failed else 0
        if args.board is None:
            raise InvalidInput("name a BOARD, or use --closed-periods")
        snapshot = await take_snapshot(
            store=store,
            archive=archive,
            board=_board(args.board),
            now=now,
            retention=settings.retention,
            top_n=args.top,
        )
    print(json.dumps(snapshot.document(), indent=2))
    return 0


async def _erase(settings: Settings, args: argparse.Namespace) -> int:
    async with _store(settings) as store:
        archive = ArchiveStore(store.client, store.tables, counter_shards=settings.counter_shards)
        report = await erase_player(
            store=archive, player_id=args.player, layout=BucketLayout(), now=datetime.now(UTC)
        )
    print(json.dumps(report.document(), indent=2))
    if not report.complete:
        print(
            "snapshots still being written hold this player: run erase again in a few minutes",
            file=sys.stderr,
        )
        return 1
    return 0


async def _keys(settings: Settings, args: argparse.Namespace) -> int:
    async with _store(settings) as store:
        keys = DynamoKeyStore(store.client, store.tables)
        if args.keys_command == "create":
            token = await create_api_key(keys, args.name, args.scope, kind=args.kind)
            print(token)  # shown this once; only its hash is kept
            print(
                f"key for {args.name} with scopes {', '.join(args.scope)}: store it now, "
                "it cannot be shown again",
                file=sys.stderr,
            )
        elif args.keys_command == "list":
            for info in await list_api_keys(keys):
                state = f"revoked {info.revoked_at}" if info.revoked_at else "active"
                print(
                    f"{info.key_id}  {info.name}  {','.join(info.scopes)}  {info.created_at}  {state}"
                )
        else:
            revoked = await revoke_api_key(keys, args.name, key_id=args.id)
            for info in revoked:
                print(f"revoked {info.key_id} ({info.name})")
    return 0


_COMMANDS: dict[str, Callable[[Settings, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "create-tables": _create_tables,
    "keys": _keys,
    "seed": _seed,
    "reconcile": _reconcile,
    "snapshot": _snapshot,
    "erase": _erase,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="leaderboard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--demo", action="store_true", help="fill a few boards with demo players (embedded only)"
    )
    create = commands.add_parser("create-tables", help="create the tables where missing")
    create.add_argument(
        "--deletion-protection", action="store_true", help="turn on deletion protection"
    )
    keys = commands.add_parser("keys", help="create, list and revoke API keys")
    keys_commands = keys.add_subparsers(dest="keys_command", required=True)
    key_create = keys_commands.add_parser("create", help="make a key; prints it once")
    key_create.add_argument("--name", required=True, help="the client: scopes idempotency keys")
    key_create.add_argument(
        "--scope", action="append", required=True, help="submit:<game>, submit:*, admin"
    )
    key_create.add_argument("--kind", choices=["live", "test"], default="live")
    keys_commands.add_parser("list", help="every stored key (never the key itself)")
    key_revoke = keys_commands.add_parser("revoke", help="revoke a client's keys, or one key")
    key_revoke.add_argument("name", nargs="?", help="revoke every key of this client")
    key_revoke.add_argument("--id", help="revoke the one key with this id (from `keys list`)")
    seed = commands.add_parser("seed", help="bulk-load a board from CSV or JSON lines")
    seed.add_argument("board", help="board id, e.g. trivia#alltopics#alltime")
    seed.add_argument("file", help="CSV (with a header) or JSON lines")
    seed.add_argument("--format", choices=["csv", "jsonl"], help="default: from the file")
    seed.add_argument("--grace-seconds", type=float, help="wait after taking the lease")
    seed.add_argument("--lease-ttl", type=float, help="seconds a dead seeder's lease lasts")
    seed.add_argument("--concurrency", type=int, help="row writes in flight")
    reconcile = commands.add_parser("reconcile", help="compare a board's counters with a recount")
    reconcile.add_argument("board", help="board id, e.g. trivia#alltopics#alltime")
    reconcile.add_argument("--apply", action="store_true", help="repair (default: dry run)")
    snapshot = commands.add_parser("snapshot", help="snapshot a board, or every closed period")
    snapshot.add_argument("board", nargs="?", help="board id, e.g. trivia#alltopics#day#2026-11-30")
    snapshot.add_argument(
        "--closed-periods",
        action="store_true",
        help="snapshot every day/week board whose period has closed and has none (idempotent)",
    )
    snapshot.add_argument("--top", type=int, default=100, help="entries kept (1..1000)")
    erase = commands.add_parser("erase", help="erase a player everywhere (GDPR)")
    erase.add_argument("player")
    args = parser.parse_args(argv)
    configure_logging()
    try:
        settings = get_settings()
    except ValueError as exc:
        print(f"leaderboard: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return _serve(args, settings)
    try:
        return asyncio.run(_COMMANDS[args.command](settings, args))
    except LeaderboardError as exc:
        print(f"leaderboard: {exc.detail}", file=sys.stderr)
        for error in exc.errors:
            print("  " + ", ".join(f"{k}: {v}" for k, v in error.items()), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
