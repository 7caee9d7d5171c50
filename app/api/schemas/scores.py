"""The submission's body and its answer."""

from __future__ import annotations

from typing import Any

from pydantic import (
    AwareDatetime,
    ConfigDict,
    Field,
    StrictBool,
)
from pydantic.alias_generators import to_camel

from app.api.schemas.common import (
    CamelModel,
    Country,
    DisplayName,
    GameId,
    Id,
    Score,
    VariantId,
)
from app.domain.definitions import (
    WHAT_CHANGES,
)
from app.domain.models import SubmitOutcome


class ScoreSubmission(CamelModel):
    """A round's result for one player. Unknown fields are refused (422)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")

    player_id: Id
    score: Score
    game: GameId
    variant: VariantId
    achieved_at: AwareDatetime | None = Field(
        default=None,
        description="when the score was achieved; defaults to now. More than 5 s ahead of the "
        "server's clock, or older than the allowed lateness (1 h by default), is a 422.",
    )
    display_name: DisplayName | None = None
    country: Country | None = None
    context: dict[str, Any] | None = Field(
        default=None,
        description="free-form, kept, never indexed; as compact JSON at most the service's "
        "LEADERBOARD_MAX_CONTEXT_BYTES (16 KiB by default), or 422",
    )
    metadata: dict[str, Any] | None = Field(
        default=None,
        description="what a game shows beside the entry (a car, a character, a replay id): "
        "returned with the entry by every read of the board while this round's result is the "
        "player's entry there; as compact JSON at most 256 bytes, or 422",
        examples=[{"car": "mk2", "replay": "r-2931"}],
    )
    rank_delta: StrictBool = True


class BoardOutcomeOut(CamelModel):
    leaderboard_id: str
    period: str
    best: int = Field(description="the player's value on the board after this submission")
    previous_best: int | None = Field(
        description="their value before it; null where they were not on the board"
    )
    improved: bool = Field(description=WHAT_CHANGES)
    rank_before: int | None = None
    rank_after: int | None = None


class SubmitResponse(CamelModel):
    player_id: str
    boards: list[BoardOutcomeOut]

    @classmethod
    def of(cls, outcome: SubmitOutcome) -> SubmitResponse:
        boards = []
        for board in outcome.boards:
            fields: dict[str, Any] = {
                "leaderboard_id": board.board_id,
                "period": board.period,
                "best": board.best,
                "previous_best": board.previous_best,
                "improved": board.improved,
            }
            # rankBefore/rankAfter are left out, not null, where they are not exact (the route
            # serves the set fields only).
            if board.rank_before is not None:
                fields["rank_before"] = board.rank_before
            if board.rank_after is not None:
                fields["rank_after"] = board.rank_after
            boards.append(BoardOutcomeOut.model_validate(fields))
        return cls(player_id=outcome.player_id, boards=boards)
