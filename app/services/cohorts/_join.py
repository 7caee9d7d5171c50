"""Joining a period board (``POST .../entrants/{playerId}``, decision 0039): the player is placed
exactly once, first come first placed, at the next seat of the board's count, or answered with
the place they have."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from app import telemetry
from app.domain.calendar import board_expiry_s
from app.domain.cohorts import Placement
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.errors import (
    Contended,
    EntrantsFull,
    InvalidInput,
    NotFound,
    TransactionCancelled,
    Unavailable,
)
from app.services.cohorts._league import Due, Standing, league_write, standing_for
from app.services.ports.entrants import EntrantStore, EntryState
from app.services.work import wait_before


@dataclass(frozen=True)
class PlacePolicy:
    attempts: int
    """Transactions a placement tries before it answers 503 (each a re-read and a new seat)."""
    backoff_base_s: float
    backoff_cap_s: float
    settle: timedelta = timedelta(0)
    """The lateness a period's close waits for (a league's tiers wait on that close)."""


@dataclass(frozen=True)
class JoinAsk:
    board: Board
    """The period board (the whole board)."""
    definition: BoardDefinition
    player_id: str
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    """What tells this request's placement: its Idempotency-Key's (so a retry after a lost
    answer is told it was the first), or its own."""


@dataclass(frozen=True)
class JoinOutcome:
    placement: Placement
    first: bool
    """This request placed the player (201); they were placed before (200)."""


async def join(entrants: EntrantStore, policy: PlacePolicy, ask: JoinAsk) -> JoinOutcome:
    """Place the player on the board, or answer the place they have. ``NotFound`` where the
    variant places nobody (no cohorts, joins or caps); ``EntrantsFull`` past ``maxEntrants``;
    ``Contended`` where every attempt lost its seat to another placement."""
    definition, board = ask.definition, ask.board
    if not definition.gates_entry:
        raise NotFound(
            f"{board.game}/{board.variant} has no cohorts and takes no joins (its definition sets "
            "none of cohortSize, joinRequired, maxEntrants, maxAttempts)"
        )
    if definition.league is not None:
        current = definition.calendar.containing(definition.periods[0], datetime.now(UTC))
        if board.period != current:
            raise InvalidInput(
                f"a league's players join its current period"
                f" ({'none: no season is running' if current is None else current.display}), "
                f"not {board.period.display}: the close of the one before decides their tier"
            )
    token = ask.token
    placed = await place(entrants, policy, PlaceAsk(board, definition, ask.player_id, token))
    return JoinOutcome(placed, first=placed.token == token)


@dataclass(frozen=True)
class PlaceAsk:
    board: Board
    definition: BoardDefinition
    player_id: str
    token: str
    """Unique to the request: what tells a placement of its own."""
    now: datetime = field(default_factory=lambda: datetime.now(UTC))


async def place(entrants: EntrantStore, policy: PlacePolicy, ask: PlaceAsk) -> Placement:
    """The player's placement: found, or made now at the next seat (retried on every cancellation:
    a seat taken by another placement burns nothing, it is read again)."""
    board_id, definition = ask.board.board_id, ask.definition
    seating = definition.seating
    expires_at = board_expiry_s(ask.board, definition)
    tiers = () if definition.league is None else definition.league.ids
    for attempt in range(policy.attempts):
        await wait_before(attempt, base_s=policy.backoff_base_s, cap_s=policy.backoff_cap_s)
        state = await entrants.read_entry(ask.player_id, board_id, tiers)
        if state.placement is not None:
            return state.placement
        tier = None if not tiers else (await _standing(entrants, policy, ask, state)).tier
        seen = state.placed_in(tier)
        if seating.full(seen):
            raise EntrantsFull(
                f"board {board_id} has placed {seen} players, its maxEntrants: "
                f"player {ask.player_id!r} was not placed",
                retry_after=60,
            )
        mine = seating.placement(ask.player_id, board_id, seen, ask.token, tier)
        league = league_write(definition, ask.board, mine, state.league)
        try:
            await entrants.place(
                mine, max_entrants=seating.max_entrants, expires_at=expires_at, league=league
            )
        except TransactionCancelled as cancelled:
            telemetry.transaction_cancelled("placement", cancelled.kind)
            continue
        except Unavailable:
            # Throttled or unanswered, its outcome unknown: botocore's resend of a placement
            # applied, its answer lost, can be throttled or lost too. Placed with this
            # request's token, the player was placed by this request.
            found = (await entrants.read_entry(ask.player_id, board_id)).placement
            if found is None or found.token != ask.token:
                raise
            return found
        return mine
    raise Contended("the board's placements are too contended right now; retry", retry_after=1)


async def _standing(
    entrants: EntrantStore, policy: PlacePolicy, ask: PlaceAsk, state: EntryState
) -> Standing:
    due = Due(ask.now, policy.settle)
    return await standing_for(entrants, ask.definition, ask.board, state.league, ask.player_id, due)
