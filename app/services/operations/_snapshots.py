"""Taking snapshots: a board's top N and player count, frozen in the Snapshots table, on demand
and, once per board, when its period has closed (they are read back by ``app.services.reads``).
How a snapshot is taken, kept clear of erased players and fitted in one item: docs/operations.md
and docs/limits-and-failures.md.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

import structlog

from app.domain.calendar import board_is_expired, period_closes_at
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition
from app.domain.events import Event
from app.domain.models import Entry
from app.domain.periods import Board
from app.errors import (
    ConditionFailed,
    Conflict,
    InvalidInput,
    LeaderboardError,
    NotFound,
    TransactionCancelled,
    Unavailable,
)
from app.services.operations._close import closed_event
from app.services.operations._league_close import settle_league
from app.services.ports import (
    BoardRegistry,
    Snapshot,
    SnapshotEntry,
    SnapshotFit,
    SnapshotReason,
    Stores,
)
from app.services.ranking.pages import player_count, top_entries
from app.services.registry import register_board
from app.services.rules.held import Definitions
from app.services.work import Progress, persist

log = structlog.get_logger(__name__)

DEFAULT_TOP_N = 100
MAX_TOP_N = 1000
"""A snapshot is one item (at most 400 KB on DynamoDB): 1,000 entries of about 200 bytes fit with
room, but not 1,000 of the widest (64-character ids and names of 4-byte characters, about 410 B
each): the store's ``fit`` decides."""

_COLLISION_ATTEMPTS = 5
_CLOSING_CONCURRENCY = 4


@dataclass(frozen=True)
class ShortenedSnapshot:
    """A final (closed) snapshot that holds only the first ``kept`` of its top ``top_n``: all of
    them would have taken ``item_bytes``, over the store's ``limit_bytes`` for one item."""

    board_id: str
    taken_at: str
    top_n: int
    kept: int
    item_bytes: int
    limit_bytes: int


@dataclass
class ClosedPeriodsReport:
    """What one run of ``snapshot_closed_periods`` did, by board id."""

    taken: list[Snapshot] = field(default_factory=list)
    shortened: list[ShortenedSnapshot] = field(default_factory=list)
    """Those of ``taken`` whose whole top did not fit in one item: they keep what fits."""
    already_taken: list[str] = field(default_factory=list)
    """Closed boards that had their snapshot already (or that another run took meanwhile)."""
    raced: list[str] = field(default_factory=list)
    """Those of ``already_taken`` that another task or run closed while this one tried."""
    expired: list[str] = field(default_factory=list)
    """Closed boards past their retention with no snapshot: their rows may be gone, so none is
    taken. Anything here means the job did not run for longer than the retention."""
    failed: list[str] = field(default_factory=list)


# ---- taking snapshots -------------------------------------------------------------------------


async def take_snapshot(
    stores: Stores,
    board: Board,
    definition: BoardDefinition,
    *,
    now: datetime,
    top_n: int = DEFAULT_TOP_N,
    settle: timedelta | None = None,
) -> Snapshot:
    """Snapshot the board's top ``top_n`` (1..1000) and player count now.

    With ``settle``, the board's final (closed) snapshot, for a day or week board whose period has
    closed (``settle`` after its end): taken at most once per board (``Conflict`` names the
    existing one), keeping the longest part of its top that fits in one item, since a scheduled
    archive that fails every run is worse than a shorter one. ``NotFound`` for a board past its
    retention (its rows are, or are being, deleted); ``InvalidInput`` for a manual snapshot whose
    top does not fit in one item (nothing written)."""
    _check_top_n(top_n)
    if board_is_expired(board, now=now, definition=definition):
        raise NotFound(f"board {board.board_id} is past its retention; its rows are not kept")
    if settle is None:
        snapshot, _ = await _take(stores, board, definition, now=now, top_n=top_n, closing=None)
        return snapshot
    closes = period_closes_at(board, definition, settle=settle)
    if closes is None or closes > now:
        raise InvalidInput(f"the period of board {board.board_id} has not closed yet")
    await register_board(registry=stores.registry, board=board, definition=definition)
    taken = await _take_closing(stores, board, definition, now=now, top_n=top_n)
    if taken is None:
        existing = await _closed_snapshot_at(stores.registry, board.board_id)
        raise Conflict(
            f"board {board.board_id} already has its final (closed) snapshot"
            + (f" ({existing})" if existing else "")
        )
    return taken[0]


def _check_top_n(top_n: int) -> None:
    if not 1 <= top_n <= MAX_TOP_N:
        raise InvalidInput(
            f"topN must be in 1..{MAX_TOP_N}", errors=[{"field": "topN", "message": "out of range"}]
        )


async def _closed_snapshot_at(registry: BoardRegistry, board_id: str) -> str | None:
    for registered in await registry.registered_boards():
        if registered.board_id == board_id:
            return registered.closed_snapshot_at
    return None


