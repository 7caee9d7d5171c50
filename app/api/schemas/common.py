"""What every body shares: the id, name and score types, the camelCase base model, problem
documents."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
)
from pydantic.alias_generators import to_camel

from app.api.patterns import COUNTRY_PATTERN, DISPLAY_NAME_PATTERN
from app.domain.keys import ID_PATTERN, SCORE_CEILING
from app.domain.storage_keys import RESERVED_GAMES

Id = Annotated[str, Field(pattern=ID_PATTERN, examples=["player_123"])]
"""A player's id."""
VariantId = Annotated[str, Field(pattern=ID_PATTERN, examples=["classic"])]


def _not_reserved(game: str) -> str:
    if game in RESERVED_GAMES:
        raise ValueError(f"{game!r} is a reserved name")
    return game


GameId = Annotated[
    str,
    Field(
        pattern=ID_PATTERN,
        examples=["trivia"],
        description="the game; a few names are the service's own, and refused (422)",
    ),
    AfterValidator(_not_reserved),
]
DisplayName = Annotated[str, Field(min_length=1, max_length=64, pattern=DISPLAY_NAME_PATTERN)]
Country = Annotated[str, Field(pattern=COUNTRY_PATTERN, description="ISO 3166-1 alpha-2")]


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


class CamelModel(BaseModel):
    """A body whose fields are camelCase on the wire (``playerId``), snake_case in Python."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


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


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route's problem statuses (``app.api.openapi`` types each as
    the ``Problem`` under ``application/problem+json``)."""
    return {status: {"model": Problem} for status in statuses}
