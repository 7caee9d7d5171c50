"""A fake of the ``EntrantStore`` port (``EntrantItems``), for use-case tests that need no
DynamoDB: one count per board (per tier, in a league) and the placements, with the adapter's
conditions (the count as read, no placement yet, the league record as read), so a raced seat is
a cancellation as DynamoDB's would be; a league's records and each cohort's moves, put once."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field, replace

from app.domain.cohorts import CohortMoves, LeagueRecord, Placement
from app.domain.periods import Board
from app.errors import TransactionCancelled
from app.services.ports.entrants import EntryState, LeagueWrite, MovesState


@dataclass
class MemoryEntrants:
    placed: dict[tuple[str, str | None], int] = field(default_factory=dict)
    """Players placed, by (board, tier)."""
    placements: dict[tuple[str, str], Placement] = field(default_factory=dict)
    """By (board, player)."""
    leagues: dict[tuple[str, str], LeagueRecord] = field(default_factory=dict)
    """By (player, ``<game>#<variant>``)."""
    moves: dict[tuple[str, str], CohortMoves] = field(default_factory=dict)
    """By (board, cohort)."""
    closed: set[str] = field(default_factory=set)
    """Boards whose close is marked."""
    calls: Counter[str] = field(default_factory=Counter)

    def _state(self, player_id: str, board_id: str, tiers: tuple[str, ...]) -> EntryState:
        board = Board.from_id(board_id)
        return EntryState(
            self.placements.get((board_id, player_id)),
            self.placed.get((board_id, None), 0),
            {tier: self.placed.get((board_id, tier), 0) for tier in tiers},
            self.leagues.get((player_id, f"{board.game}#{board.variant}")) if tiers else None,
        )

    async def read_entry(
        self, player_id: str, board_id: str, tiers: tuple[str, ...] = ()
    ) -> EntryState:
        self.calls["read_entry"] += 1
        await asyncio.sleep(0)  # another placement may land between the read and the write
        return self._state(player_id, board_id, tiers)

    async def read_entries(
        self, player_id: str, board_ids: list[str], tiers: tuple[str, ...] = ()
    ) -> dict[str, EntryState]:
        self.calls["read_entries"] += 1
        return {board_id: self._state(player_id, board_id, tiers) for board_id in board_ids}

    async def place(
        self,
        placement: Placement,
        *,
        max_entrants: int | None,
        expires_at: int | None,
        league: LeagueWrite | None = None,
    ) -> None:
        self.calls["place"] += 1
        await asyncio.sleep(0)
        board, player, tier = placement.board_id, placement.player_id, placement.tier
        if (
            self.placed.get((board, tier), 0) != placement.seat
            or (board, player) in self.placements
        ):
            raise TransactionCancelled("the count or the placement changed", kind="condition")
        if max_entrants is not None and placement.seat >= max_entrants:
            raise TransactionCancelled("full", kind="condition")
        address = None
        if league is not None:
            whole = Board.from_id(board)
            address = (player, f"{whole.game}#{whole.variant}")
            held = self.leagues.get(address)
            if (None if held is None else held.period_start_ms) != league.read_start_ms:
                raise TransactionCancelled("the league record changed", kind="condition")
        self.placed[(board, tier)] = placement.seat + 1
        self.placements[(board, player)] = replace(placement)
        if league is not None and address is not None:
            self.leagues[address] = league.record

    async def erase_placement(self, player_id: str, board_id: str) -> None:
        self.calls["erase_placement"] += 1
        self.placements.pop((board_id, player_id), None)

    async def read_counts(self, board_id: str, tiers: tuple[str, ...]) -> dict[str, int]:
        self.calls["read_counts"] += 1
        return {tier: self.placed.get((board_id, tier), 0) for tier in tiers}

    async def placed_on(self, board_id: str, tiers: tuple[str, ...]) -> int:
        return sum(self.placed.get((board_id, tier), 0) for tier in (None, *tiers))

    async def still_placed(self, board_id: str, player_ids: tuple[str, ...]) -> set[str]:
        return {p for p in player_ids if (board_id, p) in self.placements}

    async def read_moves(self, board_id: str, cohort_id: str) -> MovesState:
        self.calls["read_moves"] += 1
        return MovesState(self.moves.get((board_id, cohort_id)), board_id in self.closed)

    async def put_moves(
        self, board_id: str, cohort_id: str, moves: CohortMoves, *, expires_at: int | None
    ) -> CohortMoves:
        self.calls["put_moves"] += 1
        return self.moves.setdefault((board_id, cohort_id), moves)

    async def scrub_moves(self, board_id: str, cohort_id: str, player_id: str) -> None:
        held = self.moves.get((board_id, cohort_id))
        if held is not None:
            self.moves[(board_id, cohort_id)] = replace(
                held,
                up=tuple(p for p in held.up if p != player_id),
                down=tuple(p for p in held.down if p != player_id),
            )

    async def read_league(self, player_id: str, game: str, variant: str) -> LeagueRecord | None:
        self.calls["read_league"] += 1
        return self.leagues.get((player_id, f"{game}#{variant}"))

    async def erase_league(self, player_id: str, league: str) -> None:
        self.leagues.pop((player_id, league), None)
