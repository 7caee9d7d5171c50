"""The board registry: every board is recorded once, so the closed-period snapshot job can find the
day and week boards whose period has closed, and ``GET /v1/boards`` can list the live ones, a page
of variants at a time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import groupby

from app.domain.calendar import Lasting, board_expiry_s
from app.domain.periods import Board
from app.services.memory import Recent, SharedLoads
from app.services.ports import BoardRegistrations, BoardRegistry, RegisteredBoard


async def register_board(
    *, registry: BoardRegistrations, board: Board, definition: Lasting
) -> bool:
    """Make the board discoverable by ``snapshot_closed_periods``; cheap to repeat (one
    conditional put); ``True`` the first time."""
    return await registry.register_board(
        board.board_id, expires_at=board_expiry_s(board, definition)
    )


class BoardRegistrar:
    """Registers each board once per process: the first submission a process sees for a board
    pays one conditional put, later ones nothing. A failed registration is not remembered, so the
    next submission tries again. Bounded: the oldest boards are forgotten first (re-registering
    one costs a refused conditional put, nothing more)."""

    def __init__(self, registry: BoardRegistrations, *, max_remembered: int = 10_000) -> None:
        self._registry = registry
        self._known: Recent[str, None] = Recent(max_entries=max_remembered)

    def knows(self, boards: Sequence[Board]) -> bool:
        """Whether every one of the boards is registered by this process already."""
        return all(board.board_id in self._known for board in boards)

    async def ensure(self, board: Board, *, definition: Lasting) -> None:
        """``definition``: the board's; the registry row goes with its rows."""
        board_id = board.board_id
        if board_id in self._known:
            return
        await register_board(registry=self._registry, board=board, definition=definition)
        self._known.put(board_id, None)

    async def ensure_all(self, boards: Sequence[Board], *, definition: Lasting) -> None:
        await asyncio.gather(*(self.ensure(board, definition=definition) for board in boards))


# ---- what the registry holds, remembered ------------------------------------------------------


REGISTRY_ROWS_PER_QUERY = 1_000
"""Registry rows one Query of a listing reads (about 250 KB at most)."""
REGISTRY_QUERIES_PER_PAGE = 5
"""Most Queries of the registry one page of the listing makes: 5,000 rows, more than the live
boards of any one variant (a retention of 3,650 days keeps about 4,300), so a page always ends
with a whole variant."""


@dataclass(frozen=True)
class RegisteredVariant:
    game: str
    variant: str
    boards: list[Board]


@dataclass(frozen=True)
class RegisteredVariants:
    """The registry's boards for one page of the listing, by variant, in id order."""

    variants: list[RegisteredVariant]
    more: bool
    """Variants past these remain."""


class RegisteredBoards:
    """The registry's boards, read at most once every ``ttl_s`` per process. ``GET /v1/boards``
    is public and every open viewer page asks for it: remembered, a page of it costs its few
    Queries per task per ``ttl_s`` however many ask (``MAX_PAGES_HELD`` pages, the first most
    asked for). Concurrent requests share one read; a failed read is not remembered. A ``ttl_s``
    of 0 reads every time. ``of`` reads the whole registry (at start-up: the definitions to
    hold)."""

    MAX_PAGES_HELD = 64

    def __init__(self, *, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._loads: SharedLoads[None, list[Board]] = SharedLoads(
            max_entries=1, ttl_s=ttl_s, clock=clock
        )
        self._pages: SharedLoads[tuple[str, int], RegisteredVariants] = SharedLoads(
            max_entries=self.MAX_PAGES_HELD, ttl_s=ttl_s, clock=clock
        )

    async def of(self, registry: BoardRegistry) -> list[Board]:
        return await self._loads.get(None, lambda: _read_boards(registry))

    async def page(
        self, registry: BoardRegistry, *, after: str, variants: int
    ) -> RegisteredVariants:
        """Up to ``variants`` variants with registered boards, whole, after the board id
        ``after``: at most ``REGISTRY_QUERIES_PER_PAGE`` Queries."""
        return await self._pages.get(
            (after, variants), lambda: _read_variants(registry, after=after, variants=variants)
        )


async def _read_variants(
    registry: BoardRegistry, *, after: str, variants: int
) -> RegisteredVariants:
    boards: list[Board] = []
    last: str | None = after
    for _ in range(REGISTRY_QUERIES_PER_PAGE):
        page = await registry.registered_page(after=last or "", limit=REGISTRY_ROWS_PER_QUERY)
        boards += _readable(page.boards)
        last = page.last
        # One variant past those wanted shows the last of them whole.
        if last is None or len({(b.game, b.variant) for b in boards}) > variants:
            break
    grouped = [
        RegisteredVariant(game, variant, list(rows))
        for (game, variant), rows in groupby(boards, key=lambda b: (b.game, b.variant))
    ]
    if last is not None and len(grouped) > 1:
        grouped.pop()  # the Queries stopped inside it: it starts the next page, whole
    return RegisteredVariants(grouped[:variants], more=last is not None or len(grouped) > variants)


async def _read_boards(registry: BoardRegistry) -> list[Board]:
    return _readable(await registry.registered_boards())


def _readable(registered: Sequence[RegisteredBoard]) -> list[Board]:
    boards = []
    for row in registered:
        try:
            boards.append(Board.from_id(row.board_id))
        except ValueError:
            continue  # not a board id this version can read: nothing a viewer could open
    return boards
