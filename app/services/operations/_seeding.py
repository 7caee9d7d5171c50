"""Seeding: bulk-load a board from a checked seed file (``app.domain.seed_file``), under the
board's lease, then rebuild its counters (``seed_board``). The lease, the grace period, the mark of
counters part-written and what a seeder that dies leaves behind: docs/operations.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import socket
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal, NoReturn, TypeVar

import structlog

from app.domain.clock import iso_ms
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.domain.seed_file import SeedFile, SeedRow
from app.domain.shards import partition_ids, player_partition
from app.errors import (
    BoardBeingSeeded,
    Conflict,
    InvalidInput,
    ItemBusy,
    LeaderboardError,
    Throttled,
    Unavailable,
)
from app.services.operations._reconcile import RebuildOutcome, rebuild_counters
from app.services.policies import SeedPolicy
from app.services.ports import (
    BoardIndex,
    BoardRegistry,
    CounterStore,
    LeaseStore,
    RowOutcome,
    StandingStore,
)
from app.services.ranking.counting import settled_count
from app.services.ranking.ties import reconcile_ties
from app.services.registry import register_board
from app.services.work import Progress, each_partition, persist, shared_progress

log = structlog.get_logger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class SeedReport:
    board_id: str
    rows_read: int
    """Data rows in the file."""
    duplicates: int
    """Rows dropped because the file has a better row for the same player."""
    rows_written: int
    """Rows that created or improved an entry (``rows_created + rows_replaced``)."""
    rows_created: int
    rows_replaced: int
    rows_skipped: int
    """Rows not written: the board already held an equal or better entry for that player."""
    rows_unwritten: int
    """Rows DynamoDB kept turning away (throttled) through every retry: seed them again."""
    counters_rebuilt: int
    """Counter items set or deleted by the rebuild."""
    counter_conflicts: int
    """Counter items that changed under the lease (left for the reconciler); normally 0."""
    counters_unwritten: int
    """Counter items DynamoDB kept turning away through every retry (left for the reconciler)."""
    player_count: int
    """Entries on the board after seeding, as recounted (on every partition of a sharded board)."""
    lease_released: bool
    shards: int = 1
    """The partitions the board's rows went to, each by its player (``app.domain.shards``)."""


@dataclass(frozen=True)
class SeedPorts:
    """What seeding reads and writes: the rows, the board read whole, its counters, its lease,
    and the registry of boards."""

    standings: StandingStore
    index: BoardIndex
    counters: CounterStore
    leases: LeaseStore
    registry: BoardRegistry


async def seed_board(
    *,
    ports: SeedPorts,
    board: Board,
    seed: SeedFile,
    policy: SeedPolicy,
    progress: Progress | None = None,
    holder: str | None = None,
    clock: Callable[[], float] = time.time,
) -> SeedReport:
    """Seed ``board`` with the checked rows of ``seed`` under the board's lease.

    Takes the board's seeding lease (so submissions to it get 409 and a second seeder is refused),
    registers the board (so the closed-period snapshot job finds it, as it finds a board a
    submission reached), waits out the submissions that started before the lease, writes each row
    by the board rule (only where it beats what the board holds), recounts the board from
    RankIndex and rewrites its counters, then releases the lease. From before its first row until
    every counter is written, the board's counters are marked part-written, and its ranks and
    player count answer 503 (``CountsIncomplete``) rather than a rank counted from rows whose
    counters are not there yet. A seeder that fails or dies leaves its lease to expire on its
    own, its rows uncounted and the mark in place; running the seed again (or the reconciler with
    apply) restores the counters and clears it. A write DynamoDB turns away for the moment
    (throttled, or an item a transaction holds) is tried again after a backoff; a row that never
    lands is reported as unwritten.

    A sharded board (the definition's ``shards``, ``app.domain.shards``) is seeded under its one
    lease, each row onto its player's partition; each partition is then recounted from its own
    index partition, and its counters rebuilt and its mark set and cleared, as a board of its own.

    Raises ``BoardBeingSeeded`` when another seeder holds the lease, ``Conflict`` when
    the lease is lost mid-way, ``InvalidInput`` for a board past its retention. On any failure
    (including an exception from ``progress``, or cancellation) the lease is left to expire."""
    board_id = board.board_id
    if seed.board_id != board_id:
        raise InvalidInput(f"the seed file was checked for board {seed.board_id}, not {board_id}")
    definition = seed.definition
    expires = board.period.expires_at(definition.retention)
    if expires is not None and expires.timestamp() <= clock():
        raise InvalidInput(f"board {board_id} is past its retention; its rows would never show")
    keeper = _LeaseKeeper(
        ports.leases, board_id, holder=holder or _default_holder(), policy=policy, clock=clock
    )
    await keeper.acquire()
    log.info(
        "seeding_started",
        board=board_id,
        holder=keeper.holder,
        rows=len(seed.rows),
        lease_expires_at=keeper.expires_at,
    )
    try:
        tally, player_count, rebuilt = await _run_under_lease(
            keeper,
            _fill(
                ports=ports,
                board=board,
                seed=seed,
                policy=policy,
                definition=definition,
                progress=progress,
                expires_at=None if expires is None else int(expires.timestamp()),
                writer=keeper.holder,
            ),
        )
    except BaseException as exc:
        log.warning(
            "seeding_stopped",
            board=board_id,
            holder=keeper.holder,
            error=repr(exc),
            lease_expires_at=keeper.expires_at,
            recovery="the lease expires on its own; seed again (or reconcile --apply) after it",
        )
        raise
    released = await keeper.release()
    report = SeedReport(
        board_id=board_id,
        rows_read=seed.rows_read,
        duplicates=len(seed.duplicate_lines),
        rows_written=tally["created"] + tally["replaced"],
        rows_created=tally["created"],
        rows_replaced=tally["replaced"],
        rows_skipped=tally["kept"],
        rows_unwritten=tally["unwritten"],
        counters_rebuilt=rebuilt.written,
        counter_conflicts=rebuilt.conflicts,
        counters_unwritten=rebuilt.unwritten,
        player_count=player_count,
        lease_released=released,
        shards=definition.shards,
    )
    log.info("seeding_finished", **asdict(report))
    return report


