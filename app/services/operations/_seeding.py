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
from collections.abc import Coroutine, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal, NoReturn, TypeVar

import structlog

from app.domain.calendar import board_expires_at
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
from app.services.moderated import moderated_of
from app.services.operations._counters import BoardCounts, RebuildOutcome, rebuild_counters
from app.services.policies import SeedPolicy
from app.services.ports import LeaseStore, RowOutcome, StandingStore, Stores
from app.services.ranking.counting import settled_count
from app.services.ranking.ties import TieWalk, reconcile_ties
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
    rows_moderated: int = 0
    """Rows left out: their player is moderated in the game (decision 0036)."""


FRESH_TABLES_SEED = SeedPolicy(grace_s=0, settle_delay_s=0.05, counters_absent=True)
"""Seeding tables this process made a moment ago, before it answers (the demo, on the embedded
backend, whose index is current at once): no grace period before the lease, no waiting for the
index to settle, and no counters to read first."""


@dataclass(frozen=True)
class SeedOptions:
    """What one seed changes of the service's seed policy (``None``: the policy's own)."""

    grace_s: float | None = None
    lease_ttl_s: float | None = None
    concurrency: int | None = None
    fresh_tables: bool = False
    """The board's tables were made a moment ago by this process: ``FRESH_TABLES_SEED``."""

    def applied_to(self, policy: SeedPolicy) -> SeedPolicy:
        """``policy`` (or ``FRESH_TABLES_SEED``) with the values these options give."""
        base = FRESH_TABLES_SEED if self.fresh_tables else policy
        return replace(
            base,
            grace_s=base.grace_s if self.grace_s is None else self.grace_s,
            lease_ttl_s=base.lease_ttl_s if self.lease_ttl_s is None else self.lease_ttl_s,
            concurrency=base.concurrency if self.concurrency is None else self.concurrency,
        )


@dataclass(frozen=True)
class _Target:
    """The board a seed fills, as each of its writes is stamped."""

    board: Board
    definition: BoardDefinition
    expires_at: int | None
    """When the board's rows and counters expire (its retention; ``None``: never)."""
    writer: str
    """The seeder's lease holder, which marks its rows and its mark of counters part-written."""


async def seed_board(
    stores: Stores,
    policy: SeedPolicy,
    board: Board,
    seed: SeedFile,
    *,
    progress: Progress | None = None,
) -> SeedReport:
    """Seed ``board`` with the checked rows of ``seed`` under the board's lease: submissions to it
    get 409 and a second seeder is refused. Registers the board (for the closed-period snapshot
    job), waits out the submissions that started before the lease, writes each row by the board
    rule, recounts the board (each partition of a sharded one) and rewrites its counters, then
    releases the lease. Until every counter is written, the counters are marked part-written: the
    board's ranks answer 503, never a wrong one. A seeder that fails or dies (an exception from
    ``progress`` and cancellation included) leaves its lease to expire, its rows uncounted and the
    mark in place: seeding again, or the reconciler with apply, recovers (docs/operations.md).
    Raises ``BoardBeingSeeded`` when another seeder holds the lease, ``Conflict`` when the lease
    is lost mid-way, ``InvalidInput`` for a board past its retention or of a variant cut into
    cohorts (``cohortSize``)."""
    board_id = board.board_id
    if seed.board_id != board_id:
        raise InvalidInput(f"the seed file was checked for board {seed.board_id}, not {board_id}")
    definition = seed.definition
    if definition.cohort_size is not None:
        # A seeded row would be on the board and in no cohort, with no seat: the board and its
        # cohorts would disagree for good (decision 0039). Players enter by joins or submissions.
        raise InvalidInput(
            f"{board.game}/{board.variant} is cut into cohorts (cohortSize): seeding would put "
            "players on the board without a place in a cohort, so it is refused; players enter "
            "a cohort variant by joining or submitting",
            errors=[{"field": "variant", "message": "a variant with cohortSize cannot be seeded"}],
        )
    expires = board_expires_at(board, definition)
    if expires is not None and expires.timestamp() <= time.time():
        raise InvalidInput(f"board {board_id} is past its retention; its rows would never show")
    keeper = _LeaseKeeper(stores.leases, board_id, policy)
    await keeper.acquire()
    log.info(
        "seeding_started",
        board=board_id,
        holder=keeper.holder,
        rows=len(seed.rows),
        lease_expires_at=keeper.expires_at,
    )
    target = _Target(
        board,
        definition,
        expires_at=None if expires is None else int(expires.timestamp()),
        writer=keeper.holder,
    )
    try:
        tally, player_count, rebuilt = await _run_under_lease(
            keeper, _fill(stores, policy, target, seed.rows, progress)
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
        rows_moderated=tally["moderated"],
    )
    log.info("seeding_finished", **asdict(report))
    return report


