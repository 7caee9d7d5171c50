"""A board's snapshots as the public reads give them: the list, newest first, and one by when it
was taken."""

from __future__ import annotations

from app.domain.clock import iso_ms, parse_iso_ms
from app.domain.periods import Board
from app.errors import InvalidInput, NotFound
from app.services.ports import Snapshot, SnapshotStore, SnapshotSummary


async def list_snapshots(
    *, snapshots: SnapshotStore, board: Board, limit: int = 100
) -> list[SnapshotSummary]:
    """The board's snapshots, newest first, at most ``limit`` (1..1000)."""
    if not 1 <= limit <= 1000:
        raise InvalidInput("limit must be in 1..1000")
    return await snapshots.list_snapshots(board.board_id, limit=limit)


async def get_snapshot(*, snapshots: SnapshotStore, board: Board, taken_at: str) -> Snapshot:
    """One snapshot by its ``snapshotTakenAt``; ``NotFound`` if there is none at that time."""
    try:
        canonical = iso_ms(parse_iso_ms(taken_at))
    except ValueError:
        raise InvalidInput(
            f"snapshotTakenAt {taken_at!r} is not an ISO 8601 UTC time like 2026-11-30T00:00:00.000Z",
            errors=[{"field": "snapshotTakenAt", "message": "not a time"}],
        ) from None
    found = await snapshots.get_snapshot(board.board_id, canonical)
    if found is None:
        raise NotFound(f"board {board.board_id} has no snapshot taken at {canonical}")
    return found
