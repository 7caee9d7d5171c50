"""Snapshots: a board's top N and player count, frozen in the Snapshots table; taken on demand and,
once per board, when a day or week period has closed; listed newest first and read back.

Taking one: read the top from RankIndex and the count from the histogram; write a membership row
per player in it (``<player>`` / ``snap#<board>#<takenAt>``, so erasure finds the snapshot with its
one Query by player); check with one strongly consistent read that those players' rows still exist
(a player erased while the index still showed them is left out, and their membership removed); then
write the snapshot item, conditionally. Memberships go first, so a snapshot is never written without
them; a membership whose snapshot never got written is harmless, and erasure removes it.

Closed periods need boards to be discoverable: every board is registered once in a small registry
partition (``register_board``). The period-closed snapshot is written in one transaction with a
mark on the board's registry row, conditioned on the mark's absence, so however many runs overlap,
each board gets one period-closed snapshot.
"""

from __future__ import annotations

import asyncio
import random
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol

import structlog

from app.domain.clock import iso_ms, parse_iso_ms, to_ms
from app.domain.models import Entry, Page
from app.domain.periods import Board
from app.errors import (
    ConditionFailed,
    Conflict,
    InvalidInput,
    NotFound,
    TransactionCancelled,
    Unavailable,
)
from app.services.boards import board_is_expired

log = structlog.get_logger(__name__)

SnapshotReason = Literal["period-closed", "manual"]
REASONS: tuple[SnapshotReason, ...] = ("period-closed", "manual")
DEFAULT_TOP_N = 100
MAX_TOP_N = 1000
"""A snapshot is one item (at most 400 KB): 1,000 entries of about 200 bytes fit with room."""

_COLLISION_ATTEMPTS = 5
_CLOSING_CONCURRENCY = 4


@dataclass(frozen=True)
class SnapshotEntry:
    """One place in a snapshot. An erased player's place keeps its ``rank`` and ``score`` (so the
    other ranks and the score distribution stay as they were) and loses everything else."""

    rank: int
    player_id: str | None
    display_name: str | None
    country: str | None
    score: int | None
    achieved_at: str | None

    @property
    def erased(self) -> bool:
        return self.player_id is None

    def scrubbed(self) -> SnapshotEntry:
        return SnapshotEntry(self.rank, None, None, None, self.score, None)

    def document(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "playerId": self.player_id,
            "displayName": self.display_name,
            "country": self.country,
            "score": self.score,
            "achievedAt": self.achieved_at,
        }


@dataclass(frozen=True)
class Snapshot:
    board_id: str
    taken_at: str
    """ISO 8601 UTC with milliseconds and ``Z``: the sort key, and the snapshot's name."""
    reason: str
    player_count: int
    top_n: int
    entries: tuple[SnapshotEntry, ...]

    def document(self) -> dict[str, Any]:
        """The API body: ``{leaderboardId, snapshotTakenAt, reason, playerCount, topN, entries}``."""
        return {
            "leaderboardId": self.board_id,
            "snapshotTakenAt": self.taken_at,
            "reason": self.reason,
            "playerCount": self.player_count,
            "topN": self.top_n,
            "entries": [entry.document() for entry in self.entries],
        }


@dataclass(frozen=True)
class SnapshotSummary:
    taken_at: str
    reason: str
    player_count: int

    def document(self) -> dict[str, Any]:
        return {
            "snapshotTakenAt": self.taken_at,
            "reason": self.reason,
            "playerCount": self.player_count,
        }


@dataclass(frozen=True)
class RegisteredBoard:
    board_id: str
    expires_at: int | None
    closed_snapshot_at: str | None
    """When the board's period-closed snapshot was taken, once it has been."""


@dataclass
class ClosedPeriodsReport:
    """What one run of ``snapshot_closed_periods`` did, by board id."""

    taken: list[Snapshot] = field(default_factory=list)
    already_taken: list[str] = field(default_factory=list)
    """Closed boards that had their snapshot already (or that another run took meanwhile)."""
    expired: list[str] = field(default_factory=list)
    """Closed boards past their retention with no snapshot: their rows may be gone, so none is
    taken. Anything here means the job did not run for longer than the retention."""
    failed: list[str] = field(default_factory=list)

    def document(self) -> dict[str, Any]:
        return {
            "taken": [
                {"leaderboardId": s.board_id, "snapshotTakenAt": s.taken_at} for s in self.taken
            ],
            "alreadyTaken": self.already_taken,
            "expired": self.expired,
            "failed": self.failed,
        }


