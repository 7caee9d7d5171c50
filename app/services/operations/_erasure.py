"""Erasure (GDPR): remove a player's rows, fix the counters, scrub them from snapshots and from
the stored responses of their submissions; idempotent, and reports what it removed
(``erase_player``; docs/operations.md).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

import structlog

from app import telemetry
from app.domain.buckets import BucketLayout
from app.domain.keys import is_valid_id
from app.domain.models import CounterDelta, Standing
from app.domain.shards import board_of_partition
from app.domain.ties import TiePlace
from app.errors import (
    BoardBeingSeeded,
    ConditionFailed,
    InvalidInput,
    ItemBusy,
    LeaderboardError,
    LeaseHeld,
    Throttled,
    TransactionCancelled,
    Unavailable,
)
from app.services.ports import ErasureMarks, Membership, PlayerRecord, Stores
from app.services.work import all_or_none, persist, wait_before

log = structlog.get_logger(__name__)

_PASSES = 5
_CONCURRENCY = 16
_BACKOFF_BASE_S = 0.02
_BACKOFF_CAP_S = 1.0
_MAX_ATTEMPTS = 8
"""Tries at one row or snapshot, before the erasure stops (``Unavailable``: run it again)."""
SNAPSHOT_GRACE = timedelta(minutes=5)
"""A membership whose snapshot is not written yet, younger than this, is left for a later run."""
MARK_FOR = timedelta(minutes=2)
"""How long the mark that refuses the player's submissions outlives an eraser that died."""

T = TypeVar("T")


@dataclass(frozen=True)
class ErasureReport:
    player_id: str
    boards: int
    snapshots: int
    idempotency_records: int
    pending_snapshots: int = 0
    """Memberships whose snapshot was still being written: run the erasure again in a few
    minutes to scrub those (the rest is done)."""
    claims: int = 0
    """Rewards the player had claimed (the ledger's records of the claims answered: the API
    counts them with the idempotency records)."""

    @property
    def complete(self) -> bool:
        return self.pending_snapshots == 0


async def erase_player(
    stores: Stores, layout: BucketLayout, player_id: str, *, now: datetime
) -> ErasureReport:
    """Erase ``player_id`` everywhere; a second call finds nothing and reports zeros. The player
    is marked first (``MARK_FOR``), so that their submissions are refused; then a pass
    (one Query by player, which finds every row of theirs) removes what it finds, until one finds
    nothing: each standing deleted with its counters' decrements in one transaction (conditioned
    on the row as read and on no seeding lease), each snapshot they are in scrubbed (their place
    and score stay, so the others' ranks stay true), each idempotency record deleted. Standings go
    first, so a snapshot being taken meanwhile leaves them out or has written a membership the
    next pass finds. Raises ``InvalidInput`` for an id that is not a player id,
    ``BoardBeingSeeded`` while a lease holds one of their boards, ``Unavailable`` when DynamoDB
    is: what was erased stays erased, run it again (docs/operations.md)."""
    if not is_valid_id(player_id):
        raise InvalidInput(
            f"{player_id!r} is not a player id",
            errors=[{"field": "playerId", "message": "not a player id"}],
        )
    marks = stores.erasures
    await persist(lambda: marks.mark_erasing(player_id, until=int((now + MARK_FOR).timestamp())))
    eraser = _Eraser(stores, layout, player_id, now)
    try:
        for _ in range(_PASSES):
            if not await eraser.run_pass():
                break
        else:
            log.warning("erasure_rows_keep_appearing", player=player_id)
    finally:
        # Also when the erasure stops part-way (what was erased stays erased; run it again):
        # should this fail too, the mark lapses on its own.
        await _clear_quietly(marks, player_id)
    report = eraser.report()
    log.info(
        "player_erased",
        player=player_id,
        boards=report.boards,
        snapshots=report.snapshots,
        idempotency_records=report.idempotency_records,
        claims=report.claims,
        pending_snapshots=report.pending_snapshots,
    )
    return report