_Taken = tuple[Snapshot, ShortenedSnapshot | None]
"""A snapshot as written, and how it was shortened to fit, if it was."""


async def _take_closing(
    stores: Stores, board: Board, definition: BoardDefinition, *, now: datetime, top_n: int
) -> _Taken | None:
    # A league's moves first (decision 0040): put once, they are the event's whoever closes.
    league = await settle_league(stores, board, definition)
    extra = {} if league is None else league.event_fields()
    event_of = functools.partial(closed_event, board, definition.calendar, extra=extra)
    try:
        return await _take(stores, board, definition, now=now, top_n=top_n, closing=event_of)
    except _AlreadyClosed:
        return None


class _AlreadyClosed(Exception):
    """Another run wrote the board's final (closed) snapshot first."""


async def _take(
    stores: Stores,
    board: Board,
    definition: BoardDefinition,
    *,
    now: datetime,
    top_n: int,
    closing: Callable[[Snapshot], Event] | None,
) -> _Taken:
    """A snapshot written: the board's final one, of its close (``closing`` makes its event),
    or a manual one."""
    board_id, shards = board.board_id, definition.shards
    reason: SnapshotReason = "manual" if closing is None else "closed"
    entries, players = await asyncio.gather(
        top_entries(stores.index, board_id, top_n, shards),
        player_count(stores.counters, board_id, shards),
    )
    archive = stores.snapshots
    taken_ms = to_ms(now)
    whole = Snapshot(
        board_id=board_id,
        taken_at=iso_ms(taken_ms),
        reason=reason,
        player_count=players,
        top_n=top_n,
        entries=_ranked(entries),
    )
    # Measured before anything is written: the memberships and the later attempts' times (of
    # the same length) only ever keep the item as large or make it smaller.
    fit = archive.fit(whole)
    if not fit.fits and closing is None:
        raise _too_large(whole, fit)
    fitting = replace(whole, entries=whole.entries[: fit.entries_that_fit])
    for _ in range(_COLLISION_ATTEMPTS):
        snapshot = await _with_memberships(
            stores, replace(fitting, taken_at=iso_ms(taken_ms)), shards
        )
        members = _members(snapshot)
        unwritten = functools.partial(_unwrite_memberships, stores, snapshot, members)
        try:
            if closing is not None:
                # One event for every try of this snapshot: its id marks the close as this one's.
                event = closing(snapshot)
                closing_put = functools.partial(archive.put_closing_snapshot, snapshot, event)
                if not await persist(closing_put):
                    await unwritten()
                    raise _AlreadyClosed
            else:
                await persist(functools.partial(archive.put_snapshot, snapshot))
        except ConditionFailed:
            # Another snapshot of this board in this very millisecond: the next one is free.
            await unwritten()
            taken_ms += 1
            continue
        except TransactionCancelled:
            # A conflict with a run closing the same board: the next attempt sees its mark.
            await unwritten()
            await asyncio.sleep(random.uniform(0, 0.2))
            taken_ms += 1
            continue
        log.info(
            "snapshot_taken",
            board=board_id,
            taken_at=snapshot.taken_at,
            reason=reason,
            entries=len(snapshot.entries),
            player_count=snapshot.player_count,
        )
        return snapshot, None if fit.fits else _shortened(snapshot, fit)
    raise Unavailable(f"could not find a free snapshot time for board {board_id}", retry_after=1)


async def _unwrite_memberships(stores: Stores, snapshot: Snapshot, members: list[str]) -> None:
    """Remove the memberships of a snapshot that was not written, but those of the snapshot
    that was, at the same board and time (another run's, which took the same millisecond):
    they are the same rows, and erasure finds its players through them."""
    stored = await persist(
        functools.partial(stores.snapshots.get_snapshot, snapshot.board_id, snapshot.taken_at)
    )
    kept = set() if stored is None else {e.player_id for e in stored.entries}
    gone = [player for player in members if player not in kept]
    if gone:
        await persist(
            functools.partial(
                stores.snapshots.remove_memberships, snapshot.board_id, snapshot.taken_at, gone
            )
        )


def _too_large(snapshot: Snapshot, fit: SnapshotFit) -> InvalidInput:
    largest = fit.entries_that_fit
    return InvalidInput(
        f"a snapshot of the top {snapshot.top_n} of board {snapshot.board_id} would take "
        f"{fit.item_bytes:,} bytes, over the {fit.limit_bytes:,} bytes one snapshot can hold; "
        f"the largest top that fits this board now is {largest:,}",
        errors=[
            {
                "field": "top",
                "message": f"too many entries for one snapshot: at most {largest} fit now",
                "itemBytes": fit.item_bytes,
                "itemLimitBytes": fit.limit_bytes,
                "largestTop": largest,
            }
        ],
    )