class BoardReader(Protocol):
    """What a snapshot reads of a board (``DynamoStore`` has both)."""

    async def query_board(
        self, board_id: str, *, limit: int, start: tuple[str, str] | None
    ) -> Page: ...

    async def coarse_counts(self, board_id: str) -> Mapping[int, int]: ...


class BoardRegistry(Protocol):
    async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
        """Record the board once; ``True`` if this call recorded it, ``False`` if it was known."""
        ...

    async def registered_boards(self) -> list[RegisteredBoard]: ...


class SnapshotArchive(BoardRegistry, Protocol):
    """The Snapshots table and the rows that go with it (``ArchiveStore`` implements it)."""

    async def add_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None:
        """A membership row per player, so erasure finds the snapshot by player."""
        ...

    async def remove_memberships(
        self, board_id: str, taken_at: str, player_ids: Sequence[str]
    ) -> None: ...

    async def players_on_board(self, board_id: str, player_ids: Sequence[str]) -> set[str]:
        """Which of these players have a row on the board now (strongly consistent)."""
        ...

    async def put_snapshot(self, snapshot: Snapshot) -> None:
        """Write a new snapshot; ``ConditionFailed`` if one exists with that board and time."""
        ...

    async def put_closing_snapshot(self, snapshot: Snapshot) -> bool:
        """Write the board's period-closed snapshot and mark its registry row, together; ``False``
        (nothing written) if the row is marked already, or is missing."""
        ...

    async def list_snapshots(self, board_id: str, *, limit: int) -> list[SnapshotSummary]:
        """Newest first."""
        ...

    async def get_snapshot(self, board_id: str, taken_at: str) -> Snapshot | None: ...


# ---- the registry -----------------------------------------------------------------------------


def registry_expiry(board: Board, retention: timedelta) -> int | None:
    """When a board's registry row may go: with its rows (never for all-time)."""
    expires = board.period.expires_at(retention)
    return None if expires is None else int(expires.timestamp())


async def register_board(*, archive: BoardRegistry, board: Board, retention: timedelta) -> bool:
    """Make the board discoverable by ``snapshot_closed_periods``; cheap to repeat (one
    conditional put); ``True`` the first time."""
    return await archive.register_board(
        board.board_id, expires_at=registry_expiry(board, retention)
    )


class BoardRegistrar:
    """Registers each board once per process: the first submission a process sees for a board
    pays one conditional put, later ones nothing. A failed registration is not remembered, so the
    next submission tries again. Bounded: the oldest boards are forgotten first (re-registering
    one costs a refused conditional put, nothing more)."""

    def __init__(
        self, archive: BoardRegistry, *, retention: timedelta, max_remembered: int = 10_000
    ) -> None:
        self._archive = archive
        self._retention = retention
        self._max = max_remembered
        self._known: OrderedDict[str, None] = OrderedDict()

    def knows(self, board_id: str) -> bool:
        return board_id in self._known

    async def ensure(self, board: Board) -> None:
        board_id = board.board_id
        if board_id in self._known:
            return
        await register_board(archive=self._archive, board=board, retention=self._retention)
        self._known[board_id] = None
        while len(self._known) > self._max:
            self._known.popitem(last=False)

    async def ensure_all(self, boards: Sequence[Board]) -> None:
        await asyncio.gather(*(self.ensure(board) for board in boards))


# ---- taking snapshots -------------------------------------------------------------------------


def period_closes_at(board: Board, *, settle: timedelta) -> datetime | None:
    """When a board's period is over for good: its end plus ``settle`` (the submission lateness
    allowed, since a score achieved just before the end may arrive after it); ``None`` for
    all-time, which never closes."""
    end = board.period.end()
    return None if end is None else end + settle


