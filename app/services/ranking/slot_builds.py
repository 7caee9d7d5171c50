"""Tie counters built while a board is live: a rank read that can only answer a range in a
crowded slot whose tie counters are missing, unsealed or short of rows has its task build (or
repair) that one slot's in the background, with no operator and no wait for the hourly reconcile
(decision 0018).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from app.domain.buckets import BucketLayout
from app.domain.keys import Order, RankKey, score_prefix
from app.domain.ties import LEVEL_B, adds_up
from app.errors import LeaderboardError
from app.services.memory import Recent
from app.services.policies import RankingPolicy
from app.services.ports import BoardIndex, CounterStore, IndexedKey, SlotAddress, Stores
from app.services.ranking.ties import TieReport, TieWalk, reconcile_ties

log = structlog.get_logger(__name__)

PAGE_SIZE = 1_000
WALKS = 6
"""Most walks of one build: until two in a row agree, each wait twice the one before
(``pass_gap_s``, then 2, 4, 8 and 16 times it): a round's results landing while the build walks
defer it by seconds, not by a minute."""


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


async def build_slot_ties(
    stores: Stores, policy: RankingPolicy, wanted: SlotToBuild
) -> TieReport | None:
    """Build or repair one slot's tie counters; ``None`` where there was nothing to do: they are
    whole already, the slot is not crowded, or it changed between the walks.

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
        return None
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


class SlotBuilds:
    """Per task: at most one build of a slot at a time, each slot tried at most once every
    ``every_s``; at most ``max_slots`` remembered. ``close`` cancels the builds under way (a build
    cut short leaves its slot unsealed: a range until the next). A slot whose cut group has
    outgrown the cap stays a range however often it is built, and must not be read for it on
    every rank read."""

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
        self._running: set[asyncio.Task[TieReport | None]] = set()

    def wanted(self, board_id: str, key: RankKey, *, expires_at: int | None) -> None:
        """A rank read of ``key`` could answer only a range: build its slot's tie counters, in
        the background, unless this task tried that slot within ``every_s``. ``board_id`` is
        where the slot's entries and counters are: the board's id, or on a sharded board the
        player's partition's (``app.domain.shards``: a build walks one index partition);
        ``expires_at`` is the board's (``board_expiry_s`` of the logical board)."""
        if self._policy.build_group is None:
            return
        at = (board_id, *self._policy.layout.slot_of(key.score))
        if at in self._tried:
            return
        self._tried.put(at, None)
        task = asyncio.ensure_future(self._build(SlotToBuild(at, key.order_by, expires_at)))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _build(self, wanted: SlotToBuild) -> TieReport | None:
        try:
            return await build_slot_ties(self._stores, self._policy, wanted)
        except LeaderboardError as exc:
            board_id, bucket, slot = wanted.slot
            log.warning(
                "slot_build_failed", board=board_id, bucket=bucket, slot=slot, error=exc.detail
            )
            return None

    def forget(self) -> None:
        """Forget which slots were tried: the next range read of any starts a build (tests)."""
        self._tried.forget()

    @property
    def busy(self) -> bool:
        """A build is under way."""
        return bool(self._running)

    async def settled(self) -> None:
        """Until every build under way has finished (tests, and a task shutting down cleanly)."""
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._running):
            task.cancel()
        await asyncio.gather(*list(self._running), return_exceptions=True)
