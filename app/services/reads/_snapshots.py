"""A board's snapshots as the public reads give them: the list, newest first, and one by when it
was taken."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from app.domain.clock import iso_ms, parse_iso_ms
from app.domain.periods import Board
from app.errors import InvalidInput, NotFound
from app.services.moderated import moderated_of
from app.services.ports import Snapshot, SnapshotStore, SnapshotSummary, Stores


async def list_snapshots(
    *, snapshots: SnapshotStore, board: Board, limit: int = 100
) -> list[SnapshotSummary]:
    """The board's snapshots, newest first, at most ``limit`` (1..1000)."""
    if not 1 <= limit <= 1000:
        raise InvalidInput("limit must be in 1..1000")
    return await snapshots.list_snapshots(board.board_id, limit=limit)


async def get_snapshot(*, stores: Stores, board: Board, taken_at: str) -> Snapshot:
    """One snapshot by its ``snapshotTakenAt``, without the players moderated in the game now
    (``without_moderated``); ``NotFound`` if there is none at that time."""
    try:
        canonical = iso_ms(parse_iso_ms(taken_at))
    except ValueError:
        raise InvalidInput(
            f"snapshotTakenAt {taken_at!r} is not an ISO 8601 UTC time like 2026-11-30T00:00:00.000Z",
            errors=[{"field": "snapshotTakenAt", "message": "not a time"}],
        ) from None
    found, listed = await asyncio.gather(
        stores.snapshots.get_snapshot(board.board_id, canonical), moderated_of(stores, board.game)
    )
    if found is None:
        raise NotFound(f"board {board.board_id} has no snapshot taken at {canonical}")
    return without_moderated(found, {m.player_id for m in listed})


def without_moderated(snapshot: Snapshot, moderated: set[str]) -> Snapshot:
    """A snapshot is kept as taken; read, it leaves out the players moderated now (decision
    0036), each one after them a place higher, and its player count that many fewer (a
    moderated player past the snapshot's top is not known to it, and stays counted)."""
    removed = 0
    kept = []
    for entry in snapshot.entries:
        if entry.player_id is not None and entry.player_id in moderated:
            removed += 1
        else:
            kept.append(replace(entry, rank=entry.rank - removed))
    if not removed:
        return snapshot
    return replace(snapshot, entries=tuple(kept), player_count=snapshot.player_count - removed)
