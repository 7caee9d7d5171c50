"""Board definitions in and out."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from app.api.schemas.common import (
    CamelModel,
    Score,
    _integral,
)
from app.domain.calendar import MAX_SEASONS, SEASON_ID_PATTERN, UTC_NAME, Season, time_zone
from app.domain.clock import iso_ms, to_ms
from app.domain.cohorts import MAX_ATTEMPTS, MAX_COHORT_SIZE, MAX_ENTRANTS, MAX_TIERS, Tier
from app.domain.definitions import (
    MAX_RETENTION_DAYS,
    BoardDefinition,
    Operator,
    ScoreFormat,
)
from app.domain.keys import Order
from app.domain.periods import TIER_ID_PATTERN, PeriodKind
from app.domain.shards import SHARD_COUNTS

PeriodName = Literal["alltime", "day", "week", "month", "season"]
OrderName = Literal["desc", "asc"]
OperatorName = Literal["best", "latest", "sum"]
ScoreFormatName = Literal["integer", "duration_ms"]
"""The enums' values as the contract spells them (``PeriodKind``, ``Order``, ``Operator``,
``ScoreFormat``; a test
holds each to its enum, so a new member cannot be left out of the API)."""
ShardCount = Literal[1, 2, 4, 8, 16, 32, 64]
"""``app.domain.shards.SHARD_COUNTS`` as the contract spells them (a test holds them equal)."""
RetentionDays = Annotated[
    StrictInt,
    # The bounds before the validator, as for Score.
    Field(ge=1, le=MAX_RETENTION_DAYS, description=f"1 to {MAX_RETENTION_DAYS}"),
    BeforeValidator(_integral),
]


SHARDS_MEANING = (
    "how many index partitions each period board of the variant is spread over, by a stable "
    "hash of playerId (a board that must take more than one partition's writes); every read "
    "keeps its shape. It cannot change while the variant's boards hold entries"
)


SCORE_MIN_MEANING = (
    "the lowest score a submission may carry, inclusive (null: no bound but the score range's); "
    "a submission below it is a 422 score-out-of-bounds that stores nothing. It may change at "
    "any time: entries already on the boards stay"
)
SCORE_MAX_MEANING = (
    "the highest score a submission may carry, inclusive, at least scoreMin (null: no bound "
    "but the score range's); a submission above it is a 422 score-out-of-bounds that stores "
    "nothing. For sum, it bounds each submission, not the total"
)


COHORT_SIZE_MEANING = (
    f"each period board is cut into cohorts of at most this many players (2..{MAX_COHORT_SIZE}), "
    "placed first come first placed on their first accepted submission or join, each ranked on "
    "its own (null: no cohorts). It cannot change while the variant's boards hold entries"
)
JOIN_REQUIRED_MEANING = (
    "submissions from a player who has not joined the period (POST .../entrants/{playerId}) are "
    "a 403 not-joined that stores nothing. It cannot change while the boards hold entries"
)
MAX_ENTRANTS_MEANING = (
    f"most players placed on a period board, by join or first submission (1..{MAX_ENTRANTS}; "
    "null: no cap); past it a join is a 409 full. It cannot change while the boards hold entries"
)
MAX_ATTEMPTS_MEANING = (
    f"most accepted submissions per player per period board (1..{MAX_ATTEMPTS}; null: no cap); "
    "past it a 409 attempts-exhausted (a replay is not an attempt). While the boards hold "
    "entries it may rise, not fall"
)


CohortSize = Annotated[
    StrictInt,
    Field(ge=2, le=MAX_COHORT_SIZE, description=f"2 to {MAX_COHORT_SIZE}"),
    BeforeValidator(_integral),
]
MaxEntrants = Annotated[
    StrictInt,
    Field(ge=1, le=MAX_ENTRANTS, description=f"1 to {MAX_ENTRANTS}"),
    BeforeValidator(_integral),
]
MaxAttempts = Annotated[
    StrictInt,
    Field(ge=1, le=MAX_ATTEMPTS, description=f"1 to {MAX_ATTEMPTS}"),
    BeforeValidator(_integral),
]


def _shard_count(value: Any) -> Any:
    """A count as ``_integral`` takes one, but never ``true``: a ``Literal[1]`` would take it as 1
    (Python's ``True == 1``)."""
    if isinstance(value, bool):
        *fewer, most = map(str, SHARD_COUNTS)
        raise PydanticCustomError("literal_error", f"Input should be {', '.join(fewer)} or {most}")
    return _integral(value)


Shards = Annotated[ShardCount, BeforeValidator(_shard_count)]


def _default_periods() -> list[PeriodName]:
    return ["alltime", "day", "week"]


TIME_ZONE_MEANING = (
    "the IANA time zone (Europe/Paris, America/New_York) whose local midnight starts the "
    "variant's day, week (Monday) and month boards: a day lasts 23 or 25 hours across a "
    "daylight-saving change, and a period's id is its local date. It cannot change while the "
    "variant's boards hold entries"
)
SEASONS_MEANING = (
    f"fixed, non-overlapping seasons (at most {MAX_SEASONS}): a score goes to the season holding "
    "its achievedAt, or to none. Listing seasons adds season to periods where periods is left "
    "out. A season that has ended cannot change; the one running keeps its start"
)


class SeasonIn(CamelModel):
    """One season: from ``startsAt`` (inclusive) to ``endsAt`` (exclusive)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")

    id: str = Field(pattern=SEASON_ID_PATTERN, examples=["s1"])
    starts_at: AwareDatetime = Field(description="ISO 8601 with an offset, like 2027-01-01T00:00Z")
    ends_at: AwareDatetime = Field(description="after startsAt")

    def season(self) -> Season:
        return Season(self.id, to_ms(self.starts_at), to_ms(self.ends_at))


class SeasonOut(CamelModel):
    id: str
    starts_at: str
    ends_at: str

    @classmethod
    def of(cls, season: Season) -> SeasonOut:
        return cls(
            id=season.id, starts_at=iso_ms(season.starts_at_ms), ends_at=iso_ms(season.ends_at_ms)
        )


TIERS_MEANING = (
    f"a league (2..{MAX_TIERS} tiers, lowest first; needs cohortSize and exactly one period of "
    "day, week, month or season): cohorts form within a tier, and at each period's close each "
    "cohort's best promote move up a tier and worst demote down, for the next period; new "
    "players start in the lowest. The tiers' ids cannot change while the boards hold entries; "
    "their promote and demote may"
)


class TierIn(CamelModel):
    """One tier of a league."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")

    id: str = Field(pattern=TIER_ID_PATTERN, examples=["bronze"])
    promote: Annotated[StrictInt, Field(ge=0, le=MAX_COHORT_SIZE), BeforeValidator(_integral)] = (
        Field(default=0, description="each cohort's best this many move up a tier at the close")
    )
    demote: Annotated[StrictInt, Field(ge=0, le=MAX_COHORT_SIZE), BeforeValidator(_integral)] = (
        Field(default=0, description="each cohort's worst this many move down a tier")
    )

    def tier(self) -> Tier:
        return Tier(self.id, self.promote, self.demote)


