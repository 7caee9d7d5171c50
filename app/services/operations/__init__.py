"""The operators' use cases as the service holds them: seeding, rekeying and reconciling a board,
reconciling every live board, snapshots, and erasing a player. The ``leaderboard`` command and
the admin endpoints call the same methods."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.domain.seed_file import SeedFile
from app.services.operations._erasure import ErasureReport, erase_player
from app.services.operations._live import (
    LiveReconcileReport,
    ReconcilePorts,
    reconcile_live_boards,
)
from app.services.operations._reconcile import ReconcileReport, reconcile_board
from app.services.operations._rekey import RekeyReport, rekey_board
from app.services.operations._seeding import SeedPorts, SeedReport, seed_board
from app.services.operations._snapshots import (
    ClosedPeriodsReport,
    SnapshotPorts,
    snapshot_closed_periods,
    take_snapshot,
)
from app.services.policies import Policies, SeedPolicy
from app.services.ports import Snapshot, Stores, TablesReport
from app.services.rules.held import Definitions
from app.services.work import Progress

FRESH_TABLES_SEED = SeedPolicy(grace_s=0, settle_delay_s=0.05, counters_absent=True)
"""Seeding tables this process made a moment ago, before it answers (the demo, on the embedded
backend, whose index is current at once): no grace period before the lease, no waiting for the
index to settle, and no counters to read first."""


class Operations:
    def __init__(self, stores: Stores, *, definitions: Definitions, policies: Policies) -> None:
        self._stores = stores
        self._definitions = definitions
        self._policies = policies

    async def seed(
        self,
        board: Board,
        seed: SeedFile,
        *,
        grace_s: float | None = None,
        lease_ttl_s: float | None = None,
        concurrency: int | None = None,
        fresh_tables: bool = False,
        progress: Progress | None = None,
    ) -> SeedReport:
        """Load ``seed`` into the board under its seeding lease; the policy's grace, lease TTL
        and concurrency where not given (``fresh_tables``: ``FRESH_TABLES_SEED``)."""
        policy = FRESH_TABLES_SEED if fresh_tables else self._policies.seed
        if grace_s is not None:
            policy = replace(policy, grace_s=grace_s)
        if lease_ttl_s is not None:
            policy = replace(policy, lease_ttl_s=lease_ttl_s)
        if concurrency is not None:
            policy = replace(policy, concurrency=concurrency)
        s = self._stores
        return await seed_board(
            ports=SeedPorts(s.standings, s.index, s.counters, s.leases, s.registry),
            board=board,
            seed=seed,
            policy=policy,
            progress=progress,
        )

    async def rekey(self, board: Board, definition: BoardDefinition, *, apply: bool) -> RekeyReport:
        """The board's rows of the other order than its own (a board of two orders), given its
        order with ``apply``."""
        return await rekey_board(
            index=self._stores.index,
            standings=self._stores.standings,
            counters=self._stores.counters,
            layout=self._policies.layout,
            board_id=board.board_id,
            order=definition.order,
            apply=apply,
            shards=definition.shards,
        )

    async def reconcile(
        self,
        board: Board,
        definition: BoardDefinition,
        *,
        apply: bool,
        progress: Progress | None = None,
    ) -> ReconcileReport:
        """Recount the board twice and compare with its counters; repair with ``apply``."""
        return await reconcile_board(
            index=self._stores.index,
            counters=self._stores.counters,
            leases=self._stores.leases,
            board=board,
            layout=self._policies.layout,
            retention=definition.retention,
            apply=apply,
            shards=definition.shards,
            tie_group=self._policies.tie_group,
            standings=self._stores.standings,
            pass_gap_s=self._policies.pass_gap_s,
            progress=progress,
        )

    async def reconcile_live(
        self, *, apply: bool, now: datetime, progress: Progress | None = None
    ) -> LiveReconcileReport:
        """Every live board, as the stack's schedule runs it."""
        s = self._stores
        return await reconcile_live_boards(
            ports=ReconcilePorts(s.index, s.counters, s.leases, s.standings, s.registry),
            definitions=self._definitions,
            layout=self._policies.layout,
            tie_group=self._policies.tie_group,
            now=now,
            settle=self._policies.settle,
            apply=apply,
            pass_gap_s=self._policies.pass_gap_s,
            progress=progress,
        )

    def _snapshot_ports(self) -> SnapshotPorts:
        s = self._stores
        return SnapshotPorts(s.index, s.counters, s.standings, s.snapshots, s.registry)

    async def snapshot(
        self, board: Board, definition: BoardDefinition, *, now: datetime, top: int
    ) -> Snapshot:
        """The board's top ``top`` and player count, kept now."""
        return await take_snapshot(
            ports=self._snapshot_ports(),
            board=board,
            now=now,
            retention=definition.retention,
            top_n=top,
            shards=definition.shards,
        )

    async def snapshot_closed_periods(
        self, *, now: datetime, top: int, progress: Progress | None = None
    ) -> ClosedPeriodsReport:
        """A snapshot of every board whose period has closed and has none."""
        return await snapshot_closed_periods(
            ports=self._snapshot_ports(),
            now=now,
            definitions=self._definitions,
            settle=self._policies.settle,
            top_n=top,
            progress=progress,
        )

    async def create_tables(self, *, deletion_protection: bool = False) -> TablesReport:
        """Both tables where missing (an operator's setup, never a request's)."""
        return await self._stores.tables.create_tables(deletion_protection=deletion_protection)

    async def erase(self, player_id: str, *, now: datetime) -> ErasureReport:
        """The player, everywhere (idempotent): see ``app.services.operations._erasure``."""
        return await erase_player(
            standings=self._stores.standings,
            requests=self._stores.requests,
            snapshots=self._stores.snapshots,
            marks=self._stores.erasures,
            player_id=player_id,
            layout=self._policies.layout,
            now=now,
        )


__all__ = [
    "ClosedPeriodsReport",
    "ErasureReport",
    "LiveReconcileReport",
    "Operations",
    "ReconcileReport",
    "RekeyReport",
    "SeedReport",
]
