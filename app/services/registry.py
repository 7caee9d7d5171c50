"""The board registry: every board is recorded once, so the closed-period snapshot job can find the
day and week boards whose period has closed, and ``GET /v1/boards`` can list the live ones."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from itertools import groupby

from app.domain.periods import Board, Period, PeriodKind, board_expiry_s, board_is_expired
from app.services.definitions import Definitions
from app.services.memory import Recent, SharedLoads
from app.services.ports import BoardRegistry


async def register_board(*, registry: BoardRegistry, board: Board, retention: timedelta) -> bool:
    """Make the board discoverable by ``snapshot_closed_periods``; cheap to repeat (one
    conditional put); ``True`` the first time."""
    return await registry.register_board(
        board.board_id, expires_at=board_expiry_s(board, retention)
    )


class BoardRegistrar:
    """Registers each board once per process: the first submission a process sees for a board
    pays one conditional put, later ones nothing. A failed registration is not remembered, so the
    next submission tries again. Bounded: the oldest boards are forgotten first (re-registering
    one costs a refused conditional put, nothing more)."""

    def __init__(self, registry: BoardRegistry, *, max_remembered: int = 10_000) -> None:
        self._registry = registry
        self._known: Recent[str, None] = Recent(max_entries=max_remembered)

    async def ensure(self, board: Board, *, retention: timedelta) -> None:
        """``retention``: the board's (its definition's); the registry row goes with its rows."""
        board_id = board.board_id
        if board_id in self._known:
            return
        await register_board(registry=self._registry, board=board, retention=retention)
        self._known.put(board_id, None)

    async def ensure_all(self, boards: Sequence[Board], *, retention: timedelta) -> None:
        await asyncio.gather(*(self.ensure(board, retention=retention) for board in boards))


# ---- listing the live boards --------------------------------------------------------------------


@dataclass(frozen=True)
class VariantBoards:
    variant: str
    periods: list[Period]
    """All-time first, then each kind's periods (in ``PeriodKind`` order), newest first."""


@dataclass(frozen=True)
class GameBoards:
    game: str
    variants: list[VariantBoards]


@dataclass(frozen=True)
class BoardListing:
    games: list[GameBoards]
    current: list[Period]
    """The periods ``day`` and ``week`` (each dated kind's current one) name at this moment."""


class RegisteredBoards:
    """The registry's boards, read at most once every ``ttl_s`` per process. ``GET /v1/boards``
    is public and reads a whole partition, which grows with games x variants x retained periods,
    and every open viewer page asks for it: remembered, it costs one Query per task per ``ttl_s``
    however many ask. Concurrent requests share one read; a failed read is not remembered. A
    ``ttl_s`` of 0 reads every time."""

    def __init__(self, *, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._loads: SharedLoads[None, list[Board]] = SharedLoads(
            max_entries=1, ttl_s=ttl_s, clock=clock
        )

    async def of(self, registry: BoardRegistry) -> list[Board]:
        return await self._loads.get(None, lambda: _read_boards(registry))


async def _read_boards(registry: BoardRegistry) -> list[Board]:
    boards = []
    for registered in await registry.registered_boards():
        try:
            boards.append(Board.from_id(registered.board_id))
        except ValueError:
            continue  # not a board id this version can read: nothing a viewer could open
    return boards


_KIND_ORDER = {kind: position for position, kind in enumerate(PeriodKind)}


def _board_order(board: Board) -> tuple[str, str, int, str]:
    return board.game, board.variant, _KIND_ORDER[board.period.kind], board.period.label


async def live_boards(
    *, registry: BoardRegistry, cache: RegisteredBoards, now: datetime, definitions: Definitions
) -> BoardListing:
    """Every game and variant with a board, and each one's live periods: expired period boards
    are left out, as reads hide them (decided by the period and the variant's retention, like
    every read, so an entry remembered by ``cache`` leaves the list the moment its board
    expires)."""
    registered = await cache.of(registry)
    named = sorted({(b.game, b.variant) for b in registered})
    found = await asyncio.gather(*(definitions.of(game, variant) for game, variant in named))
    retention = {v: r.definition.retention for v, r in zip(named, found, strict=True)}
    boards = sorted(
        (
            b
            for b in registered
            if not board_is_expired(b, now=now, retention=retention[(b.game, b.variant)])
        ),
        key=_board_order,
    )
    games = []
    for game, of_game in groupby(boards, key=lambda b: b.game):
        variants = []
        for variant, of_variant in groupby(of_game, key=lambda b: b.variant):
            periods: list[Period] = []
            for _, of_kind in groupby(of_variant, key=lambda b: b.period.kind):
                periods.extend(
                    sorted((b.period for b in of_kind), key=lambda p: p.label, reverse=True)
                )
            variants.append(VariantBoards(variant, periods))
        games.append(GameBoards(game, variants))
    current = [
        Period.containing(kind, now) for kind in PeriodKind if kind is not PeriodKind.ALLTIME
    ]
    return BoardListing(games, current)