class TierOut(CamelModel):
    id: str
    promote: int
    demote: int


class BoardDefinitionIn(CamelModel):
    """How a variant's boards rank. A field left out takes its default (not the stored value: a
    PUT says the whole definition). Unknown fields are refused (422)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=False, extra="forbid")

    order: OrderName = Field(
        default="desc", description="desc: higher is better; asc: lower is better"
    )
    operator: OperatorName = Field(
        default="best",
        description="best: keep the best score; latest: the latest achievedAt replaces; "
        "sum: each accepted submission adds to the player's total",
    )
    periods: list[PeriodName] = Field(
        default_factory=_default_periods,
        min_length=1,
        max_length=5,
        description="the boards a score fans out to, each named once",
        json_schema_extra={"uniqueItems": True},
    )
    retention_days: RetentionDays | None = Field(
        default=None,
        description="days period boards live after they close (default: the service's)",
    )
    score_format: ScoreFormatName = Field(
        default="integer",
        description="how the scores read: integer (points, a count) or duration_ms (a time in "
        "milliseconds, shown m:ss.fff); display only, it may change at any time",
    )
    shards: Shards = Field(default=1, description=SHARDS_MEANING)
    score_min: Score | None = Field(default=None, description=SCORE_MIN_MEANING)
    score_max: Score | None = Field(default=None, description=SCORE_MAX_MEANING)
    time_zone: str = Field(
        default=UTC_NAME, max_length=64, description=TIME_ZONE_MEANING, examples=["Europe/Paris"]
    )
    seasons: list[SeasonIn] = Field(
        default_factory=list, max_length=MAX_SEASONS, description=SEASONS_MEANING
    )
    cohort_size: CohortSize | None = Field(default=None, description=COHORT_SIZE_MEANING)
    join_required: StrictBool = Field(default=False, description=JOIN_REQUIRED_MEANING)
    max_entrants: MaxEntrants | None = Field(default=None, description=MAX_ENTRANTS_MEANING)
    max_attempts: MaxAttempts | None = Field(default=None, description=MAX_ATTEMPTS_MEANING)
    tiers: list[TierIn] = Field(
        default_factory=list, max_length=MAX_TIERS, description=TIERS_MEANING
    )

    @field_validator("time_zone")
    @classmethod
    def _a_zone(cls, name: str) -> str:
        time_zone(name)
        return name

    @model_validator(mode="after")
    def _seasons_kept(self) -> BoardDefinitionIn:
        if self.seasons and "season" not in self.periods:
            if "periods" in self.model_fields_set:
                raise ValueError("seasons are listed: name season in periods too")
            self.periods = [*self.periods, "season"]
        if "season" in self.periods and not self.seasons:
            raise ValueError("the season period needs seasons: list them in seasons")
        self._checked()
        return self

    def _checked(self) -> None:
        """The seasons together (distinct ids, none overlapping) and the league's tiers with the
        fields they need (``ValueError`` says what is wrong)."""
        BoardDefinition(
            periods=tuple(PeriodKind(p) for p in self.periods),
            time_zone=self.time_zone,
            seasons=tuple(s.season() for s in self.seasons),
            cohort_size=self.cohort_size,
            max_entrants=self.max_entrants,
            tiers=tuple(tier.tier() for tier in self.tiers),
        )

    @field_validator("periods")
    @classmethod
    def _each_once(cls, periods: list[str]) -> list[str]:
        if len(set(periods)) != len(periods):
            raise ValueError("must name each period once")
        return periods

    @field_validator("score_max")
    @classmethod
    def _not_below_the_min(cls, score_max: int | None, info: ValidationInfo) -> int | None:
        # scoreMin is validated first (declared first): absent from ``data`` where it failed.
        score_min = info.data.get("score_min")
        if score_max is not None and score_min is not None and score_max < score_min:
            raise ValueError(f"must be at least scoreMin ({score_min}), got {score_max}")
        return score_max

    def definition(self, *, retention_days: int) -> BoardDefinition:
        return BoardDefinition(
            order=Order(self.order),
            operator=Operator(self.operator),
            periods=tuple(PeriodKind(p) for p in self.periods),
            retention_days=self.retention_days or retention_days,
            score_format=ScoreFormat(self.score_format),
            shards=self.shards,
            score_min=self.score_min,
            score_max=self.score_max,
            time_zone=self.time_zone,
            seasons=tuple(s.season() for s in self.seasons),
            cohort_size=self.cohort_size,
            join_required=self.join_required,
            max_entrants=self.max_entrants,
            max_attempts=self.max_attempts,
            tiers=tuple(tier.tier() for tier in self.tiers),
        )


class BoardDefinitionOut(CamelModel):
    game: str
    variant: str
    order: OrderName
    operator: OperatorName
    periods: list[PeriodName]
    retention_days: int
    score_format: ScoreFormatName
    shards: ShardCount = Field(description=SHARDS_MEANING)
    score_min: int | None = Field(description=SCORE_MIN_MEANING)
    score_max: int | None = Field(description=SCORE_MAX_MEANING)
    time_zone: str = Field(description=TIME_ZONE_MEANING)
    seasons: list[SeasonOut] = Field(description=SEASONS_MEANING)
    cohort_size: int | None = Field(description=COHORT_SIZE_MEANING)
    join_required: bool = Field(description=JOIN_REQUIRED_MEANING)
    max_entrants: int | None = Field(description=MAX_ENTRANTS_MEANING)
    max_attempts: int | None = Field(description=MAX_ATTEMPTS_MEANING)
    tiers: list[TierOut] = Field(description=TIERS_MEANING)
    defined: bool = Field(description="false: the variant has none and follows the default")
    defined_at: str | None = Field(default=None, description="when it was last put")

    @classmethod
    def of(
        cls, game: str, variant: str, definition: BoardDefinition, *, defined_at: str | None
    ) -> BoardDefinitionOut:
        return cls(
            game=game,
            variant=variant,
            order=definition.order.value,
            operator=definition.operator.value,
            periods=[p.value for p in definition.periods],
            retention_days=definition.retention_days,
            score_format=definition.score_format.value,
            shards=definition.shards,
            score_min=definition.score_min,
            score_max=definition.score_max,
            time_zone=definition.time_zone,
            seasons=[SeasonOut.of(s) for s in definition.seasons],
            cohort_size=definition.cohort_size,
            join_required=definition.join_required,
            max_entrants=definition.max_entrants,
            max_attempts=definition.max_attempts,
            tiers=[
                TierOut(id=tier.id, promote=tier.promote, demote=tier.demote)
                for tier in definition.tiers
            ],
            defined=defined_at is not None,
            defined_at=defined_at,
        )


class DefaultDefinitionOut(CamelModel):
    order: OrderName
    operator: OperatorName
    periods: list[PeriodName]
    retention_days: int
    score_format: ScoreFormatName
    shards: ShardCount = Field(description=SHARDS_MEANING)
    score_min: int | None = Field(description=SCORE_MIN_MEANING)
    score_max: int | None = Field(description=SCORE_MAX_MEANING)
    time_zone: str = Field(description=TIME_ZONE_MEANING)

    @classmethod
    def of(cls, definition: BoardDefinition) -> DefaultDefinitionOut:
        return cls(
            order=definition.order.value,
            operator=definition.operator.value,
            periods=[p.value for p in definition.periods],
            retention_days=definition.retention_days,
            score_format=definition.score_format.value,
            shards=definition.shards,
            score_min=definition.score_min,
            score_max=definition.score_max,
            time_zone=definition.time_zone,
        )


class VariantsOut(CamelModel):
    game: str
    variants: list[BoardDefinitionOut]
    default: DefaultDefinitionOut | None = Field(
        description="what a variant with no definition follows; null where undefined variants "
        "are refused"
    )
