"""The operators' use cases as the service holds them: seeding, rekeying and reconciling a board,
reconciling every live board, snapshots and the close of periods, and erasing a player. The
``leaderboard`` command and the admin endpoints call the same methods; each use case takes the
stores, its policy and the request's values."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import structlog

from app.domain.definitions import BoardDefinition
from app.domain.models import Entry
from app.domain.moderation import Moderation
from app.domain.periods import Board
from app.domain.seed_file import SeedFile
from app.errors import LeaderboardError
from app.services.operations._close import CloseCounts, keep_closing
from app.services.operations._erasure import ErasureReport, erase_player
from app.services.operations._live import (
    LiveReconcileReport,
    find_live_boards,
    reconcile_live_boards,
)
from app.services.operations._moderation import (
    LogPage,
    ModerateAsk,
    ModeratedPlayers,
    ModerationPolicy,
    Restored,
    VoidAsk,
    moderate,
    moderated_players,
    moderation_log,
    restore,
    sweep_again,
    void_entry,
)
from app.services.operations._reconcile import ReconcileReport, reconcile_board
from app.services.operations._rekey import RekeyReport, rekey_board
from app.services.operations._seeding import (
    FRESH_TABLES_SEED,
    SeedOptions,
    SeedReport,
    seed_board,
)
from app.services.operations._snapshots import (
    DEFAULT_TOP_N,
    ClosedPeriodsReport,
    snapshot_closed_periods,
    take_snapshot,
)
from app.services.policies import CountPolicy, Policies
from app.services.ports import Snapshot, Stores, TablesReport
from app.services.rules.held import Definitions
from app.services.work import Progress


class Operations:
    def __init__(self, stores: Stores, policies: Policies, definitions: Definitions) -> None:
        self._stores = stores
        self._policies = policies
        self._definitions = definitions
        # How the reconciler counts, from the service's policies: the seeder's is its own.
        self._counting = CountPolicy(
            policies.layout, tie_group=policies.tie_group, pass_gap_s=policies.pass_gap_s
        )
        self._moderation = ModerationPolicy(
            policies.layout,
            sweep_again_s=policies.sweep_again_s,
            cursor_secret=policies.reads.cursor_secret,
        )
        self._later: set[asyncio.Task[None]] = set()

    async def seed(
        self,
        board: Board,
        seed: SeedFile,
        *,
        options: SeedOptions | None = None,
        progress: Progress | None = None,
    ) -> SeedReport:
        """Load ``seed`` into the board under its seeding lease, by the service's seed policy
        changed where ``options`` say."""
        policy = (options or SeedOptions()).applied_to(self._policies.seed)
        return await seed_board(self._stores, policy, board, seed, progress=progress)

    async def rekey(self, board: Board, definition: BoardDefinition, *, apply: bool) -> RekeyReport:
        """The board's rows of the other order than its own (a board of two orders), given its
        order with ``apply``."""
        layout = self._policies.layout
        return await rekey_board(self._stores, layout, board, definition, apply=apply)

    async def reconcile(
        self,
        board: Board,
        definition: BoardDefinition,
        *,
        apply: bool,
        progress: Progress | None = None,
    ) -> ReconcileReport:
        """Give rows of another order the board's (``rekey``), then recount the board twice and
        compare with its counters; repair with ``apply``."""
        return await reconcile_board(
            self._stores, self._counting, board, definition, apply=apply, progress=progress
        )

    async def reconcile_live(
        self, *, apply: bool, now: datetime, progress: Progress | None = None
    ) -> LiveReconcileReport:
        """Every live board, as the stack's schedule runs it."""
        live = await find_live_boards(
            self._stores.registry, self._definitions, now=now, settle=self._policies.settle
        )
        return await reconcile_live_boards(
            self._stores, self._counting, live, apply=apply, progress=progress
        )

    async def snapshot(
        self, board: Board, definition: BoardDefinition, *, now: datetime, top: int
    ) -> Snapshot:
        """The board's top ``top`` and player count, kept now."""
        return await take_snapshot(self._stores, board, definition, now=now, top_n=top)

    async def snapshot_closed_periods(
        self, *, now: datetime, top: int, progress: Progress | None = None
    ) -> ClosedPeriodsReport:
        """A snapshot of every board whose period has closed and has none."""
        return await snapshot_closed_periods(
            self._stores,
            self._definitions,
            now=now,
            settle=self._policies.settle,
            top_n=top,
            progress=progress,
        )

    async def close_periods(self, now: datetime) -> CloseCounts:
        """Close every board whose period has closed and that is not closed yet: its final
        snapshot and its ``board.closed`` event, once (``app.services.operations._close``)."""
        report = await self.snapshot_closed_periods(now=now, top=DEFAULT_TOP_N)
        return CloseCounts(len(report.taken), len(report.raced), len(report.failed))

    async def keep_closing(self) -> None:
        """``close_periods`` every ``close_interval_s`` (jittered), until cancelled: what every
        task of the service runs, so that a period closes with no operator command."""
        await keep_closing(self.close_periods, interval_s=self._policies.close_interval_s)

    async def create_tables(self, *, deletion_protection: bool = False) -> TablesReport:
        """Both tables where missing (an operator's setup, never a request's)."""
        return await self._stores.tables.create_tables(deletion_protection=deletion_protection)

    async def erase(self, player_id: str, *, now: datetime) -> ErasureReport:
        """The player, everywhere (idempotent): see ``app.services.operations._erasure``."""
        return await erase_player(self._stores, self._policies.layout, player_id, now=now)

    # ---- moderation (decision 0036) -----------------------------------------------------------

    async def moderate(self, ask: ModerateAsk) -> Moderation:
        """Hide or ban the player on every board of the game; its later pass runs in this task
        when due (and the reconciler runs it where this task is gone by then)."""
        record = await moderate(self._stores, self._moderation, ask)
        self._run_later(
            lambda: sweep_again(self._stores, self._moderation.layout, record, datetime.now(UTC))
        )
        return record

    async def restore(self, ask: ModerateAsk) -> Restored:
        """Restore the player (``NotFound`` if not moderated)."""
        return await restore(self._stores, self._moderation, ask)

    async def void(self, board: Board, definition: BoardDefinition, ask: ModerateAsk) -> Entry:
        """Void the player's entry on the board (``NotFound`` where there is none)."""
        return await void_entry(self._stores, self._moderation, VoidAsk(board, definition, ask))

    async def moderated_players(
        self, game: str, *, cursor: str | None, limit: int
    ) -> ModeratedPlayers:
        return await moderated_players(self._stores, self._moderation, game, cursor, limit)

    async def moderation_log(self, game: str, *, cursor: str | None, limit: int) -> LogPage:
        return await moderation_log(self._stores, self._moderation, game, cursor, limit)

    def _run_later(self, work: Callable[[], Awaitable[int]]) -> None:
        async def later() -> None:
            await asyncio.sleep(self._moderation.sweep_again_s)
            try:
                await work()
            except LeaderboardError as exc:  # the reconciler runs it, where the record asks
                log.warning("moderation_later_pass_failed", reason=type(exc).__name__)

        task = asyncio.ensure_future(later())
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    async def close(self) -> None:
        """Stop the later passes still waiting (the reconciler runs a moderation's)."""
        for task in list(self._later):
            task.cancel()
        await asyncio.gather(*self._later, return_exceptions=True)


log = structlog.get_logger(__name__)

__all__ = [
    "FRESH_TABLES_SEED",
    "CloseCounts",
    "ClosedPeriodsReport",
    "ErasureReport",
    "LiveReconcileReport",
    "LogPage",
    "ModerateAsk",
    "ModeratedPlayers",
    "Operations",
    "ReconcileReport",
    "RekeyReport",
    "Restored",
    "SeedOptions",
    "SeedReport",
]
