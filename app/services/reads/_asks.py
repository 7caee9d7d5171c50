"""What a read asks for, as values: the board and how it ranks, and the page."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from app.domain.definitions import BoardDefinition
from app.domain.periods import Board


@dataclass(frozen=True)
class BoardAsk:
    """A read of one board: the board, how it ranks (its variant's definition, resolved by the
    caller, so an undefined variant is refused before anything is read), and the request's now."""

    board: Board
    definition: BoardDefinition
    now: datetime


@dataclass(frozen=True)
class PageAsk:
    """A page asked for: its size, where it starts (a cursor as issued), and the request's now."""

    limit: int
    cursor: str | None
    now: datetime
