"""One submission as asked, with the boards it writes: its period boards and, on a cohort
variant, the player's cohort of each (decision 0039)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.domain.clock import from_ms
from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.domain.submission import Submission


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
    meanwhile): nothing was written; start again with these."""

    def __init__(self, cohorts: Mapping[str, str]) -> None:
        super().__init__("the player's cohorts are not the ones guessed")
        self.cohorts = cohorts