def _shortened(snapshot: Snapshot, fit: SnapshotFit) -> ShortenedSnapshot:
    shortened = ShortenedSnapshot(
        board_id=snapshot.board_id,
        taken_at=snapshot.taken_at,
        top_n=snapshot.top_n,
        kept=len(snapshot.entries),
        item_bytes=fit.item_bytes,
        limit_bytes=fit.limit_bytes,
    )
    log.warning(
        "snapshot_shortened",
        board=shortened.board_id,
        taken_at=shortened.taken_at,
        top_n=shortened.top_n,
        kept=shortened.kept,
        item_bytes=shortened.item_bytes,
        limit_bytes=shortened.limit_bytes,
    )
    return shortened


def _ranked(entries: Sequence[Entry]) -> tuple[SnapshotEntry, ...]:
    return tuple(
        SnapshotEntry(
            rank=rank,
            player_id=entry.player_id,
            display_name=entry.display_name,
            country=entry.country,
            score=entry.score,
            achieved_at=iso_ms(entry.key.achieved_at_ms),
        )
        for rank, entry in enumerate(entries, start=1)
    )


def _members(snapshot: Snapshot) -> list[str]:
    return [e.player_id for e in snapshot.entries if e.player_id is not None]


async def _with_memberships(stores: Stores, snapshot: Snapshot, shards: int) -> Snapshot:
    """Write the memberships, then keep only the players whose rows are still there: the index
    lags the table, so an entry read from it may belong to a player erased a moment ago."""
    members = _members(snapshot)
    if not members:
        return snapshot
    await persist(
        lambda: stores.snapshots.add_memberships(snapshot.board_id, snapshot.taken_at, members)
    )
    present = await stores.standings.players_on_board(snapshot.board_id, members, shards=shards)
    gone = [player for player in members if player not in present]
    if not gone:
        return snapshot
    await persist(
        lambda: stores.snapshots.remove_memberships(snapshot.board_id, snapshot.taken_at, gone)
    )
    log.info("snapshot_left_out_removed_players", board=snapshot.board_id, players=len(gone))
    kept = [e for e in snapshot.entries if e.player_id in present]
    return replace(snapshot, entries=tuple(replace(e, rank=i) for i, e in enumerate(kept, start=1)))


# ---- closed periods ---------------------------------------------------------------------------


async def snapshot_closed_periods(
    stores: Stores,
    definitions: Definitions,
    *,
    now: datetime,
    settle: timedelta,
    top_n: int = DEFAULT_TOP_N,
    progress: Progress | None = None,
) -> ClosedPeriodsReport:
    """Close every registered period board whose period has closed (``settle`` after its end:
    pass the allowed submission lateness) and that is not closed yet: its final snapshot and its
    ``board.closed`` event (``app.services.operations._close``).

    Each board's retention is its variant's definition's.

    Safe to run on a schedule and to run twice at once: each board is closed once (its snapshot
    and event written together with a mark on its registry row). A board whose whole top does not fit in
    one item keeps the longest part that does (``shortened``). A board that fails, whatever the
    error, is reported in ``failed`` and left for the next run; the others go on.
    """
    _check_top_n(top_n)
    report = ClosedPeriodsReport()
    due: list[tuple[Board, BoardDefinition]] = []
    for registered in await stores.registry.registered_boards():
        try:
            board = Board.from_id(registered.board_id)
        except ValueError:
            log.warning("registry_row_not_a_board", board=registered.board_id)
            continue
        try:
            definition = (await definitions.of(board.game, board.variant)).definition
        except LeaderboardError as exc:
            _failed(report, board, exc)
            continue
        closes = period_closes_at(board, definition, settle=settle)
        if closes is None or closes > now:
            continue
        if registered.closed_snapshot_at is not None:
            report.already_taken.append(board.board_id)
            continue
        if board_is_expired(board, now=now, definition=definition):
            report.expired.append(board.board_id)
        else:
            due.append((board, definition))
    gate = asyncio.Semaphore(_CLOSING_CONCURRENCY)
    done = 0
    if progress is not None:
        progress("snapshotting boards", 0, len(due))

    async def close(board: Board, definition: BoardDefinition) -> None:
        nonlocal done
        async with gate:
            try:
                taken = await _take_closing(stores, board, definition, now=now, top_n=top_n)
            except LeaderboardError as exc:
                _failed(report, board, exc)
                return
            finally:
                done += 1
                if progress is not None:
                    progress("snapshotting boards", done, len(due))
        if taken is None:
            report.already_taken.append(board.board_id)
            report.raced.append(board.board_id)
            return
        snapshot, shortened = taken
        report.taken.append(snapshot)
        if shortened is not None:
            report.shortened.append(shortened)

    await asyncio.gather(*(close(board, definition) for board, definition in due))
    if report.expired:
        log.warning("closed_periods_missed", boards=report.expired)
    return report


def _failed(report: ClosedPeriodsReport, board: Board, exc: LeaderboardError) -> None:
    log.warning(
        "closed_period_snapshot_failed",
        board=board.board_id,
        error=type(exc).__name__,
        detail=exc.detail,
    )
    report.failed.append(board.board_id)