async def _fill(
    *,
    ports: SeedPorts,
    board: Board,
    seed: SeedFile,
    policy: SeedPolicy,
    definition: BoardDefinition,
    progress: Progress | None,
    expires_at: int | None,
    writer: str,
) -> tuple[Counter[RowOutcome | Literal["unwritten"]], int, RebuildOutcome]:
    """Everything done under the lease: the registration, the grace period, the rows, the recount,
    the counters; the outcomes of the rows, the player count, and the rebuild's."""
    partitions = partition_ids(board.board_id, definition.shards)
    # First, so that even rows a failed seed leaves behind are on a board the snapshot job finds.
    await register_board(registry=ports.registry, board=board, retention=definition.retention)
    # Before any row: from here until every counter is written, no rank of the board is known
    # (``CountsIncomplete``), rather than one counted from rows whose counters are not there yet.
    # Each partition's counters carry their own mark, read with them.
    await each_partition(
        partitions,
        lambda _, pid: persist(
            lambda: ports.counters.mark_incomplete(pid, by=writer, expires_at=expires_at)
        ),
    )
    await _wait_out(policy.grace_s, progress)
    tally, written = await _write_rows(
        ports.standings,
        board.board_id,
        seed.rows,
        policy=policy,
        definition=definition,
        progress=progress,
        expires_at=expires_at,
        writer=writer,
    )
    told = shared_progress(progress, len(partitions))
    counts = await each_partition(
        partitions,
        lambda i, pid: settled_count(
            ports.index,
            pid,
            layout=policy.layout,
            expect=written.get(pid, ()),
            attempts=policy.settle_attempts,
            delay_s=policy.settle_delay_s,
            progress=told[i],
            tie_group=policy.tie_group,
        ),
    )
    rebuilt = await rebuild_counters(
        counters=ports.counters,
        board=board,
        counts=dict(zip(partitions, counts, strict=True)),
        layout=policy.layout,
        retention=definition.retention,
        progress=progress,
        counters_absent=policy.counters_absent,
    )
    counted = [pid for pid in partitions if pid not in rebuilt.left]
    await each_partition(
        counted, lambda _, pid: persist(lambda: ports.counters.clear_incomplete(pid))
    )
    if rebuilt.left:  # left marked: ranks stay unknown until the reconciler rebuilds the counters
        log.warning(
            "seeding_left_counters_incomplete",
            board=board.board_id,
            partitions=sorted(rebuilt.left),
        )
    for pid, count in zip(partitions, counts, strict=True):
        if policy.tie_group is not None and count.crowded:
            # Nothing else writes under the lease: the settled count is the partition.
            await reconcile_ties(
                counters=ports.counters,
                standings=ports.standings,
                board_id=pid,
                crowded=count.crowded,
                group=policy.tie_group,
                apply=True,
                expires_at=expires_at,
            )
    return tally, sum(count.total for count in counts), rebuilt


async def _wait_out(grace_s: float, progress: Progress | None) -> None:
    """The grace period, told second by second."""
    if grace_s <= 0:
        return
    total = math.ceil(grace_s)
    began = time.monotonic()
    while (elapsed := time.monotonic() - began) < grace_s:
        if progress is not None:
            progress("waiting", min(total, math.floor(elapsed)), total)
        await asyncio.sleep(min(1.0, grace_s - elapsed))
    if progress is not None:
        progress("waiting", total, total)


