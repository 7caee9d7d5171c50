"""What a submission to a variant that places its players (decision 0039) writes of their place
on each period board: it counts as an attempt, and a player's first accepted submission places
them (first come first placed); a player not joined where joins are required, a board full, or
attempts used up refuse it before anything is written."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from app.domain.calendar import board_expiry_s
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.errors import AttemptsExhausted, EntrantsFull, NotJoined
from app.services.cohorts._league import league_write, placed_later
from app.services.ports import EntryWrite, SubmissionState
from app.services.submissions._ask import CohortGuessedWrong


def entry_writes(
    definition: BoardDefinition,
    boards: list[Board],
    state: SubmissionState,
    *,
    player: str,
    token: str,
    tiers: Mapping[str, str] | None = None,
) -> tuple[EntryWrite, ...]:
    """The placement writes of a submission to ``boards``, from the ``state`` it read: nothing on
    a variant that places nobody. ``NotJoined``, ``EntrantsFull``, ``AttemptsExhausted``: refused,
    nothing to write. ``token``: the request's, stored on a placement it makes. ``tiers``: in a
    league, the player's tier on each board, as decided before the write (decision 0040)."""
    if not definition.gates_entry:
        return ()
    writes = []
    for board in boards:
        board_id = board.board_id
        placement = state.placements.get(board_id)
        expires_at = board_expiry_s(board, definition)
        if placement is None:
            if definition.join_required:
                raise NotJoined(
                    f"player {player!r} has not joined board {board_id}, and its variant "
                    "requires a join (joinRequired); nothing was stored",
                )
            entry = state.entries.get(board_id)
            if placed_later(definition, board, None if entry is None else entry.league):
                continue  # counts on the whole board, in no cohort (a late score)
            tier = None if tiers is None else tiers.get(board_id)
            if tiers is not None and tier is None:
                raise CohortGuessedWrong(None)  # no tier decided for a board to place on
            seen = entry.placed_in(tier) if entry is not None else state.placed.get(board_id, 0)
            if definition.seating.full(seen):
                raise EntrantsFull(
                    f"board {board_id} has placed {seen} players, its maxEntrants: nothing was "
                    "stored",
                    retry_after=60,
                )
            placed = replace(
                definition.seating.placement(player, board_id, seen, token, tier), attempts=1
            )
            league = league_write(
                definition, board, placed, None if entry is None else entry.league
            )
            writes.append(EntryWrite(placed, new=True, expires_at=expires_at, league=league))
            continue
        most = definition.max_attempts
        if most is not None and placement.attempts >= most:
            raise AttemptsExhausted(
                f"player {placement.player_id!r} has made {placement.attempts} accepted "
                f"submissions to board {board_id}, its maxAttempts: nothing was stored",
                retry_after=60,
            )
        writes.append(
            EntryWrite(
                replace(placement, attempts=placement.attempts + 1),
                new=False,
                expires_at=expires_at,
                counted=most is not None,
            )
        )
    return tuple(writes)
