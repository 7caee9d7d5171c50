"""The board commands: seed, reconcile, snapshot, erase."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from app import embedded_metrics
from app.api.schemas import (
    ErasureOut,
    ReconcileReportOut,
    SeedReportOut,
    SnapshotOut,
)
from app.bootstrap import Runtime
from app.cli.output import as_json, print_json, print_model
from app.cli.progress import ProgressReport
from app.domain.clock import to_ms
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.domain.seed_file import FORMAT_BY_SUFFIX, SeedFile, SeedFormat, parse_seed_text
from app.errors import InvalidInput
from app.services.operations import RekeyReport, SeedOptions


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


async def named_board(
    text: str, definition_of: Callable[[str, str], Awaitable[BoardDefinition]]
) -> tuple[Board, BoardDefinition]:
    """The board an operator names, its current period (``day``) in its variant's calendar, and
    its definition, read by ``definition_of`` (which says whether an undefined variant will do)."""
    try:
        game, variant, period_text = Board.named(text)
        definition = await definition_of(game, variant)
        return Board(
            game, variant, definition.calendar.parse(period_text, now=datetime.now(UTC))
        ), (definition)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


async def run_seed(runtime: Runtime, args: argparse.Namespace) -> int:
    board, definition = await named_board(args.board, runtime.leaderboard.rules.for_submitting)
    seed = parse_seed_file(
        Path(args.file),
        board=board,
        now=datetime.now(UTC),
        definition=definition,
        file_format=args.format,
    )
    options = SeedOptions(
        grace_s=args.grace_seconds, lease_ttl_s=args.lease_ttl, concurrency=args.concurrency
    )
    progress = ProgressReport(sys.stderr)
    async with progress.ticking():
        report = await runtime.leaderboard.operations.seed(
            board, seed, options=options, progress=progress
        )
    progress.finish()
    print_model(SeedReportOut.of(report), one_line=args.json)
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


async def run_reconcile(runtime: Runtime, args: argparse.Namespace) -> int:
    if args.live:
        if args.board is not None:
            raise InvalidInput("name a BOARD or use --live, not both")
        return await _reconcile_live(runtime, apply=args.apply)
    if args.board is None:
        raise InvalidInput("name a BOARD, or use --live")
    leaderboard = runtime.leaderboard
    board, definition = await named_board(args.board, leaderboard.rules.for_reading)
    progress = ProgressReport(sys.stderr)
    async with progress.ticking():
        report = await leaderboard.operations.reconcile(
            board, definition, apply=args.apply, progress=progress
        )
    progress.finish()
    # First, the reconcile gave rows of another order than the board's (a board of two orders)
    # its order: what it found is told beside the recount (one board's reconcile always looks).
    strays = report.other_order or RekeyReport(report.board_id, definition.order, found=0)
    if args.json:
        print_json(
            {
                **as_json(ReconcileReportOut.of(report)),
                "otherOrderRows": {
                    "found": strays.found,
                    "rekeyed": strays.rekeyed,
                    "skipped": strays.skipped,
                },
            }
        )
        return 0
    if strays.found:
        print(
            f"{strays.board_id}: {strays.found} rows not in the board's order ({strays.order.value})"
            + (
                f"; {strays.rekeyed} given it, {strays.skipped} moved meanwhile"
                if args.apply
                else " (use --apply to give them it)"
            )
        )
    if report.moderated_rows:
        print(
            f"{report.board_id}: {report.moderated_rows} visible rows of moderated players"
            + (" hidden" if args.apply else " (use --apply to hide them)")
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
    now = datetime.now(UTC)
    progress = ProgressReport(sys.stderr)
    async with progress.ticking():
        report = await runtime.leaderboard.operations.reconcile_live(
            apply=apply, now=now, progress=progress
        )
    progress.finish()
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
        **embedded_metrics.reconcile_emf(
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


async def run_snapshot(runtime: Runtime, args: argparse.Namespace) -> int:
    operations = runtime.leaderboard.operations
    now = datetime.now(UTC)
    if args.closed_periods:
        progress = ProgressReport(sys.stderr)
        async with progress.ticking():
            report = await operations.snapshot_closed_periods(
                now=now, top=args.top, progress=progress
            )
        progress.finish()
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
        if args.json:
            print_json(document)
        else:
            print(json.dumps(document, indent=2))
        return 1 if report.failed else 0
    if args.board is None:
        raise InvalidInput("name a BOARD, or use --closed-periods")
    board, definition = await named_board(args.board, runtime.leaderboard.rules.for_reading)
    snapshot = await operations.snapshot(board, definition, now=now, top=args.top)
    print_model(SnapshotOut.of(snapshot), one_line=args.json)
    return 0


async def run_erase(runtime: Runtime, args: argparse.Namespace) -> int:
    report = await runtime.leaderboard.operations.erase(args.player, now=datetime.now(UTC))
    print_model(ErasureOut.of(report), one_line=args.json)
    if not report.complete:
        print(
            "snapshots still being written hold this player: run erase again in a few minutes",
            file=sys.stderr,
        )
        return 1
    return 0
