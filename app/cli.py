"""The ``leaderboard`` command: serve the API, and the operator's tools (create-tables, keys, seed,
reconcile, snapshot, erase), each through the composition root like the service itself.

stdout holds each command's output and nothing else; logs go to stderr (operator commands log
warnings only, unless ``-v``), and long work shows its progress there from start to end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from app import telemetry
from app.api.invalid import invalid_input, validation_errors
from app.api.schemas import (
    RESERVED_GAMES,
    BoardDefinitionIn,
    BoardDefinitionOut,
    ErasureOut,
    SeedReportOut,
    SnapshotOut,
)
from app.bootstrap import NoBackend, Runtime, embedded_state_file, open_operator_runtime
from app.domain.clock import to_ms
from app.domain.definitions import BoardDefinition, Operator
from app.domain.keys import Order, is_valid_id
from app.domain.periods import Board
from app.domain.seed_file import FORMAT_BY_SUFFIX, SeedFile, SeedFormat, parse_seed_text
from app.errors import InvalidInput, LeaderboardError
from app.logging import configure_logging
from app.services.definitions import (
    DefinePorts,
    define_boards,
    list_definitions,
    show_definition,
)
from app.services.erasure import erase_player
from app.services.keys import create_api_key, list_api_keys, revoke_api_key
from app.services.live_reconcile import ReconcilePorts, reconcile_live_boards
from app.services.progress import Stage
from app.services.reconcile import reconcile_board
from app.services.rekey import rekey_board
from app.services.seeding import SeedPorts, seed_board
from app.services.snapshots import SnapshotPorts, snapshot_closed_periods, take_snapshot
from app.settings import ConfigurationError, Settings, get_settings


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from app.main import create_app
    from app.server import ServiceServer, server_config

    app = create_app(settings, demo=args.demo)

    def announce(urls: list[str]) -> None:
        print(
            f"leaderboard: listening on {', '.join(urls)} (the board viewer at {urls[0]}/, "
            f"OpenAPI at {urls[0]}/docs)",
            flush=True,
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
    server = ServiceServer(config, announce=announce)
    # Ctrl-C ends the server gracefully, then uvicorn raises the signal again, as uvicorn.run.
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return 0 if server.started else 3  # uvicorn's own code for a failed start-up


async def _create_tables(runtime: Runtime, args: argparse.Namespace) -> int:
    report = await runtime.table_admin.create_tables(deletion_protection=args.deletion_protection)
    print("created: " + (", ".join(report.created) if report.created else "nothing"))
    if report.ttl_enabled:
        print("TTL turned on: " + ", ".join(report.ttl_enabled))
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
    path: Path,
    *,
    board: Board,
    now: datetime,
    definition: BoardDefinition,
    file_format: SeedFormat | None = None,
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
    return parse_seed_text(
        text, board=board, now=now, file_format=file_format, definition=definition
    )


def _board(text: str) -> Board:
    try:
        return Board.parse(text, now=datetime.now(UTC))
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


def _stage_line(stage: Stage, total: int | None) -> str:
    if stage == "waiting":
        return f"waiting {total} s for submissions already under way"
    if stage == "writing rows":
        return f"writing {total} row{'' if total == 1 else 's'}"
    if stage == "recounting":
        return "recounting the board" + (f" (about {total} entries)" if total else "")
    if stage == "reading counters":
        return "reading the counters"
    return f"writing {total} counter item{'' if total == 1 else 's'}"


class ProgressReport:
    """Long work's progress on ``stream`` (stderr): a live line per stage on a terminal, else one
    line as each stage begins; and, at the end, how long it all took."""

    def __init__(self, stream: TextIO, *, live: bool | None = None) -> None:
        self._stream = stream
        self._live = stream.isatty() if live is None else live
        self._stage: Stage | None = None
        self._began = time.monotonic()
        self._drawn = 0.0

    def __call__(self, stage: Stage, done: int, total: int | None) -> None:
        line = _stage_line(stage, total)
        begins = stage != self._stage
        if begins:
            if self._live and self._stage is not None:
                print(file=self._stream)
            self._stage = stage
            if not self._live:
                print(f"{line} ...", file=self._stream, flush=True)
        if not self._live:
            return
        now = time.monotonic()
        if not begins and now - self._drawn < 0.1 and done != total:
            return  # a redraw at most ten times a second
        self._drawn = now
        if total:
            width = 30
            filled = width * min(done, total) // total
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
        else:
            bar = f"{done}"
        print(f"\r{line}: {bar}", end="", file=self._stream, flush=True)

    def finish(self) -> None:
        if self._live and self._stage is not None:
            print(file=self._stream)
        took = time.monotonic() - self._began
        print(f"done in {took:.1f} s", file=self._stream, flush=True)


async def _seed(runtime: Runtime, args: argparse.Namespace) -> int:
    board = _board(args.board)
    seed = parse_seed_file(
        Path(args.file),
        board=board,
        now=datetime.now(UTC),
        definition=await runtime.definitions.for_submitting(board.game, board.variant),
        file_format=args.format,
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
    progress = ProgressReport(sys.stderr)
    report = await seed_board(
        ports=_seed_ports(runtime),
        board=board,
        seed=seed,
        policy=replace(runtime.policies.seed, **overrides),
        progress=progress,
    )
    progress.finish()
    print(SeedReportOut.of(report).model_dump_json(by_alias=True, indent=2))
    if report.counter_conflicts or report.counters_unwritten:
        print(
            "some counters changed under the lease or could not be written: run "
            "`leaderboard reconcile --apply`",
            file=sys.stderr,
        )
    if report.rows_unwritten:
        print(
            f"{report.rows_unwritten} rows could not be written (throttled): seed again",
            file=sys.stderr,
        )
    return 0


async def _reconcile(runtime: Runtime, args: argparse.Namespace) -> int:
    if args.live:
        if args.board is not None:
            raise InvalidInput("name a BOARD or use --live, not both")
        return await _reconcile_live(runtime, apply=args.apply)
    if args.board is None:
        raise InvalidInput("name a BOARD, or use --live")
    board = _board(args.board)
    definition = await runtime.definitions.for_reading(board.game, board.variant)
    # First, rows of another order than the board's (a board of two orders): the recount's tie
    # counters are then built on the keys the board reads.
    strays = await rekey_board(
        index=runtime.stores.index,
        standings=runtime.stores.standings,
        counters=runtime.stores.counters,
        layout=runtime.policies.layout,
        board_id=board.board_id,
        order=definition.order,
        apply=args.apply,
    )
    if strays.found:
        print(
            f"{strays.board_id}: {strays.found} rows not in the board's order ({strays.order.value})"
            + (
                f"; {strays.rekeyed} given it, {strays.skipped} moved meanwhile"
                if args.apply
                else " (use --apply to give them it)"
            )
        )
    progress = ProgressReport(sys.stderr)
    report = await reconcile_board(
        index=runtime.stores.index,
        counters=runtime.stores.counters,
        leases=runtime.stores.leases,
        board=board,
        layout=runtime.policies.layout,
        retention=definition.retention,
        apply=args.apply,
        tie_group=runtime.policies.tie_group,
        standings=runtime.stores.standings,
        progress=progress,
    )
    progress.finish()
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
        + (
            f", {len(report.unwritten)} unwritten (DynamoDB kept refusing: run again)"
            if report.unwritten
            else ""
        )
    )
    for tie in report.ties:
        state = "to build" if tie.built and not report.applied else "built" if tie.built else "kept"
        print(
            f"  tie counters of bucket {tie.bucket} slot {tie.slot} ({tie.entries} players, grain "
            f"{tie.grain}, {state}): {tie.differences} differences, {tie.unmarked} rows unmarked"
            + (f", {tie.cuts} chunks to cut" if tie.cuts else "")
            + ("" if tie.was_sealed else ", unsealed")
            + (
                f"; {tie.repaired} repaired, {tie.marked} marked, {tie.skipped} skipped"
                + (f", {tie.taken_back} taken back" if tie.taken_back else "")
                + (f", {tie.unwritten} unwritten" if tie.unwritten else "")
                + ("; sealed" if tie.sealed else "; left unsealed: the next run builds it")
                if report.applied and tie.needs_build
                else ""
            )
        )
    return 0


async def _reconcile_live(runtime: Runtime, *, apply: bool) -> int:
    """Every live board; one JSON line on stdout, which CloudWatch reads as metrics (the embedded
    metric format) where the stack runs it on its schedule. Non-zero where a board failed."""
    s = runtime.stores
    now = datetime.now(UTC)
    report = await reconcile_live_boards(
        ports=ReconcilePorts(s.index, s.counters, s.leases, s.standings, s.registry),
        definitions=runtime.definitions,
        layout=runtime.policies.layout,
        tie_group=runtime.policies.tie_group,
        now=now,
        settle=runtime.policies.settle,
        apply=apply,
    )
    document = {
        "applied": apply,
        "drifted": [
            {
                "leaderboardId": r.board_id,
                "differences": r.drift,
                "repaired": len(r.repaired),
                "left": r.left,
            }
            for r in report.drifted
        ],
        "held": report.held,
        "failed": report.failed,
        **telemetry.reconcile_emf(
            boards=len(report.boards),
            drifted=len(report.drifted),
            differences=report.differences,
            left=report.left,
            failed=len(report.failed),
            timestamp_ms=to_ms(now),
        ),
    }
    print(json.dumps(document, separators=(",", ":")))
    return 1 if report.failed else 0


async def _snapshot(runtime: Runtime, args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    if args.closed_periods:
        report = await snapshot_closed_periods(
            ports=_snapshot_ports(runtime),
            now=now,
            definitions=runtime.definitions,
            settle=runtime.policies.settle,
            top_n=args.top,
        )
        document = {
            "taken": [
                {"leaderboardId": s.board_id, "snapshotTakenAt": s.taken_at} for s in report.taken
            ],
            "shortened": [
                {
                    "leaderboardId": s.board_id,
                    "snapshotTakenAt": s.taken_at,
                    "topN": s.top_n,
                    "kept": s.kept,
                    "itemBytes": s.item_bytes,
                    "itemLimitBytes": s.limit_bytes,
                }
                for s in report.shortened
            ],
            "alreadyTaken": report.already_taken,
            "expired": report.expired,
            "failed": report.failed,
        }
        print(json.dumps(document, indent=2))
        return 1 if report.failed else 0
    if args.board is None:
        raise InvalidInput("name a BOARD, or use --closed-periods")
    board = _board(args.board)
    definition = await runtime.definitions.for_reading(board.game, board.variant)
    snapshot = await take_snapshot(
        ports=_snapshot_ports(runtime),
        board=board,
        now=now,
        retention=definition.retention,
        top_n=args.top,
    )
    print(SnapshotOut.of(snapshot).model_dump_json(by_alias=True, indent=2))
    return 0


async def _erase(runtime: Runtime, args: argparse.Namespace) -> int:
    report = await erase_player(
        standings=runtime.stores.standings,
        requests=runtime.stores.requests,
        snapshots=runtime.stores.snapshots,
        marks=runtime.stores.erasures,
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
        listed = await list_api_keys(keys)
        rows = [
            [
                info.key_id,
                info.name,
                ",".join(info.scopes),
                info.created_at,
                f"revoked {info.revoked_at}" if info.revoked_at else "active",
            ]
            for info in listed
        ]
        print(_table(["KEY ID", "NAME", "SCOPES", "CREATED", "STATE"], rows))
        if not listed:
            print(
                "no stored keys (keys configured in LEADERBOARD_API_KEYS are not stored here)",
                file=sys.stderr,
            )
    else:
        revoked = await revoke_api_key(keys, args.name, key_id=args.id)
        for info in revoked:
            print(f"revoked {info.key_id} ({info.name})")
    return 0


async def _boards(runtime: Runtime, args: argparse.Namespace) -> int:
    definitions = runtime.definitions
    if args.boards_command == "list":
        game = _name(args.game, "game")
        listed = await list_definitions(store=runtime.stores.definitions, game=game)
        rows = [
            [
                d.variant,
                d.definition.order.value,
                d.definition.operator.value,
                ",".join(p.value for p in d.definition.periods),
                str(d.definition.retention_days),
                d.defined_at,
            ]
            for d in listed
        ]
        print(
            _table(["VARIANT", "ORDER", "OPERATOR", "PERIODS", "RETENTION DAYS", "DEFINED"], rows)
        )
        default = definitions.default
        print(
            f"undefined variants of {game}: "
            + (
                f"follow the default ({default.order.value}, {default.operator.value}, "
                f"{','.join(p.value for p in default.periods)}, {default.retention_days} days)"
                if definitions.allows_undefined
                else "refused (LEADERBOARD_UNDEFINED_BOARDS=refuse)"
            ),
            file=sys.stderr,
        )
        return 0
    game, variant = _name(args.game, "game"), _name(args.variant, "variant")
    if args.boards_command == "show":
        shown = await show_definition(definitions=definitions, game=game, variant=variant)
        out = BoardDefinitionOut.of(game, variant, shown.definition, defined_at=shown.defined_at)
    else:
        fields: dict[str, Any] = {"order": args.order, "operator": args.operator}
        if args.periods is not None:
            fields["periods"] = [p.strip() for p in args.periods.split(",")]
        if args.retention_days is not None:
            fields["retentionDays"] = args.retention_days
        try:
            wanted = BoardDefinitionIn.model_validate(fields)
        except ValidationError as exc:
            raise invalid_input(validation_errors(exc.errors()), whole="definition") from None
        stored = await define_boards(
            definitions=definitions,
            ports=DefinePorts.of(runtime.stores),
            policy=runtime.policies.redefine,
            game=game,
            variant=variant,
            definition=wanted.definition(retention_days=definitions.default.retention_days),
            now=datetime.now(UTC),
        )
        out = BoardDefinitionOut.of(game, variant, stored.definition, defined_at=stored.defined_at)
    print(out.model_dump_json(by_alias=True, indent=2))
    return 0


def _name(text: str, what: str) -> str:
    if not is_valid_id(text) or (what == "game" and text in RESERVED_GAMES):
        raise InvalidInput(
            f"{text!r} is not a {what} name: 1 to 64 letters, digits, '_', '.', ':' or '-'"
            + (" (and not a reserved name)" if what == "game" else "")
        )
    return text


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Columns aligned under a header, two spaces apart."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )


_COMMANDS: dict[str, Callable[[Runtime, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "create-tables": _create_tables,
    "boards": _boards,
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


BOARD_HELP = (
    "a board: GAME#VARIANT#PERIOD, PERIOD being alltime, day, week or month (the current ones), "
    "day#YYYY-MM-DD, week#YYYY-Www or month#YYYY-MM; the API's forms work too "
    "(trivia#alltopics#day:2026-11-30, trivia/alltopics/day:2026-11-30)"
)
EPILOG = """\
With no LEADERBOARD_DYNAMODB_ENDPOINT (and not in production), the operator commands work on the
embedded backend of a `leaderboard serve` running on this machine, which records where it is while
it runs. stdout holds a command's output; logs go to stderr (warnings only, unless -v).
Configuration: the LEADERBOARD_ variables in the README."""


class _DefaultsShown(argparse.HelpFormatter):
    """Help that says an option's default, where it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if (
            text
            and action.default not in (None, False, argparse.SUPPRESS)
            and action.option_strings
        ):
            text += " (default: %(default)s)"
        return text


