"""One submission as asked, with the boards it writes: its period boards and, on a cohort
variant, the player's cohort of each (decision 0039)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta

from app.domain.clock import from_ms
from app.domain.cohorts import LeagueRecord
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.domain.submission import Submission
from app.services.cohorts._league import Due, placed_later, standing_for
from app.services.memory import Recent
from app.services.ports.entrants import EntrantStore


def shards_of(board: Board, definition: BoardDefinition) -> int:
    """A cohort's board is never sharded (decision 0039); a period board is as defined."""
    return 1 if board.cohort is not None else definition.shards


@dataclass(frozen=True)
class SubmitAsk:
    """One submission as asked: the score and the rules its boards follow, when it was achieved
    (checked), its Idempotency-Key's record (the caller's and the key's) with the request's hash,
    and the moment it is served."""

    submission: Submission
    definition: BoardDefinition
    achieved_ms: int
    record_id: str
    request_hash: str
    now_ms: int
    cohorts: Mapping[str, str] = field(default_factory=dict)
    """The player's cohort on each period board, by its id, as read before the write (decision
    0039): their rows there are written too. Empty on a variant without cohorts."""
    tiers: Mapping[str, str] | None = None
    """In a league, the player's tier on each period board, decided before the write (decision
    0040); ``None`` elsewhere."""
    leagues: Mapping[str, LeagueRecord | None] = field(default_factory=dict)
    """In a league, the player's league record as that decision read it, by board id: a write
    that reads another decides again."""

    @property
    def periods(self) -> list[Board]:
        """The boards of the definition's periods that hold the moment it was achieved."""
        moment = from_ms(self.achieved_ms)
        game, variant = self.submission.game, self.submission.variant
        calendar = self.definition.calendar
        periods = (calendar.containing(kind, moment) for kind in self.definition.periods)
        return [Board(game, variant, period) for period in periods if period is not None]

    @property
    def boards(self) -> list[Board]:
        """The period boards, then the player's cohort of each (where they have one)."""
        periods = self.periods
        cohorts = [
            board.in_cohort(self.cohorts[board.board_id])
            for board in periods
            if board.board_id in self.cohorts
        ]
        return [*periods, *cohorts]


class CohortGuessedWrong(Exception):
    """The cohorts a submission started with are not the ones its read says (a seat taken
    meanwhile): nothing was written; start again with these (``None``: the player's league
    record changed, decide their tiers again)."""

    def __init__(self, cohorts: Mapping[str, str] | None) -> None:
        super().__init__("the player's cohorts are not the ones guessed")
        self.cohorts = cohorts


Seat = tuple[str | None, str | None]
"""A placement's cohort and tier."""
Placed = Recent[tuple[str, str], Seat]
"""Placements seen or made, by (player, period board): a placement never moves, so a player
placed before needs no read to know their cohort (the write reads it again, and a placement gone
since, erased, makes the write plan again from a read)."""


def remember(known: Placed, ask: SubmitAsk) -> None:
    """The places ``ask`` was written with: the placements are there now."""
    player = ask.submission.player_id
    for board in ask.periods:
        tier = None if ask.tiers is None else ask.tiers.get(board.board_id)
        known.put((player, board.board_id), (ask.cohorts.get(board.board_id), tier))


async def seated(
    entrants: EntrantStore, ask: SubmitAsk, *, settle: timedelta, known: Placed | None = None
) -> SubmitAsk:
    """``ask`` with the player's cohort on each period board: theirs, or the one the next seat
    is in (one call, none where ``known`` holds every one; decision 0039), and in a league their
    tier (decision 0040: one call more where their last period's close must be read)."""
    periods, definition = ask.periods, ask.definition
    player = ask.submission.player_id
    held = {b.board_id: None if known is None else known.get((player, b.board_id)) for b in periods}
    if all(seat is not None for seat in held.values()):
        seats = {board_id: seat for board_id, seat in held.items() if seat is not None}
        cohorts = {board_id: c for board_id, (c, _) in seats.items() if c is not None}
        placed_tiers = {board_id: t for board_id, (_, t) in seats.items() if t is not None}
        return replace(
            ask, cohorts=cohorts, tiers=placed_tiers if definition.league is not None else None
        )
    league = definition.league
    tiers = () if league is None else league.ids
    entries = await entrants.read_entries(player, [board.board_id for board in periods], tiers)
    if known is not None:
        for board_id, entry in entries.items():
            if entry.placement is not None:
                known.put((player, board_id), (entry.placement.cohort_id, entry.placement.tier))
    seating = definition.seating
    cohorts, placed_tiers, leagues = {}, {}, {}
    for board in periods:
        entry = entries[board.board_id]
        placement = entry.placement
        leagues[board.board_id] = entry.league
        if placement is None and placed_later(definition, board, entry.league):
            continue  # a late score for a period the player has played past: no cohort
        if placement is None:
            tier = None
            if league is not None:
                due = Due(from_ms(ask.now_ms), settle)
                standing = await standing_for(
                    entrants, definition, board, entry.league, player, due
                )
                tier = standing.tier
            placement = seating.placement(player, board.board_id, entry.placed_in(tier), tier=tier)
        if placement.cohort_id is not None:
            cohorts[board.board_id] = placement.cohort_id
        if placement.tier is not None:
            placed_tiers[board.board_id] = placement.tier
    if league is None:
        return replace(ask, cohorts=cohorts)
    return replace(ask, cohorts=cohorts, tiers=placed_tiers, leagues=leagues)
