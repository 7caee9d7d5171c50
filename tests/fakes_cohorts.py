"""A fake of the ``EntrantStore`` port (``EntrantItems``), for use-case tests that need no
DynamoDB: one count per board and the placements, with the adapter's conditions (the count as
read, no placement yet), so a raced seat is a cancellation as DynamoDB's would be."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field, replace

from app.domain.cohorts import Placement
from app.errors import TransactionCancelled
from app.services.ports.entrants import EntryState


@dataclass
class MemoryEntrants:
    placed: dict[str, int] = field(default_factory=dict)
    """Players placed, by board."""
    placements: dict[tuple[str, str], Placement] = field(default_factory=dict)
    """By (board, player)."""
    calls: Counter[str] = field(default_factory=Counter)

    async def read_entry(self, player_id: str, board_id: str) -> EntryState:
        self.calls["read_entry"] += 1
        await asyncio.sleep(0)  # another placement may land between the read and the write
        return EntryState(self.placements.get((board_id, player_id)), self.placed.get(board_id, 0))

    async def read_entries(self, player_id: str, board_ids: list[str]) -> dict[str, EntryState]:
        self.calls["read_entries"] += 1
        return {
            board_id: EntryState(
                self.placements.get((board_id, player_id)), self.placed.get(board_id, 0)
            )
            for board_id in board_ids
        }

    async def place(
        self, placement: Placement, *, max_entrants: int | None, expires_at: int | None
    ) -> None:
        self.calls["place"] += 1
        await asyncio.sleep(0)
        board, player = placement.board_id, placement.player_id
        if self.placed.get(board, 0) != placement.seat or (board, player) in self.placements:
            raise TransactionCancelled("the count or the placement changed", kind="condition")
        if max_entrants is not None and placement.seat >= max_entrants:
            raise TransactionCancelled("full", kind="condition")
        self.placed[board] = placement.seat + 1
        self.placements[(board, player)] = replace(placement)

    async def erase_placement(self, player_id: str, board_id: str) -> None:
        self.calls["erase_placement"] += 1
        self.placements.pop((board_id, player_id), None)