async def _write_rows(
    standings: StandingStore,
    board_id: str,
    rows: Sequence[SeedRow],
    *,
    policy: SeedPolicy,
    definition: BoardDefinition,
    progress: Progress | None,
    expires_at: int | None,
    writer: str,
) -> tuple[Counter[RowOutcome | Literal["unwritten"]], dict[str, list[str]]]:
    """Write the rows, ``policy.concurrency`` at a time, each on its player's partition of the
    board; the outcomes, and the keys now on the board by partition."""
    tally: Counter[RowOutcome | Literal["unwritten"]] = Counter()
    written: dict[str, list[str]] = defaultdict(list)
    pending = iter(rows)  # shared by the workers: each takes the next row when it is free
    total = len(rows)
    if progress is not None:
        progress("writing rows", 0, total)

    async def worker() -> None:
        for row in pending:
            partition = player_partition(board_id, row.player_id, definition.shards)
            write = functools.partial(
                standings.put_seed_row,
                partition,
                row,
                definition=definition,
                expires_at=expires_at,
                writer=writer,
            )
            try:
                outcome: RowOutcome | Literal["unwritten"] = await persist(write)
            except (ItemBusy, Throttled) as exc:
                log.warning("seed_row_unwritten", board=board_id, reason=exc.detail)
                outcome = "unwritten"
            tally[outcome] += 1
            if outcome in ("created", "replaced"):
                written[partition].append(row.key_for(definition.order).encode())
            if progress is not None:
                progress("writing rows", tally.total(), total)

    workers = [asyncio.create_task(worker()) for _ in range(min(policy.concurrency, total))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return tally, written


class _LeaseKeeper:
    """Takes, renews and releases one board's lease for one seeder."""

    def __init__(
        self,
        leases: LeaseStore,
        board_id: str,
        *,
        holder: str,
        policy: SeedPolicy,
        clock: Callable[[], float],
    ) -> None:
        self._leases = leases
        self._board_id = board_id
        self.holder = holder
        self._policy = policy
        self._clock = clock
        self.expires_at = 0

    def _now_s(self) -> int:
        return math.floor(self._clock())

    def _next_expiry(self) -> int:
        return math.ceil(self._clock() + self._policy.lease_ttl_s)

    async def acquire(self) -> None:
        expires_at = self._next_expiry()
        held = await persist(
            lambda: self._leases.acquire_lease(
                self._board_id, holder=self.holder, expires_at=expires_at, now_s=self._now_s()
            )
        )
        if held is not None:
            wait = max(1, held.expires_at - self._now_s())
            raise BoardBeingSeeded(
                f"board {self._board_id} is already being seeded by {held.holder} (lease until "
                f"{iso_ms(held.expires_at * 1000)}); a second seeder is refused: retry after it "
                "ends or its lease expires",
                retry_after=wait,
            )
        self.expires_at = expires_at

    async def keep(self) -> NoReturn:
        """Renew the lease every ``renew_interval_s``; raise ``Conflict`` once it is lost (taken
        over, removed) or about to lapse because renewals keep failing."""
        interval = self._policy.renew_interval_s
        delay = interval
        while True:
            await asyncio.sleep(delay)
            expires_at = self._next_expiry()
            try:
                renewed = await self._leases.renew_lease(
                    self._board_id, holder=self.holder, expires_at=expires_at, now_s=self._now_s()
                )
            except Unavailable as exc:
                if self._clock() + interval / 2 >= self.expires_at:
                    raise Conflict(
                        f"could not renew the seeding lease on {self._board_id} before it lapsed; "
                        "seeding stopped: seed again once the store answers",
                        retry_after=max(1, math.ceil(self._policy.lease_ttl_s)),
                    ) from exc
                log.warning("lease_renewal_failed", board=self._board_id, error=str(exc))
                delay = min(interval, 1.0)
                continue
            if not renewed:
                raise Conflict(
                    f"lost the seeding lease on {self._board_id} (it lapsed or was taken over); "
                    "seeding stopped: check who holds it, then seed again",
                    retry_after=max(1, math.ceil(self._policy.lease_ttl_s)),
                )
            self.expires_at = expires_at
            delay = interval

    async def release(self) -> bool:
        try:
            released = await persist(
                lambda: self._leases.release_lease(self._board_id, holder=self.holder)
            )
        except LeaderboardError as exc:
            log.warning("lease_release_failed", board=self._board_id, error=exc.detail)
            released = False  # it expires on its own
        if not released:
            log.warning("lease_not_released", board=self._board_id, holder=self.holder)
        return released


async def _run_under_lease(keeper: _LeaseKeeper, work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` while ``keeper`` renews the lease; a lost lease cancels the work and raises."""
    work_task = asyncio.create_task(work)
    keep_task = asyncio.create_task(keeper.keep())
    try:
        await asyncio.wait({work_task, keep_task}, return_when=asyncio.FIRST_COMPLETED)
        if not work_task.done():
            work_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work_task
            keep_task.result()  # raises why the lease was lost
        return work_task.result()
    finally:
        for task in (work_task, keep_task):
            task.cancel()
        await asyncio.gather(work_task, keep_task, return_exceptions=True)


def _default_holder() -> str:
    """Who holds a lease, for the operator who finds it: host, process, and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