def _add_boards_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    formatter: type[argparse.HelpFormatter],
) -> None:
    """``leaderboard boards define|list|show``."""
    boards = commands.add_parser(  # -v goes after define, list or show
        "boards",
        help="define how a variant's boards rank, list and show definitions",
        description="Board definitions: how each (game, variant)'s boards rank (order, "
        "operator), the periods a score fans out to, and how long period boards live. A change "
        "reaches every task of the service within LEADERBOARD_DEFINITION_CACHE_SECONDS.",
        formatter_class=formatter,
    )
    boards_commands = boards.add_subparsers(
        dest="boards_command", required=True, metavar="BOARDS_COMMAND"
    )

    def boards_command(name: str, summary: str) -> argparse.ArgumentParser:
        return boards_commands.add_parser(
            name, help=summary, description=summary, parents=[common], formatter_class=formatter
        )

    define = boards_command(
        "define",
        "define (or redefine) a variant's boards; an option left out takes its default, not the "
        "stored value. The order and operator of boards that hold entries cannot change",
    )
    define.add_argument("game", metavar="GAME", help="the game id, as submissions name it")
    define.add_argument("variant", metavar="VARIANT", help="the variant id")
    define.add_argument(
        "--order",
        choices=[o.value for o in Order],
        default=BoardDefinition().order.value,
        help="desc: higher is better; asc: lower is better",
    )
    define.add_argument(
        "--operator",
        choices=[o.value for o in Operator],
        default=BoardDefinition().operator.value,
        help="best: keep the best score; latest: the latest achievedAt replaces; sum: each "
        "accepted submission adds to the player's total",
    )
    define.add_argument(
        "--periods",
        help="the boards a score fans out to, comma-separated, of alltime, day, week, month "
        "(default: alltime,day,week)",
    )
    define.add_argument(
        "--retention-days",
        type=int,
        help="days period boards live after they close, 1..3650 (default: "
        "LEADERBOARD_RETENTION_DAYS)",
    )
    boards_list = boards_command("list", "every defined variant of a game")
    boards_list.add_argument("game", metavar="GAME", help="the game id")
    show = boards_command("show", "how a variant's boards rank (its definition or the default)")
    show.add_argument("game", metavar="GAME", help="the game id")
    show.add_argument("variant", metavar="VARIANT", help="the variant id")


