"""One reconcile for both doors: ``Operations.reconcile``, which ``leaderboard reconcile BOARD``
and ``POST .../reconcile`` both call, first gives the board's rows of another order its order,
then recounts the board; its one report carries both. Over the fakes of ``tests/fakes.py``."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from app.bootstrap import build_leaderboard, build_policies
from app.domain.definitions import BoardDefinition
from app.domain.keys import Order
from app.domain.periods import Board, Period, PeriodKind
from app.domain.submission import Submission
from app.services.leaderboard import Leaderboard
from app.services.operations import RekeyReport
from app.settings import Settings
from tests.fakes import MemoryStores

BOARD = Board("trivia", "classic", Period(PeriodKind.ALLTIME))
SCORES = {"ann": 300, "bob": 500, "cat": 100, "dan": 400, "eve": 200}
NOW = datetime.now(UTC)


def _leaderboard() -> Leaderboard:
    """The service over fakes, with no gap between a recount's passes."""
    settings = Settings()
    policies = replace(build_policies(settings), pass_gap_s=0)
    return build_leaderboard(settings, MemoryStores().stores, policies)


async def _submitted(leaderboard: Leaderboard) -> None:
    """``SCORES`` on the board, under the default definition: descending."""
    for player, score in SCORES.items():
        await leaderboard.submissions.submit(
            Submission(player, score, BOARD.game, BOARD.variant),
            client="game-server",
            idempotency_key=player,
            fields={"playerId": player, "score": score},
            now_ms=int(NOW.timestamp() * 1000),
        )


async def test_a_reconcile_gives_rows_of_another_order_the_board_s_then_recounts() -> None:
    leaderboard = _leaderboard()
    await _submitted(leaderboard)
    ascending = BoardDefinition(order=Order.ASC)  # the board now ranks lower first
    operations = leaderboard.operations

    dry = await operations.reconcile(BOARD, ascending, apply=False)
    assert dry.other_order == RekeyReport(BOARD.board_id, Order.ASC, found=len(SCORES))
    assert (dry.applied, dry.player_count, dry.differences) == (False, len(SCORES), [])

    applied = await operations.reconcile(BOARD, ascending, apply=True)
    assert applied.other_order == RekeyReport(
        BOARD.board_id, Order.ASC, found=len(SCORES), rekeyed=len(SCORES)
    )
    assert (applied.player_count, applied.differences) == (len(SCORES), [])
    page = await leaderboard.reads.top(BOARD, ascending, limit=10, cursor=None, now=NOW)
    assert [r.entry.player_id for r in page.entries] == sorted(SCORES, key=SCORES.__getitem__)

    again = await operations.reconcile(BOARD, ascending, apply=False)
    assert again.other_order == RekeyReport(BOARD.board_id, Order.ASC, found=0)


async def test_the_run_over_live_boards_recounts_without_looking_for_another_order() -> None:
    leaderboard = _leaderboard()
    await _submitted(leaderboard)
    live = await leaderboard.operations.reconcile_live(apply=False, now=NOW)
    assert BOARD.board_id in [r.board_id for r in live.boards]
    assert [r.other_order for r in live.boards] == [None] * len(live.boards)