async def _fill(
    stores: Stores,
    policy: SeedPolicy,
    target: _Target,
    rows: Sequence[SeedRow],
    progress: Progress | None,
) -> tuple[Counter[RowOutcome | Literal["unwritten", "moderated"]], int, RebuildOutcome]:
    """Everything done under the lease: the registration, the grace period, the rows, the recount,
    the counters; the outcomes of the rows, the player count, and the rebuild's."""
    board, definition, expires_at = target.board, target.definition, target.expires_at
    counters = stores.counters
    partitions = partition_ids(board.board_id, definition.shards)
    # First, so that even rows a failed seed leaves behind are on a board the snapshot job finds.
    await register_board(registry=stores.registry, board=board, definition=definition)
    # Before any row: from here until every counter is written, no rank of the board is known
    # (``CountsIncomplete``), rather than one counted from rows whose counters are not there yet.
    # Each partition's counters carry their own mark, read with them.
    await each_partition(
        partitions,
        lambda _, pid: persist(
            lambda: counters.mark_incomplete(pid, by=target.writer, expires_at=expires_at)
        ),
    )
    await _wait_out(policy.grace_s, progress)
    # A moderated player's rows are left out (decision 0036): a seed restores no one. A player
    # moderated meanwhile keeps their hidden rows hidden (``put_seed_row`` leaves those alone).
    moderated = {m.player_id for m in await moderated_of(stores, board.game)}
    kept = [row for row in rows if row.player_id not in moderated]
    tally, written = await _write_rows(stores.standings, target, kept, policy.concurrency, progress)
    tally["moderated"] = len(rows) - len(kept)
    told = shared_progress(progress, len(partitions))
    counts = await each_partition(
        partitions,
        lambda i, pid: settled_count(
            stores.index, pid, policy.counting, expect=written.get(pid, ()), progress=told[i]
        ),
    )
    rebuilt = await rebuild_counters(
        counters,
        BoardCounts(board.board_id, dict(zip(partitions, counts, strict=True)), expires_at),
        policy.layout,
        counters_absent=policy.counters_absent,
        progress=progress,
    )
    counted = [pid for pid in partitions if pid not in rebuilt.left]
    await each_partition(counted, lambda _, pid: persist(lambda: counters.clear_incomplete(pid)))
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
                counters,
                stores.standings,
                TieWalk(pid, count.crowded),
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
    target: _Target,
    rows: Sequence[SeedRow],
    concurrency: int,
    progress: Progress | None,
) -> tuple[Counter[RowOutcome | Literal["unwritten", "moderated"]], dict[str, list[str]]]:
    """Write the rows, ``concurrency`` at a time, each on its player's partition of the board;
    the outcomes, and the keys now on the board by partition."""
    board_id, definition = target.board.board_id, target.definition
    tally: Counter[RowOutcome | Literal["unwritten", "moderated"]] = Counter()
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
                expires_at=target.expires_at,
                writer=target.writer,
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

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, total))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return tally, written


class _LeaseKeeper:
    """Takes, renews and releases one board's lease for one seeder."""

    def __init__(self, leases: LeaseStore, board_id: str, policy: SeedPolicy) -> None:
        self._leases = leases
        self._board_id = board_id
        self.holder = _default_holder()
        self._policy = policy
        self._clock = time.time
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