async def _clear_quietly(marks: ErasureMarks, player_id: str) -> None:
    try:
        await persist(lambda: marks.clear_erasing(player_id))
    except LeaderboardError as exc:
        log.warning("erasure_mark_not_cleared", player=player_id, reason=type(exc).__name__)


class _Eraser:
    def __init__(self, stores: Stores, layout: BucketLayout, player_id: str, now: datetime) -> None:
        self._stores = stores
        self._player = player_id
        self._layout = layout
        self._now_s = int(now.timestamp())
        self._attempts = _MAX_ATTEMPTS
        self._grace_s = SNAPSHOT_GRACE.total_seconds()
        self._gate = asyncio.Semaphore(_CONCURRENCY)
        self._boards = self._snapshots = self._records = self._claims = 0
        self._pending: set[tuple[str, str]] = set()

    def report(self) -> ErasureReport:
        return ErasureReport(
            self._player,
            self._boards,
            self._snapshots,
            self._records,
            len(self._pending),
            self._claims,
        )

    async def run_pass(self) -> bool:
        """One Query and the work it finds; ``False`` when it found nothing to do."""
        rows = await self._stores.standings.rows_of_player(self._player)
        memberships = [m for m in rows.memberships if (m.board_id, m.taken_at) not in self._pending]
        if rows.unknown:
            log.warning("erasure_unknown_rows", player=self._player, rows=rows.unknown)
        records = rows.records
        if (
            not (rows.standings or rows.hidden or memberships or records or rows.moderated_games)
            and not rows.claims
            and not rows.placements
            and not rows.leagues
        ):
            return False
        # Standings first: from here on, no new snapshot can include the player. Rows hidden by
        # moderation go too (they hold no counts), and then the moderation records.
        erased = await self._each([*rows.standings, *rows.hidden], self._erase_standing)
        self._boards += sum(erased)
        await self._each(rows.moderated_games, self._erase_moderation)
        scrubbed, erased_records, erased_claims, _, _ = await all_or_none(
            self._each(memberships, self._erase_membership),
            self._each(records, self._erase_record),
            self._each(rows.claims, self._erase_claim),
            # The seat stays taken (decision 0039): the board's count is not given back. A
            # league's moves of the player's cohort lose their id; their league records go.
            self._each(rows.placements, functools.partial(self._erase_placement, rows.cohorts)),
            self._each(rows.leagues, self._erase_league),
        )
        self._snapshots += sum(scrubbed)
        self._records += sum(erased_records)
        self._claims += sum(erased_claims)
        return True

    async def _each(self, items: Sequence[T], work: Callable[[T], Awaitable[bool]]) -> list[bool]:
        async def gated(item: T) -> bool:
            async with self._gate:
                return await work(item)

        return await all_or_none(*(gated(item) for item in items))

    async def _backoff(self, attempt: int) -> None:
        await wait_before(attempt, base_s=_BACKOFF_BASE_S, cap_s=_BACKOFF_CAP_S)

    async def _erase_standing(self, row: Standing) -> bool:
        # The row's sort key is its board's id, or on a sharded board one partition's: its
        # counters are that partition's (as the row's transaction fixes them), while the lease
        # that holds it, and what is said of it, are the board's.
        board_id = board_of_partition(row.board_id)
        current: Standing | None = row
        maybe_ours = False
        for attempt in range(self._attempts):
            if attempt:
                await self._backoff(attempt)
                current = await self._stores.moderation.read_row(row.board_id, self._player)
            if current is None:
                # Gone meanwhile: by another erasure or its TTL, or by an attempt of ours that
                # was throttled only on botocore's resend, its first send committed with the
                # response lost (the resend's token would have said so, had it been answered).
                return maybe_ours
            bucket, slot = self._layout.slot_of(current.entry.score)
            mark = current.tie_mark
            tie = None if mark is None else TiePlace.of(current.entry.key, mark)
            # A hidden row (decision 0036) left its counters when it was hidden.
            leaving = () if current.hidden else (CounterDelta(bucket, slot, -1, tie),)
            try:
                await self._stores.standings.delete_standing(
                    current, counters=leaving, now_s=self._now_s
                )
            except LeaseHeld:
                raise BoardBeingSeeded(
                    f"board {board_id} is being seeded; erase the player again when it "
                    "is done (what was erased stays erased)",
                    retry_after=30,
                ) from None
            except TransactionCancelled as cancelled:
                telemetry.transaction_cancelled("erasure", cancelled.kind)
                log.info(
                    "erasure_transaction_cancelled",
                    board=board_id,
                    attempt=attempt + 1,
                    reason=cancelled.kind,
                )
            except Throttled:
                # Not contention, but an erasure has no client to retry it: wait, and try again.
                maybe_ours = True
                telemetry.transaction_cancelled("erasure", "throttled")
                log.info("erasure_throttled", board=board_id, attempt=attempt + 1)
            else:
                return True
        raise Unavailable(
            f"board {board_id} is too contended to erase the player now; run it again",
            retry_after=1,
        )

    async def _erase_membership(self, membership: Membership) -> bool:
        board_id, taken_at = membership.board_id, membership.taken_at
        tried = False
        for attempt in range(self._attempts):
            await self._backoff(attempt)
            snapshot = await self._stores.snapshots.get_snapshot(board_id, taken_at)
            if snapshot is None:
                age = self._now_s - (membership.created_at or 0)
                if age < self._grace_s:
                    # Its snapshot may be being written right now: leave it for a later run.
                    self._pending.add((board_id, taken_at))
                    log.warning("erasure_snapshot_pending", player=self._player, board=board_id)
                    return False
                # A snapshot that was never written (its writer failed): nothing to scrub.
                await persist(
                    lambda: self._stores.snapshots.delete_membership(
                        self._player, board_id, taken_at
                    )
                )
                return False
            place = next(
                (i for i, e in enumerate(snapshot.entries) if e.player_id == self._player), None
            )
            if place is not None:
                try:
                    await self._stores.snapshots.replace_snapshot_entry(
                        board_id,
                        taken_at,
                        index=place,
                        player_id=self._player,
                        entry=snapshot.entries[place].scrubbed(),
                    )
                except ConditionFailed:
                    # The entry changed under us: scrubbed by this write, resent after its answer
                    # was lost (the next read finds the player gone), or by another erasure.
                    tried = True
                    continue
                except (ItemBusy, Throttled):
                    continue
            await persist(
                lambda: self._stores.snapshots.delete_membership(self._player, board_id, taken_at)
            )
            return place is not None or tried
        raise Unavailable(f"could not scrub snapshot {board_id} {taken_at}; run it again")

    async def _erase_moderation(self, game: str) -> bool:
        await persist(lambda: self._stores.moderation.erase_moderation(self._player, game))
        return True

    async def _erase_record(self, found: PlayerRecord) -> bool:
        await persist(lambda: self._stores.requests.erase_record(self._player, found.record_id))
        return True

    async def _erase_placement(self, cohorts: dict[str, str], board_id: str) -> bool:
        entrants = self._stores.entrants
        cohort_id = cohorts.get(board_id)
        # The placement first: a close putting moves after this finds it gone and leaves the
        # player out (decision 0040); moves put before are scrubbed here.
        await persist(lambda: entrants.erase_placement(self._player, board_id))
        if cohort_id is not None:
            await persist(lambda: entrants.scrub_moves(board_id, cohort_id, self._player))
        return True

    async def _erase_league(self, league: str) -> bool:
        await persist(lambda: self._stores.entrants.erase_league(self._player, league))
        return True

    async def _erase_claim(self, board_id: str) -> bool:
        await persist(lambda: self._stores.claims.erase_claim(self._player, board_id))
        return True