async def take_snapshot(
    *,
    store: BoardReader,
    archive: SnapshotArchive,
    board: Board,
    now: datetime,
    retention: timedelta,
    reason: SnapshotReason = "manual",
    top_n: int = DEFAULT_TOP_N,
    settle: timedelta = timedelta(0),
) -> Snapshot:
    """Snapshot the board's top ``top_n`` (1..1000) and player count now.

    ``reason="period-closed"`` is for a day or week board whose period has closed (``settle``
    after its end): it is taken at most once per board (``Conflict`` names the existing one).
    ``NotFound`` for a board past its retention (its rows are, or are being, deleted).
    """
    _check_top_n(top_n)
    if reason not in REASONS:
        raise InvalidInput(f"unknown snapshot reason {reason!r}: use {' or '.join(REASONS)}")
    if board_is_expired(board, now=now, retention=retention):
        raise NotFound(f"board {board.board_id} is past its retention; its rows are not kept")
    if reason == "manual":
        return await _take(store, archive, board, reason, now=now, top_n=top_n, closing=False)
    closes = period_closes_at(board, settle=settle)
    if closes is None or closes > now:
        raise InvalidInput(f"the period of board {board.board_id} has not closed yet")
    await register_board(archive=archive, board=board, retention=retention)
    taken = await _take_closing(store, archive, board, now=now, top_n=top_n)
    if taken is None:
        existing = await _closed_snapshot_at(archive, board.board_id)
        raise Conflict(
            f"board {board.board_id} already has its period-closed snapshot"
            + (f" ({existing})" if existing else "")
        )
    return taken


def _check_top_n(top_n: int) -> None:
    if not 1 <= top_n <= MAX_TOP_N:
        raise InvalidInput(
            f"topN must be in 1..{MAX_TOP_N}", errors=[{"field": "topN", "message": "out of range"}]
        )


async def _closed_snapshot_at(archive: BoardRegistry, board_id: str) -> str | None:
    for registered in await archive.registered_boards():
        if registered.board_id == board_id:
            return registered.closed_snapshot_at
    return None


async def _take_closing(
    store: BoardReader, archive: SnapshotArchive, board: Board, *, now: datetime, top_n: int
) -> Snapshot | None:
    try:
        return await _take(
            store, archive, board, "period-closed", now=now, top_n=top_n, closing=True
        )
    except _AlreadyClosed:
        return None


class _AlreadyClosed(Exception):
    """Another run wrote the board's period-closed snapshot first."""


async def _take(
    store: BoardReader,
    archive: SnapshotArchive,
    board: Board,
    reason: SnapshotReason,
    *,
    now: datetime,
    top_n: int,
    closing: bool,
) -> Snapshot:
    board_id = board.board_id
    entries, counts = await asyncio.gather(
        _top(store, board_id, top_n), store.coarse_counts(board_id)
    )
    ranked = _ranked(entries)
    taken_ms = to_ms(now)
    for _ in range(_COLLISION_ATTEMPTS):
        snapshot = Snapshot(
            board_id=board_id,
            taken_at=iso_ms(taken_ms),
            reason=reason,
            player_count=sum(counts.values()),
            top_n=top_n,
            entries=ranked,
        )
        snapshot = await _with_memberships(archive, snapshot)
        members = _members(snapshot)
        try:
            if closing:
                if not await archive.put_closing_snapshot(snapshot):
                    await archive.remove_memberships(board_id, snapshot.taken_at, members)
                    raise _AlreadyClosed
            else:
                await archive.put_snapshot(snapshot)
        except ConditionFailed:
            # Another snapshot of this board in this very millisecond: the next one is free.
            await archive.remove_memberships(board_id, snapshot.taken_at, members)
            taken_ms += 1
            continue
        except TransactionCancelled:
            # A conflict with a run closing the same board: the next attempt sees its mark.
            await archive.remove_memberships(board_id, snapshot.taken_at, members)
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
        return snapshot
    raise Unavailable(f"could not find a free snapshot time for board {board_id}", retry_after=1)


async def _top(store: BoardReader, board_id: str, top_n: int) -> list[Entry]:
    entries: list[Entry] = []
    start: tuple[str, str] | None = None
    while len(entries) < top_n:
        page = await store.query_board(board_id, limit=top_n - len(entries), start=start)
        entries.extend(page.entries)
        start = page.next_start
        if start is None:
            break
    return entries[:top_n]


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


