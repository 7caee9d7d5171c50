"""The board registry: every board is recorded once, so the closed-period snapshot job can find the
day and week boards whose period has closed."""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from datetime import timedelta

from app.domain.periods import Board
from app.services.ports import BoardRegistry


def registry_expiry(board: Board, retention: timedelta) -> int | None:
    """When a board's registry row may go: with its rows (never for all-time)."""
    expires = board.period.expires_at(retention)
    return None if expires is None else int(expires.timestamp())


async def register_board(*, registry: BoardRegistry, board: Board, retention: timedelta) -> bool:
    """Make the board discoverable by ``snapshot_closed_periods``; cheap to repeat (one
    conditional put); ``True`` the first time."""
    return await registry.register_board(
        board.board_id, expires_at=registry_expiry(board, retention)
    )


class BoardRegistrar:
    """Registers each board once per process: the first submission a process sees for a board
    pays one conditional put, later ones nothing. A failed registration is not remembered, so the
    next submission tries again. Bounded: the oldest boards are forgotten first (re-registering
    one costs a refused conditional put, nothing more)."""

    def __init__(self, registry: BoardRegistry, *, max_remembered: int = 10_000) -> None:
        self._registry = registry
        self._max = max_remembered
        self._known: OrderedDict[str, None] = OrderedDict()

    async def ensure(self, board: Board, *, retention: timedelta) -> None:
        """``retention``: the board's (its definition's); the registry row goes with its rows."""
        board_id = board.board_id
        if board_id in self._known:
            return
        await register_board(registry=self._registry, board=board, retention=retention)
        self._known[board_id] = None
        while len(self._known) > self._max:
            self._known.popitem(last=False)

    async def ensure_all(self, boards: Sequence[Board], *, retention: timedelta) -> None:
        await asyncio.gather(*(self.ensure(board, retention=retention) for board in boards))
