"""A player's tier in a league (decision 0040): the lowest for a new player; else the tier of
their league record, moved by what their cohort's close decided. Until that close has happened
(the period's end plus the accepted lateness, and a closer's run), a player of the last period
cannot be placed in the next: their tier is not known yet (503, with when to retry)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from app.domain.calendar import board_is_expired, period_closes_at
from app.domain.clock import iso_ms, to_ms
from app.domain.cohorts import LeagueRecord, Move, Placement
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.errors import LeagueClosing
from app.services.ports.entrants import EntrantStore, LeagueWrite

_CLOSE_WAIT_S = 30
"""Added to a close's due time in a Retry-After: about a closer's interval."""


@dataclass(frozen=True)
class Due:
    """When a placement is made, and the lateness a close waits for after a period's end."""

    now: datetime
    settle: timedelta


@dataclass(frozen=True)
class Standing:
    """A player's tier for a board, and how they came to it."""

    tier: str
    last: LeagueRecord | None
    """Their league record before this board (``None``: new to the league)."""
    move: Move | None
    """What their last period's close did (``None``: new, or the last period is this one)."""


def period_start_ms(definition: BoardDefinition, board: Board) -> int:
    """When ``board``'s period starts, as a league record keeps it (0: it has no start)."""
    start = definition.calendar.span(board.period).starts_at
    return 0 if start is None else to_ms(start)


async def standing_for(
    entrants: EntrantStore,
    definition: BoardDefinition,
    board: Board | None,
    record: LeagueRecord | None,
    player_id: str,
    due: Due,
) -> Standing:
    """The tier ``player_id`` (whose league record is ``record``) plays ``board`` in (``None``:
    the next board they are placed on, between seasons). ``LeagueClosing`` where it waits on a
    close not yet done."""
    league = definition.league
    if league is None:
        raise ValueError("a tier is a league's: this definition has no tiers")
    if record is None:
        return Standing(league.lowest, None, None)
    if board is not None and record.period_start_ms >= period_start_ms(definition, board):
        # This board's, or a later one's (a late score placing them on an older board).
        return Standing(league.known(record.tier), record, None)
    move = await settled_move(entrants, definition, record, player_id, due)
    return Standing(league.after(record.tier, move), record, move)


async def settled_move(
    entrants: EntrantStore,
    definition: BoardDefinition,
    record: LeagueRecord,
    player_id: str,
    due: Due,
) -> Move:
    """What the close of ``record``'s board did to its player (one call). ``LeagueClosing``
    where it is not done yet and will be."""
    now, settle = due.now, due.settle
    found = await entrants.read_moves(record.board_id, record.cohort_id)
    if found.moves is not None:
        return found.moves.of(player_id)
    last = Board.from_id(record.board_id)
    if found.closed or board_is_expired(last, now=now, definition=definition):
        # Closed without moves (the close of a variant then without tiers), or never closed
        # and never will be: the tier stays.
        return "stay"
    closes = period_closes_at(last, definition, settle=settle)
    wait = _CLOSE_WAIT_S if closes is None else max(0, (closes - now).total_seconds())
    raise LeagueClosing(
        f"player {player_id!r} played {last.period.display} of "
        f"{last.game}/{last.variant} in tier {record.tier!r}; its close decides their tier for "
        f"the next period and has not happened yet (due {_due_text(closes)}): retry then",
        retry_after=int(wait) + _CLOSE_WAIT_S,
    )


def _due_text(closes: datetime | None) -> str:
    return "now" if closes is None else iso_ms(to_ms(closes))


def placed_later(definition: BoardDefinition, board: Board, record: LeagueRecord | None) -> bool:
    """Whether the player's league record is of a period after ``board``'s: a late score for
    ``board``, whose tier the close of the period before it would decide, after the player has
    played on. It counts on ``board``'s whole board and in no cohort (decision 0040's note)."""
    if definition.league is None or record is None:
        return False
    return record.period_start_ms > period_start_ms(definition, board)


def league_write(
    definition: BoardDefinition, board: Board, placement: Placement, read: LeagueRecord | None
) -> LeagueWrite | None:
    """The league record a new ``placement`` on ``board`` puts, conditioned on the one ``read``;
    none where that one is of a later period (a late score placing the player on an older
    board leaves their record as it is)."""
    if definition.league is None or placement.tier is None or placement.cohort_id is None:
        return None
    begins_ms = period_start_ms(definition, board)
    if read is not None and read.period_start_ms > begins_ms:
        return None
    record = LeagueRecord(placement.tier, board.board_id, begins_ms, placement.cohort_id)
    return LeagueWrite(record, None if read is None else read.period_start_ms)


@dataclass(frozen=True)
class LeagueView:
    """A player's league in a variant now (``GET .../players/{playerId}/league``)."""

    tier: str
    """The tier they play the current period in (their last one's, where its close is not
    done yet: ``previous.move`` is then ``pending``)."""
    cohort_id: str | None
    """Their cohort on the current period's board (``None``: not placed on it yet)."""
    period: Board | None
    """The current period's board (``None`` between seasons)."""
    previous: LeagueRecord | None
    """Their last period's placement, where it is not the current one."""
    move: Move | Literal["pending"] | None
    """What that period's close did."""


async def league_view(
    entrants: EntrantStore,
    definition: BoardDefinition,
    at: LeagueAt,
    player_id: str,
    *,
    settle: timedelta,
) -> LeagueView:
    """The player's tier and cohort on ``at.board`` (the current period's): two calls at
    most."""
    league = definition.league
    if league is None:
        raise ValueError(f"{at.game}/{at.variant} is not a league")
    board, now = at.board, at.now
    record = await entrants.read_league(player_id, at.game, at.variant)
    if record is None:
        return LeagueView(league.lowest, None, board, None, None)
    if board is not None and record.board_id == board.board_id:
        return LeagueView(league.known(record.tier), record.cohort_id, board, None, None)
    try:
        standing = await standing_for(
            entrants, definition, board, record, player_id, Due(now, settle)
        )
    except LeagueClosing:
        return LeagueView(league.known(record.tier), None, board, record, "pending")
    return LeagueView(standing.tier, None, board, record, standing.move)


@dataclass(frozen=True)
class LeagueAt:
    """A league's variant at a moment, and the board of its period then (``None`` between
    seasons)."""

    game: str
    variant: str
    board: Board | None
    now: datetime