async def _with_memberships(archive: SnapshotArchive, snapshot: Snapshot) -> Snapshot:
    """Write the memberships, then keep only the players whose rows are still there: the index
    lags the table, so an entry read from it may belong to a player erased a moment ago."""
    members = _members(snapshot)
    if not members:
        return snapshot
    await archive.add_memberships(snapshot.board_id, snapshot.taken_at, members)
    present = await archive.players_on_board(snapshot.board_id, members)
    gone = [player for player in members if player not in present]
    if not gone:
        return snapshot
    await archive.remove_memberships(snapshot.board_id, snapshot.taken_at, gone)
    log.info("snapshot_left_out_removed_players", board=snapshot.board_id, players=len(gone))
    kept = [e for e in snapshot.entries if e.player_id in present]
    return replace(snapshot, entries=tuple(replace(e, rank=i) for i, e in enumerate(kept, start=1)))


# ---- closed periods ---------------------------------------------------------------------------


async def snapshot_closed_periods(
    *,
    store: BoardReader,
    archive: SnapshotArchive,
    now: datetime,
    retention: timedelta,
    settle: timedelta,
    top_n: int = DEFAULT_TOP_N,
) -> ClosedPeriodsReport:
    """Take the period-closed snapshot of every registered day and week board whose period has
    closed (``settle`` after its end: pass the allowed submission lateness) and has none yet.

    Safe to run on a schedule and to run twice at once: each board gets one period-closed snapshot
    (written together with a mark on its registry row). A board that fails is reported and left
    for the next run; the others go on.
    """
    _check_top_n(top_n)
    report = ClosedPeriodsReport()
    due: list[Board] = []
    for registered in await archive.registered_boards():
        try:
            board = Board.from_id(registered.board_id)
        except ValueError:
            log.warning("registry_row_not_a_board", board=registered.board_id)
            continue
        closes = period_closes_at(board, settle=settle)
        if closes is None or closes > now:
            continue
        if registered.closed_snapshot_at is not None:
            report.already_taken.append(board.board_id)
        elif board_is_expired(board, now=now, retention=retention):
            report.expired.append(board.board_id)
        else:
            due.append(board)
    gate = asyncio.Semaphore(_CLOSING_CONCURRENCY)

    async def close(board: Board) -> None:
        async with gate:
            try:
                taken = await _take_closing(store, archive, board, now=now, top_n=top_n)
            except Unavailable as exc:
                log.warning("closed_period_snapshot_failed", board=board.board_id, error=str(exc))
                report.failed.append(board.board_id)
                return
        if taken is None:
            report.already_taken.append(board.board_id)
        else:
            report.taken.append(taken)

    await asyncio.gather(*(close(board) for board in due))
    if report.expired:
        log.warning("closed_periods_missed", boards=report.expired)
    return report


# ---- reading snapshots ------------------------------------------------------------------------


async def list_snapshots(
    *, archive: SnapshotArchive, board: Board, limit: int = 100
) -> list[SnapshotSummary]:
    """The board's snapshots, newest first, at most ``limit`` (1..1000)."""
    if not 1 <= limit <= 1000:
        raise InvalidInput("limit must be in 1..1000")
    return await archive.list_snapshots(board.board_id, limit=limit)


async def get_snapshot(*, archive: SnapshotArchive, board: Board, taken_at: str) -> Snapshot:
    """One snapshot by its ``snapshotTakenAt``; ``NotFound`` if there is none at that time."""
    try:
        canonical = iso_ms(parse_iso_ms(taken_at))
    except ValueError:
        raise InvalidInput(
            f"snapshotTakenAt {taken_at!r} is not an ISO 8601 UTC time like 2026-11-30T00:00:00.000Z",
            errors=[{"field": "snapshotTakenAt", "message": "not a time"}],
        ) from None
    found = await archive.get_snapshot(board.board_id, canonical)
    if found is None:
        raise NotFound(f"board {board.board_id} has no snapshot taken at {canonical}")
    return found
