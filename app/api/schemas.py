"""The HTTP contract's bodies (camelCase), as pydantic models; OpenAPI is generated from them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
)
from pydantic.alias_generators import to_camel

from app.domain.keys import ID_PATTERN, SCORE_CEILING

Id = Annotated[str, Field(pattern=ID_PATTERN, examples=["player_123"])]
RESERVED_GAMES = frozenset({"idem", "snap", "hist", "seedlock", "registry", "apikey"})


def _not_reserved(game: str) -> str:
    if game in RESERVED_GAMES:
        raise ValueError(f"{game!r} is a reserved name")
    return game


GameId = Annotated[
    str,
    Field(pattern=ID_PATTERN, json_schema_extra={"not": {"enum": sorted(RESERVED_GAMES)}}),
    AfterValidator(_not_reserved),
]
DisplayName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[^\x00-\x1f\x7f]+$")]
Country = Annotated[str, Field(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2")]


def _integral(value: Any) -> Any:
    """JSON does not tell 10 from 10.0, and JSON Schema calls both integers: accept an integral
    number however written; 10.5, "10" and true stay refused by the strict check after this."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Score = Annotated[
    StrictInt,
    # The bounds before the validator, or the document shows them as "ge"/"lt", which JSON Schema
    # does not know, instead of minimum/exclusiveMaximum.
    Field(ge=0, lt=SCORE_CEILING, description="an integer in [0, 10**12)"),
    BeforeValidator(_integral),
]


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ScoreSubmission(_Model):
    """A round's result for one player. Unknown fields are refused (422)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")

    player_id: Id
    score: Score
    game: GameId
    variant: Id
    achieved_at: AwareDatetime | None = Field(
        default=None,
        description="when the score was achieved; defaults to now. More than 5 s ahead of the "
        "server's clock, or older than the allowed lateness (1 h by default), is a 422.",
    )
    display_name: DisplayName | None = None
    country: Country | None = None
    context: dict[str, Any] | None = Field(
        default=None, description="free-form, kept, never indexed"
    )
    rank_delta: StrictBool = True


class BoardOutcomeOut(_Model):
    leaderboard_id: str
    period: str
    best: int
    previous_best: int | None
    improved: bool
    rank_before: int | None = None
    rank_after: int | None = None


class SubmitResponse(_Model):
    player_id: str
    boards: list[BoardOutcomeOut]


class EntryOut(_Model):
    rank: int | None
    player_id: str
    display_name: str | None
    country: str | None
    score: int
    achieved_at: str


class BoardPageOut(_Model):
    leaderboard_id: str
    player_count: int
    entries: list[EntryOut]
    next_cursor: str | None


class ExactRankOut(_Model):
    kind: Literal["exact"] = "exact"
    rank: int
    top_percent: float


class EstimatedRankOut(_Model):
    """An honest range: ``rank`` is null, and the range always holds the true rank."""

    kind: Literal["estimated"] = "estimated"
    rank: None = None
    rank_range: tuple[int, int]
    top_percent_range: tuple[float, float]
    rank_estimate: int


RankOut = Annotated[ExactRankOut | EstimatedRankOut, Field(discriminator="kind")]


class PlayerRankOut(_Model):
    leaderboard_id: str
    entry: EntryOut
    rank: RankOut


class AroundEntryOut(EntryOut):
    rank_range: tuple[int, int] | None = None


class AroundOut(_Model):
    leaderboard_id: str
    rank_kind: Literal["exact", "estimated"]
    entries: list[AroundEntryOut]


class BoardStandingOut(_Model):
    leaderboard_id: str
    period: str
    best: int
    rank: RankOut


class StandingsOut(_Model):
    player_id: str
    boards: list[BoardStandingOut]


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


class Health(BaseModel):
    status: str
