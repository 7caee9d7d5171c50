"""Tie counters built while a board is live: a rank read that can only answer a range in a
crowded slot whose tie counters are missing, unsealed or short of rows has its task build (or
repair) that one slot's in the background, with no operator and no wait for the hourly reconcile
(decision 0018); so do the submissions that find their slot crowded, before anyone reads it
(decision 0035).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from app import telemetry
from app.domain.buckets import BucketLayout
from app.domain.keys import Order, RankKey, score_prefix
from app.domain.ties import LEVEL_B, adds_up
from app.errors import LeaderboardError
from app.services.memory import Recent
from app.services.policies import RankingPolicy
from app.services.ports import (
    BoardIndex,
    CounterStore,
    IndexedKey,
    RankReader,
    SlotAddress,
    Stores,
)
from app.services.ranking.ties import TieReport, TieWalk, reconcile_ties

log = structlog.get_logger(__name__)

PAGE_SIZE = 1_000
WALKS = 6
"""Most walks of one build: until two in a row agree, each wait twice the one before
(``pass_gap_s``, then 2, 4, 8 and 16 times it): a round's results landing while the build walks
defer it by seconds, not by a minute."""
CHECKS_PER_CAP = 16
"""A task reads a slot's counter each ``cap / CHECKS_PER_CAP`` submissions it lands there (125 at
the default cap of 2,000), while it read no grain there: with 8 tasks sharing those submissions
evenly, one of them finds the slot crowded (past the cap) before it holds half a cap more."""


def slot_key_range(layout: BucketLayout, bucket: int, slot: int, order: Order) -> tuple[str, str]:
    """The first and last possible encoded rank keys of a fine slot's scores, best first."""
    low, high = layout.slot_bounds(bucket, slot)  # scores low..high-1
    best, worst = (low, high - 1) if order is Order.ASC else (high - 1, low)
    last = score_prefix(worst, order)
    return score_prefix(best, order), last[:-1] + chr(ord(last[-1]) + 1)


@dataclass(frozen=True)
class SlotToBuild:
    """A slot whose tie counters a range read asked for: where its entries and counters are (a
    board, or on a sharded board the player's partition), the board's order, and the board's
    expiry (``board_expiry_s`` of the logical board)."""

    slot: SlotAddress
    order: Order
    expires_at: int | None


class SlotStillMoving(Exception):
    """A build's walks of a slot never agreed: submissions kept landing there."""


async def build_slot_ties(
    stores: Stores, policy: RankingPolicy, wanted: SlotToBuild
) -> TieReport | None:
    """Build or repair one slot's tie counters; ``None`` where there was nothing to do: they are
    whole already, or the slot is not crowded. ``SlotStillMoving`` where it changed between
    every two walks.

    A build walks only the slot's entries on RankIndex (a key range), twice, ``pass_gap_s`` apart
    (longer than the index's lag), with the tie counters read between; where the walks disagree
    (submissions still landing) it waits twice as long and walks again, comparing each walk with
    the one before, ``WALKS`` walks at most. Where two agree and the slot holds more than
    ``build_group`` entries, ``app.services.ranking.ties`` writes its counts, marks its rows,
    gives it its grain and cuts, and seals it last. A submission that overtakes it leaves the
    slot unsealed, or with counts that do not add up: an honest range until the next build, never
    a wrong exact rank."""
    group = policy.build_group
    board_id, bucket, slot = wanted.slot
    if group is None or await _whole(stores.counters, wanted.slot, group=group):
        return None  # its ranges are cut chunks past the cap, which no rebuild splits
    between = slot_key_range(policy.layout, bucket, slot, wanted.order)
    second = await _walk(stores.index, board_id, between)
    for attempt in range(WALKS - 1):
        first = second
        if len(first) <= group:
            return None
        stored = await stores.counters.read_ties(board_id, bucket, slot)
        await asyncio.sleep(policy.pass_gap_s * 2**attempt)
        second = await _walk(stores.index, board_id, between)
        if [e.key for e in first] == [e.key for e in second]:
            break
    else:
        log.info("slot_build_deferred", board=board_id, bucket=bucket, slot=slot, walks=WALKS)
        raise SlotStillMoving(f"slot {bucket}/{slot} of {board_id} moved between every walk")
    walk = TieWalk(board_id, {(bucket, slot): second}, {(bucket, slot): stored})
    (report,) = await reconcile_ties(
        stores.counters,
        stores.standings,
        walk,
        group=group,
        apply=True,
        expires_at=wanted.expires_at,
    )
    log.info(
        "slot_ties_built",
        board=board_id,
        bucket=bucket,
        slot=slot,
        entries=report.entries,
        grain=report.grain,
        skipped=report.skipped,
        unwritten=report.unwritten,
    )
    return report


async def _whole(counters: CounterStore, at: SlotAddress, *, group: int) -> bool:
    """Whether the slot's tie counters are built, sealed, count every row in it and leave no
    uncut chunk over ``group``: nothing to build (two small reads, where a walk reads every entry
    of the slot twice)."""
    board_id, bucket, slot = at
    ties = await counters.read_ties(board_id, bucket, slot)
    if ties.grain is None or not ties.sealed:
        return False
    if any(
        n > group for sk, n in ties.counts.items() if sk.startswith(LEVEL_B) and sk not in ties.cuts
    ):
        return False  # a chunk that grew past the cap since its build: cut it
    fine = (await counters.read_counters(board_id, buckets=[bucket])).fine.get((bucket, slot), 0)
    # Adding up at every level means every row is marked where the slot counts it: a row that
    # joined a chunk while it was being cut (counted in B, not in C) makes a rebuild worth it.
    return adds_up(ties.counts, ties.cuts, slot_count=fine)


