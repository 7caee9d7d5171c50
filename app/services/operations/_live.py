"""The reconciler over every live board, as the stack runs it on a schedule
(``leaderboard reconcile --live --apply``): each registered board still taking submissions (all-time
boards, and period boards not yet closed) is reconciled in turn, tie counters included, and the run
reports what drifted and what it left, for the alarm that pages when drift is found twice in a row.
A sharded board is reconciled partition by partition and reported as one board (its definition
says how many partitions it has).

A board a seeding lease holds is left to its seeder; a board that fails, whatever the error, is
reported and left for the next run; the others go on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from app.domain.calendar import Lasting, board_is_expired, period_closes_at
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.errors import BoardBeingSeeded, LeaderboardError
from app.services.operations._reconcile import ReconcileReport, recount_board
from app.services.policies import CountPolicy
from app.services.ports import BoardRegistry, Stores
from app.services.rules.held import Definitions
from app.services.work import Progress

log = structlog.get_logger(__name__)

BOARDS_AT_ONCE = 4
"""Boards reconciled at once: each walks its whole board twice."""

RUNS_PER_BOARD = 3
"""A board whose repairs a submission overtook (skipped) is reconciled again, up to this many
times in all: until its repairs land, its counters stay marked part-written."""


@dataclass
class LiveReconcileReport:
    boards: list[ReconcileReport] = field(default_factory=list)
    held: list[str] = field(default_factory=list)
    """Boards a seeding lease held: their seeder rebuilds their counters."""
    failed: dict[str, str] = field(default_factory=dict)
    """Boards whose reconcile failed, with why: left for the next run."""

    @property
    def drifted(self) -> list[ReconcileReport]:
        """The boards whose counters or tie counters differed from the board."""
        return [r for r in self.boards if r.drift]

    @property
    def differences(self) -> int:
        return sum(r.drift for r in self.boards)

    @property
    def left(self) -> int:
        """Differences not repaired: skipped (changed meanwhile) or unwritten."""
        return sum(r.left for r in self.boards)


def is_live(board: Board, *, now: datetime, settle: timedelta, definition: Lasting) -> bool:
    """Still taking submissions: all-time, or a period not closed (``settle`` after its end)."""
    closes = period_closes_at(board, definition, settle=settle)
    return (closes is None or closes > now) and not board_is_expired(
        board, now=now, definition=definition
    )


@dataclass(frozen=True)
class LiveBoards:
    """The registered boards still taking submissions at a moment, each with its definition."""

    boards: list[tuple[Board, BoardDefinition]] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Boards whose definition could not be read, with why: left for the next run."""


async def find_live_boards(
    registry: BoardRegistry, definitions: Definitions, *, now: datetime, settle: timedelta
) -> LiveBoards:
    """Every registered board live at ``now`` (``is_live``: ``settle`` is how long after its end
    a period closes)."""
    live = LiveBoards()
    for registered in await registry.registered_boards():
        try:
            board = Board.from_id(registered.board_id)
            definition = (await definitions.of(board.game, board.variant)).definition
        except ValueError:
            log.warning("registry_row_not_a_board", board=registered.board_id)
            continue
        except LeaderboardError as exc:
            live.failed[registered.board_id] = exc.detail
            continue
        if is_live(board, now=now, settle=settle, definition=definition):
            live.boards.append((board, definition))
    return live


async def reconcile_live_boards(
    stores: Stores,
    policy: CountPolicy,
    live: LiveBoards,
    *,
    apply: bool,
    progress: Progress | None = None,
) -> LiveReconcileReport:
    """Reconcile each of the ``live`` boards (see the module docstring); ``progress`` hears of
    each board done."""
    report = LiveReconcileReport(failed=dict(live.failed))
    gate = asyncio.Semaphore(BOARDS_AT_ONCE)
    done = 0
    total = len(live.boards)
    if progress is not None:
        progress("reconciling boards", 0, total)

    async def one(board: Board, definition: BoardDefinition) -> None:
        nonlocal done
        async with gate:
            try:
                for _ in range(RUNS_PER_BOARD):
                    found = await recount_board(stores, policy, board, definition, apply=apply)
                    if not (apply and found.skipped):
                        break
            except BoardBeingSeeded:
                report.held.append(board.board_id)
            except LeaderboardError as exc:
                report.failed[board.board_id] = exc.detail
                log.warning("reconcile_failed", board=board.board_id, error=exc.detail)
            else:
                report.boards.append(found)
        done += 1
        if progress is not None:
            progress("reconciling boards", done, total)

    await asyncio.gather(*(one(board, definition) for board, definition in live.boards))
    report.boards.sort(key=lambda r: r.board_id)
    log.info(
        "reconciled_live_boards",
        boards=len(report.boards),
        drifted=len(report.drifted),
        differences=report.differences,
        left=report.left,
        held=len(report.held),
        failed=len(report.failed),
    )
    return report