def build_parser() -> argparse.ArgumentParser:
    formatter = _DefaultsShown
    parser = argparse.ArgumentParser(
        prog="leaderboard",
        description="Game leaderboards on DynamoDB: serve the HTTP API, and the operator's tools.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v", "--verbose", action="store_true", help="log info lines too (on stderr)"
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, description: str | None = None) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=description or summary,
            parents=[common],
            formatter_class=formatter,
        )

    serve = commands.add_parser(
        "serve",
        help="run the HTTP service",
        description="Run the HTTP service, printing where it listens. With no "
        "LEADERBOARD_DYNAMODB_ENDPOINT it starts an embedded, in-memory DynamoDB for as long as "
        "it runs. Logs every request as one line on stderr.",
        formatter_class=formatter,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free one)")
    serve.add_argument(
        "--demo",
        action="store_true",
        help="fill trivia/alltopics and trivia/sports with demo players (embedded backend only); "
        "/readyz says ready once they are in",
    )

    create = command(
        "create-tables",
        "create the tables where missing",
        "Create the Scores and Snapshots tables where they are missing, turn TTL on for the Scores "
        "table where it is off (also on one already there), and report what was there.",
    )
    create.add_argument(
        "--deletion-protection",
        action="store_true",
        help="create them with deletion protection, and turn it on for existing ones that lack it",
    )

    keys = commands.add_parser(  # -v goes after create, list or revoke
        "keys",
        help="create, list and revoke API keys",
        description="Create, list and revoke API keys, stored as SHA-256 digests in the Scores "
        "table.",
        formatter_class=formatter,
    )
    keys_commands = keys.add_subparsers(dest="keys_command", required=True, metavar="KEYS_COMMAND")

    def keys_command(name: str, summary: str) -> argparse.ArgumentParser:
        return keys_commands.add_parser(
            name, help=summary, description=summary, parents=[common], formatter_class=formatter
        )

    key_create = keys_command(
        "create", "make a key and print it once (only its SHA-256 digest is stored)"
    )
    key_create.add_argument(
        "--name",
        required=True,
        help="the client it is for: its identity for idempotency keys and rate limits",
    )
    key_create.add_argument(
        "--scope",
        action="append",
        required=True,
        help="submit:<game>, submit:* or admin; repeat for several",
    )
    key_create.add_argument(
        "--kind",
        choices=["live", "test"],
        default="live",
        help="the key's prefix, lb_live_ or lb_test_, telling people and secret scanners what it "
        "is for; both kinds work alike",
    )
    keys_command("list", "every stored key: id, name, scopes, created, state (never the key)")
    key_revoke = keys_command("revoke", "revoke every key of a client, or one key by its id")
    key_revoke.add_argument("name", nargs="?", help="revoke every key of this client")
    key_revoke.add_argument("--id", help="revoke the one key with this id (from `keys list`)")

    _add_boards_commands(commands, common, formatter)

    seed = command(
        "seed",
        "bulk-load a board from CSV or JSON lines",
        "Bulk-load a board under its seeding lease: the file is checked whole first (bad rows "
        "are listed and nothing is written), then each row is written where it beats the board's "
        "entry, and the counters are rebuilt. Progress goes to stderr.",
    )
    seed.add_argument("board", metavar="BOARD", help=BOARD_HELP)
    seed.add_argument(
        "file",
        metavar="FILE",
        help="CSV with a header, or JSON lines: playerId, score, "
        "achievedAt, displayName?, country?",
    )
    seed.add_argument(
        "--format",
        choices=["csv", "jsonl"],
        help="the file's format (default: from its suffix, else its content)",
    )
    seed.add_argument(
        "--grace-seconds",
        type=float,
        help="wait after taking the lease, for submissions already under way (default: "
        "LEADERBOARD_REQUEST_DEADLINE_SECONDS)",
    )
    seed.add_argument(
        "--lease-ttl", type=float, help="seconds a dead seeder's lease outlives it (default: 60)"
    )
    seed.add_argument("--concurrency", type=int, help="row writes in flight (default: 16)")

    reconcile = command(
        "reconcile",
        "compare a board's counters with a recount",
        "Recount a board twice from its index and compare with its counters; with --apply, "
        "repair only where both passes agree (and first give any row of another order than the "
        "board's the board's order). Progress goes to stderr.",
    )
    reconcile.add_argument("board", metavar="BOARD", nargs="?", help=BOARD_HELP)
    reconcile.add_argument("--apply", action="store_true", help="repair (default: a dry run)")
    reconcile.add_argument(
        "--live",
        action="store_true",
        help="every board still taking submissions, one after another (as the stack's schedule "
        "runs it); prints one JSON line, with CloudWatch's embedded metrics",
    )

    snapshot = command("snapshot", "snapshot a board now, or every closed period")
    snapshot.add_argument("board", metavar="BOARD", nargs="?", help=BOARD_HELP)
    snapshot.add_argument(
        "--closed-periods",
        action="store_true",
        help="snapshot every registered day, week and month board whose period has closed and "
        "has no snapshot yet (idempotent: run it hourly)",
    )
    snapshot.add_argument("--top", type=int, default=100, help="entries kept (1..1000)")

    erase = command(
        "erase",
        "erase a player everywhere (GDPR)",
        "Erase a player: their rows on every board, their entries in snapshots, their stored "
        "submission responses. Idempotent.",
    )
    erase.add_argument("player", metavar="PLAYER", help="the player id")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # serve logs every request (info); an operator command's stderr holds warnings only, unless
    # asked, so that its output reads alone.
    verbose = args.command == "serve" or args.verbose
    configure_logging(level=logging.INFO if verbose else logging.WARNING)
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