async def _walk(index: BoardIndex, board_id: str, between: tuple[str, str]) -> list[IndexedKey]:
    found: list[IndexedKey] = []
    async for page in index.board_keys(board_id, page_size=PAGE_SIZE, between=between):
        found.extend(page)
    return found


async def _crowded(ranks: RankReader, at: SlotAddress, *, cap: int) -> bool:
    """Whether the slot's fine counter holds more than ``cap`` players, so that a rank in it can
    be a range: one item, read eventually (half a read unit), before a walk that reads every entry
    of the slot twice. (One at most ``cap`` ranks its players exactly with no tie counters:
    building it then would cost every submission to it tie items for nothing, and choose its
    grain from too few players to be fit for those to come.)"""
    board_id, bucket, slot = at
    return (await ranks.fine_counts(board_id, bucket, slot, slot)).get(slot, 0) > cap


class SlotBuilds:
    """Per task: at most one build of a slot at a time, each slot built at most once every
    ``every_s``; at most ``max_slots`` remembered. Two ways in: a rank read that met a range
    (``wanted``), and a submission that landed in a slot with no grain (``landed``, counted until
    the slot's counter says it is crowded). ``close`` cancels the builds under way (a build cut
    short leaves its slot unsealed: a range until the next). A slot whose cut group has outgrown
    the cap stays a range however often it is built, and must not be read for it on every rank
    read."""

    def __init__(
        self,
        stores: Stores,
        policy: RankingPolicy,
        *,
        every_s: float = 60.0,
        max_slots: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stores = stores
        self._policy = policy
        self._tried: Recent[SlotAddress, None] = Recent(
            max_entries=max_slots, ttl_s=every_s, clock=clock
        )
        self._landed: Recent[SlotAddress, int] = Recent(max_entries=max_slots, clock=clock)
        self._running: dict[SlotAddress, asyncio.Task[TieReport | None]] = {}

    def wanted(self, board_id: str, key: RankKey, *, expires_at: int | None) -> None:
        """A rank of ``key`` could be only a range: build its slot's tie counters, in the
        background, unless this task is building them or built them within ``every_s``.
        ``board_id`` is where the slot's entries and counters are: the board's id, or on a
        sharded board the player's partition's (``app.domain.shards``: a build walks one index
        partition); ``expires_at`` is the board's (``board_expiry_s`` of the logical board)."""
        group = self._policy.build_group
        at = (board_id, *self._policy.layout.slot_of(key.score))
        if group is None or at in self._tried or at in self._running:
            return
        self._start(SlotToBuild(at, key.order_by, expires_at), check=False)

    def landed(self, board_id: str, key: RankKey, *, expires_at: int | None) -> None:
        """A submission of this task put ``key`` in its slot (a new entry there), having read no
        grain for it: counted, and every ``cap / CHECKS_PER_CAP`` of them, the slot's counter is
        read in the background and, where it holds more than the cap, the slot built as
        ``wanted`` builds it. Nothing is read for a slot that this task has not seen that many
        submissions land in since it last looked."""
        if self._policy.build_group is None:
            return
        at = (board_id, *self._policy.layout.slot_of(key.score))
        seen = (self._landed.get(at) or 0) + 1
        every = max(1, self._policy.cap // CHECKS_PER_CAP)
        if seen < every or at in self._tried or at in self._running:
            self._landed.put(at, seen)
            return
        self._landed.forget(at)
        self._start(SlotToBuild(at, key.order_by, expires_at), check=True)

    def _start(self, wanted: SlotToBuild, *, check: bool) -> None:
        # The build is no part of the request that asked for it: its calls are not the request's.
        context = contextvars.copy_context()
        context.run(telemetry.current_stats.set, None)
        task = asyncio.get_running_loop().create_task(
            self._build(wanted, check=check), context=context
        )
        self._running[wanted.slot] = task
        task.add_done_callback(lambda _: self._running.pop(wanted.slot, None))

    async def _build(self, wanted: SlotToBuild, *, check: bool) -> TieReport | None:
        """``check``: first read the slot's counter, and build only where it is crowded (a slot
        found not to be is not held: the next submissions counted there look again)."""
        try:
            if check and not await _crowded(self._stores.ranks, wanted.slot, cap=self._policy.cap):
                return None
            self._tried.put(wanted.slot, None)
            return await build_slot_ties(self._stores, self._policy, wanted)
        except SlotStillMoving:
            # Submissions kept landing through every walk (a round still under way, or a busy
            # task's slow one): the next that land or read there start the build again, rather
            # than leaving the slot to ranges until ``every_s`` has passed.
            self._tried.forget(wanted.slot)
            return None
        except LeaderboardError as exc:
            board_id, bucket, slot = wanted.slot
            log.warning(
                "slot_build_failed", board=board_id, bucket=bucket, slot=slot, error=exc.detail
            )
            return None

    def forget(self) -> None:
        """Forget which slots were tried and what landed: the next range read of any starts a
        build (tests)."""
        self._tried.forget()
        self._landed.forget()

    @property
    def busy(self) -> bool:
        """A build is under way."""
        return bool(self._running)

    async def settled(self) -> None:
        """Until every build under way has finished (tests, and a task shutting down cleanly)."""
        while self._running:
            await asyncio.gather(*list(self._running.values()), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._running.values()):
            task.cancel()
        await asyncio.gather(*list(self._running.values()), return_exceptions=True)
