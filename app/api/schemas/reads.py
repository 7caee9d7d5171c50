"""The public reads' bodies: pages, ranks, around, group boards, standings, the board list."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from app.api.schemas.common import (
    CamelModel,
)
from app.api.schemas.variants import ScoreFormatName
from app.domain.clock import iso_ms
from app.domain.models import Entry
from app.domain.ranks import ExactRank, Rank
from app.services.reads import BoardListing


class EntryOut(CamelModel):
    rank: int | None
    player_id: str
    display_name: str | None
    country: str | None
    score: int
    achieved_at: str
    metadata: dict[str, Any] | None = Field(
        description="what the submission that set the entry sent as its metadata; null if none"
    )

    @classmethod
    def of(cls, entry: Entry, rank: int | None, **more: Any) -> Self:
        """The entry as shown; ``more`` fills a subclass's own fields."""
        return cls(
            rank=rank,
            player_id=entry.player_id,
            display_name=entry.display_name,
            country=entry.country,
            score=entry.score,
            achieved_at=iso_ms(entry.key.achieved_at_ms),
            metadata=None if entry.metadata_json is None else json.loads(entry.metadata_json),
            **more,
        )


SCORE_FORMAT = Field(description="how the scores read (the variant's definition)")


class BoardPageOut(CamelModel):
    leaderboard_id: str
    player_count: int
    score_format: ScoreFormatName = SCORE_FORMAT
    entries: list[EntryOut]
    next_cursor: str | None


class VariantBoardsOut(CamelModel):
    variant: str
    periods: list[str] = Field(
        description="the variant's live boards, in the path's form: alltime, then each kind's "
        "periods newest first (day:2026-12-01, ..., week:2026-W49, ...)",
        examples=[["alltime", "day:2026-12-01", "day:2026-11-30", "week:2026-W49"]],
    )


class GameBoardsOut(CamelModel):
    game: str
    variants: list[VariantBoardsOut]


class BoardListOut(CamelModel):
    """The games and variants that have boards, from the board registry."""

    games: list[GameBoardsOut]
    current_periods: list[str] = Field(
        description="the dated periods the current ones (day, week) name now",
        examples=[["day:2026-12-01", "week:2026-W49"]],
    )
    next_cursor: str | None = Field(
        description="pass as cursor for the next page of variants; null on the last (a page "
        "may list fewer than limit: a variant with no live board is left out)"
    )

    @classmethod
    def of(cls, listing: BoardListing) -> BoardListOut:
        return cls(
            games=[
                GameBoardsOut(
                    game=game.game,
                    variants=[
                        VariantBoardsOut(variant=v.variant, periods=[p.display for p in v.periods])
                        for v in game.variants
                    ],
                )
                for game in listing.games
            ],
            current_periods=[p.display for p in listing.current],
            next_cursor=listing.next_cursor,
        )


class ExactRankOut(CamelModel):
    # Every answer carries ``kind``: the document says so, and a client tells the two apart by it.
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        json_schema_serialization_defaults_required=True,
    )

    kind: Literal["exact"] = "exact"
    rank: int
    top_percent: float


class EstimatedRankOut(CamelModel):
    """An honest range: ``rank`` is null, and the range always holds the true rank."""

    model_config = ExactRankOut.model_config

    kind: Literal["estimated"] = "estimated"
    rank: None = None
    rank_range: tuple[int, int]
    top_percent_range: tuple[float, float]
    rank_estimate: int


RankOut = Annotated[ExactRankOut | EstimatedRankOut, Field(discriminator="kind")]


def rank_out(rank: Rank) -> ExactRankOut | EstimatedRankOut:
    if isinstance(rank, ExactRank):
        return ExactRankOut(rank=rank.rank, top_percent=rank.top_percent)
    return EstimatedRankOut(
        rank_range=rank.rank_range,
        top_percent_range=rank.top_percent_range,
        rank_estimate=rank.rank_estimate,
    )


class PlayerEntryOut(EntryOut):
    context: dict[str, Any] | None = Field(
        description="what the submission that set the entry sent as its context; null if none"
    )


class PlayerRankOut(CamelModel):
    leaderboard_id: str
    score_format: ScoreFormatName = SCORE_FORMAT
    entry: PlayerEntryOut
    rank: RankOut


class AroundEntryOut(EntryOut):
    rank_range: tuple[int, int] | None = None


class AroundOut(CamelModel):
    leaderboard_id: str
    score_format: ScoreFormatName = SCORE_FORMAT
    rank_kind: Literal["exact", "estimated"]
    entries: list[AroundEntryOut]


class GroupEntryOut(CamelModel):
    group_rank: int = Field(description="the place among the players named (1..k)")
    entry: EntryOut
    rank: RankOut | None = Field(
        default=None, description="the board rank, as the rank endpoint gives it (withRank=true)"
    )


class GroupOut(CamelModel):
    leaderboard_id: str
    score_format: ScoreFormatName = SCORE_FORMAT
    entries: list[GroupEntryOut]


class BoardStandingOut(CamelModel):
    leaderboard_id: str
    period: str
    best: int
    rank: RankOut


class StandingsOut(CamelModel):
    player_id: str
    boards: list[BoardStandingOut]
    next_cursor: str | None = Field(
        description="pass as cursor for the next page of the player's boards; null on the last "
        "(a page may hold fewer boards than limit, even none, and still have a next one)"
    )
