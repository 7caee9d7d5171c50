"""A sweep over a moderated player's rows of a game (decision 0036): each visible row hidden, or
(a restore's) each hidden row shown again, every variant, period and shard found by one Query by
player; passes until one finds nothing to do, as erasure runs. Each row changes with its counters
(and its slot's tie counters) in one transaction conditioned on the row as read: a submission
that wrote in between has the row read again and the work tried again."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import structlog

from app import telemetry
from app.domain.buckets import BucketLayout
from app.domain.models import CounterDelta, Standing
from app.domain.shards import board_of_partition
from app.domain.ties import TiePlace
from app.errors import (
    BoardBeingSeeded,
    ConditionFailed,
    LeaseHeld,
    Throttled,
    TransactionCancelled,
    Unavailable,
)
from app.services.ports import Stores
from app.services.work import all_or_none, wait_before

log = structlog.get_logger(__name__)

PASSES = 5
_CONCURRENCY = 16
_MAX_ATTEMPTS = 8
_BACKOFF_BASE_S = 0.02
_BACKOFF_CAP_S = 1.0


@dataclass(frozen=True)
class SweepAsk:
    """Whose rows of which game, and which way: ``hide`` (since ``since_ms``) or show."""

    player_id: str
    game: str
    hide: bool
    since_ms: int
    now_s: int


async def sweep(stores: Stores, layout: BucketLayout, ask: SweepAsk) -> int:
    """Passes over the player's rows of the game until one finds nothing to do; the rows changed.
    ``BoardBeingSeeded`` while a seeding lease holds one of the boards, ``Unavailable`` when a
    row stays too contended: what was done stays done, and running it again finishes it."""
    changed = 0
    gate = asyncio.Semaphore(_CONCURRENCY)

    async def one(row: Standing) -> bool:
        async with gate:
            return await change_row(stores, layout, ask, row)

    for _ in range(PASSES):
        rows = await stores.moderation.rows_in_game(ask.player_id, ask.game)
        due = [row for row in rows if row.hidden != ask.hide]
        if not due:
            return changed
        done = sum(await all_or_none(*(one(row) for row in due)))
        if not done:
            return changed  # each was done meanwhile, or is no longer this sweep's to do
        changed += done
    log.warning("moderation_rows_keep_appearing", game=ask.game)
    return changed


async def change_row(stores: Stores, layout: BucketLayout, ask: SweepAsk, row: Standing) -> bool:
    """Hide (or show) one row, reading it again after a cancelled try; whether this did it."""
    board_id = board_of_partition(row.board_id)
    current: Standing | None = row
    for attempt in range(_MAX_ATTEMPTS):
        if attempt:
            await wait_before(attempt, base_s=_BACKOFF_BASE_S, cap_s=_BACKOFF_CAP_S)
            current = await stores.moderation.read_row(row.board_id, ask.player_id)
        if current is None or current.hidden == ask.hide:
            return False  # gone (erased, voided), or done meanwhile (by a submission, say)
        try:
            if ask.hide:
                await _hide(stores, layout, ask, current)
            else:
                await _show(stores, layout, ask, current)
        except ConditionFailed:
            # Restored (or moderated again) meanwhile: the row is that one's to change.
            log.info("moderation_changed_meanwhile", board=board_id)
            return False
        except LeaseHeld:
            raise BoardBeingSeeded(
                f"board {board_id} is being seeded; moderate the player again when it is done "
                "(the record is kept, and what was done stays done)",
                retry_after=30,
            ) from None
        except TransactionCancelled as cancelled:
            telemetry.transaction_cancelled("moderation", cancelled.kind)
            log.info("moderation_transaction_cancelled", board=board_id, reason=cancelled.kind)
        except Throttled:
            telemetry.transaction_cancelled("moderation", "throttled")
            log.info("moderation_throttled", board=board_id, attempt=attempt + 1)
        else:
            telemetry.rows_moderated("hidden" if ask.hide else "shown")
            return True
    raise Unavailable(
        f"board {board_id} is too contended to moderate the player now; run it again",
        retry_after=1,
    )


async def _hide(stores: Stores, layout: BucketLayout, ask: SweepAsk, row: Standing) -> None:
    mark = row.tie_mark
    tie = None if mark is None else TiePlace.of(row.entry.key, mark)
    counters = (CounterDelta(*layout.slot_of(row.entry.score), -1, tie),)
    await stores.moderation.hide_row(row, counters=counters, since_ms=ask.since_ms, now_s=ask.now_s)


async def _show(stores: Stores, layout: BucketLayout, ask: SweepAsk, row: Standing) -> None:
    """Back into its counters as a new entry in its slot is: into the slot's tie counters too
    where the slot is crowded (its grain read now, as a submission reads it)."""
    key = row.entry.key
    bucket, slot = layout.slot_of(key.score)
    grains = await stores.submissions.read_grains([(row.board_id, bucket, slot)])
    ties = grains.get((row.board_id, bucket, slot))
    tie = None if ties is None else TiePlace.of(key, ties.mark_of(key))
    await stores.moderation.show_row(
        row,
        counters=(CounterDelta(bucket, slot, 1, tie),),
        tie_mark=None if tie is None else tie.mark,
        now_s=ask.now_s,
    )
