"""The ``leaderboard`` command: serve the API, and the operator's tools (create-tables, keys, seed,
reconcile, snapshot, erase), each through the composition root like the service itself."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import Callable, Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from app.api.schemas import ErasureOut, SeedReportOut, SnapshotOut
from app.bootstrap import NoBackend, Runtime, embedded_state_file, open_operator_runtime
from app.domain.periods import Board
from app.domain.seed_file import FORMAT_BY_SUFFIX, SeedFile, SeedFormat, parse_seed_text
from app.errors import InvalidInput, LeaderboardError
from app.logging import configure_logging
from app.services.erasure import erase_player
from app.services.keys import create_api_key, list_api_keys, revoke_api_key
from app.services.reconcile import reconcile_board
from app.services.seeding import SeedPorts, seed_board
from app.services.snapshots import SnapshotPorts, snapshot_closed_periods, take_snapshot
from app.settings import ConfigurationError, Settings, get_settings


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from app.main import create_app
    from app.server import AnnouncingServer, server_config

    app = create_app(settings, demo=args.demo)

    def announce(urls: list[str]) -> None:
        print(
            f"leaderboard: listening on {', '.join(urls)} (OpenAPI at {urls[0]}/docs)", flush=True
        )
        runtime = getattr(app.state, "runtime", None)
        if settings.uses_embedded_backend and runtime is not None:
            print(
                f"leaderboard: embedded DynamoDB at {runtime.endpoint}, in memory until this "
                "stops; `leaderboard` operator commands on this machine use it "
                f"(recorded in {embedded_state_file(settings)})",
                flush=True,
            )

    config = server_config(
        app,
        host=args.host,
        port=args.port,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        shutdown_grace_s=settings.shutdown_grace_seconds,
        keep_alive_s=settings.keep_alive_seconds,
    )
    server = AnnouncingServer(config, announce=announce)
    # Ctrl-C ends the server gracefully, then uvicorn raises the signal again, as uvicorn.run.
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return 0 if server.started else 3  # uvicorn's own code for a failed start-up


async def _create_tables(runtime: Runtime, args: argparse.Namespace) -> int:
    report = await runtime.table_admin.create_tables(deletion_protection=args.deletion_protection)
    print("created: " + (", ".join(report.created) if report.created else "nothing"))
    if report.protected:
        print("deletion protection turned on: " + ", ".join(report.protected))
    if report.unchanged:
        print("already there: " + ", ".join(report.unchanged))
    return 0


def _snapshot_ports(runtime: Runtime) -> SnapshotPorts:
    s = runtime.stores
    return SnapshotPorts(s.index, s.counters, s.standings, s.snapshots, s.registry)


def _seed_ports(runtime: Runtime) -> SeedPorts:
    s = runtime.stores
    return SeedPorts(s.standings, s.index, s.counters, s.leases, s.registry)


def parse_seed_file(
    path: Path, *, board: Board, now: datetime, file_format: SeedFormat | None = None
) -> SeedFile:
    """Read and check a seed file; the format is ``file_format``, else the suffix (``.csv``,
    ``.jsonl``, ``.ndjson``), else the content."""
    if file_format is None:
        file_format = FORMAT_BY_SUFFIX.get(path.suffix.lower())
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_seed_text(text, board=board, now=now, file_format=file_format)


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


async def _seed(runtime: Runtime, args: argparse.Namespace) -> int:
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
    report = await seed_board(
        ports=_seed_ports(runtime),
        board=board,
        seed=seed,
        policy=replace(runtime.policies.seed, **overrides),
        progress=_progress_bar(),
    )
    print(SeedReportOut.of(report).model_dump_json(by_alias=True, indent=2))
    if report.counter_conflicts:
        print("some counters changed under the lease: run `leaderboard reconcile`", file=sys.stderr)
    return 0


async def _reconcile(runtime: Runtime, args: argparse.Namespace) -> int:
    report = await reconcile_board(
        index=runtime.stores.index,
        counters=runtime.stores.counters,
        leases=runtime.stores.leases,
        board=_board(args.board),
        layout=runtime.policies.layout,
        retention=runtime.policies.retention,
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


async def _snapshot(runtime: Runtime, args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    if args.closed_periods:
        report = await snapshot_closed_periods(
            ports=_snapshot_ports(runtime),
            now=now,
            retention=runtime.policies.retention,
            settle=runtime.policies.settle,
            top_n=args.top,
        )
        document = {
            "taken": [
                {"leaderboardId": s.board_id, "snapshotTakenAt": s.taken_at} for s in report.taken
            ],
            "alreadyTaken": report.already_taken,
            "expired": report.expired,
            "failed": report.failed,
        }
        print(json.dumps(document, indent=2))
        return 1 if report.failed else 0
    if args.board is None:
        raise InvalidInput("name a BOARD, or use --closed-periods")
    snapshot = await take_snapshot(
        ports=_snapshot_ports(runtime),
        board=_board(args.board),
        now=now,
        retention=runtime.policies.retention,
        top_n=args.top,
    )
    print(SnapshotOut.of(snapshot).model_dump_json(by_alias=True, indent=2))
    return 0


async def _erase(runtime: Runtime, args: argparse.Namespace) -> int:
    report = await erase_player(
        standings=runtime.stores.standings,
        requests=runtime.stores.requests,
        snapshots=runtime.stores.snapshots,
        player_id=args.player,
        layout=runtime.policies.layout,
        now=datetime.now(UTC),
    )
    print(ErasureOut.of(report).model_dump_json(by_alias=True, indent=2))
    if not report.complete:
        print(
            "snapshots still being written hold this player: run erase again in a few minutes",
            file=sys.stderr,
        )
        return 1
    return 0


async def _keys(runtime: Runtime, args: argparse.Namespace) -> int:
    keys = runtime.stores.keys
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


_COMMANDS: dict[str, Callable[[Runtime, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "create-tables": _create_tables,
    "keys": _keys,
    "seed": _seed,
    "reconcile": _reconcile,
    "snapshot": _snapshot,
    "erase": _erase,
}


async def _run(
    command: Callable[[Runtime, argparse.Namespace], Coroutine[Any, Any, int]],
    settings: Settings,
    args: argparse.Namespace,
) -> int:
    async with open_operator_runtime(settings) as runtime:
        return await command(runtime, args)


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
    except ConfigurationError as exc:
        print(f"leaderboard: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return _serve(args, settings)
    try:
        return asyncio.run(_run(_COMMANDS[args.command], settings, args))
    except NoBackend as exc:
        print(f"leaderboard: {exc}", file=sys.stderr)
        return 2
    except LeaderboardError as exc:
        print(f"leaderboard: {exc.detail}", file=sys.stderr)
        for error in exc.errors:
            print("  " + ", ".join(f"{k}: {v}" for k, v in error.items()), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
