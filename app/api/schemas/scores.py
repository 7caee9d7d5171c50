"""The submission's body and its answer, and a batch of them (``POST /v1/scores:batch``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AwareDatetime,
    ConfigDict,
    Field,
    StrictBool,
)
from pydantic.alias_generators import to_camel

from app.api.patterns import IDEMPOTENCY_KEY_PATTERN
from app.api.schemas.common import (
    CamelModel,
    Country,
    DisplayName,
    GameId,
    Id,
    Problem,
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


MAX_BATCH = 100
"""The most submissions one batch holds."""

IdempotencyKey = Annotated[
    str,
    Field(
        pattern=IDEMPOTENCY_KEY_PATTERN,
        examples=["round-4812-player_123"],
        description="1..255 visible ASCII characters; one per distinct submission, kept across "
        "its retries: what `POST /v1/scores` takes as the Idempotency-Key header",
    ),
]


class BatchSubmission(ScoreSubmission):
    """One submission of a batch: the body `POST /v1/scores` takes, with its Idempotency-Key
    as a field. An item whose other fields are wrong is answered in its own result (422); one
    without a key of this form is a 422 for the whole batch."""

    idempotency_key: IdempotencyKey


class ScoreBatch(CamelModel):
    """Up to 100 submissions, each answered as `POST /v1/scores` would answer it alone. Fewer
    than 1 or more than 100, an item without an `idempotencyKey`, or two items with one key:
    a 422 for the whole batch, and nothing stored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")

    submissions: list[BatchSubmission] = Field(min_length=1, max_length=MAX_BATCH)


class BatchResultOut(CamelModel):
    """One item's answer: what `POST /v1/scores` would have answered for it alone."""

    idempotency_key: str = Field(description="the item's own key, as sent")
    status: int = Field(
        description="the status POST /v1/scores would have answered: 200, or a 4xx or 5xx "
        "(a 409, 429 or 503 passes: see retryAfter) whose problem document is the body",
        examples=[200, 409, 422, 429, 503],
    )
    replayed: bool = Field(
        description="true where the key was seen before and its stored answer is replayed "
        "(POST /v1/scores's `Idempotent-Replayed: true`)"
    )
    retry_after: int | None = Field(
        default=None,
        description="seconds to wait before sending the item again with the same key, where "
        "POST /v1/scores would have said Retry-After (a 409 that passes, a 429, a 503)",
    )
    body: SubmitResponse | Problem = Field(
        description="the submission's outcome (status 200), or the problem document"
    )


class BatchResponse(CamelModel):
    results: list[BatchResultOut] = Field(description="one per submission, in the request's order")
