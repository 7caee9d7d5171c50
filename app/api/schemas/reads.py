"""The public reads' bodies: pages, ranks, around, group boards, standings, the board list."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import ConfigDict, Field
from pydantic.alias_generators import to_camel

from app.api.schemas.common import (
    CamelModel,
)
from app.api.schemas.variants import ScoreFormatName
from app.domain.calendar import Calendar, Span
from app.domain.clock import iso_ms, to_ms
from app.domain.models import Entry
from app.domain.periods import Period
from app.domain.ranks import ExactRank, Rank
from app.services.reads import BoardListing, CohortRank


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


class PeriodOut(CamelModel):
    """The board's period: when it started and ends, and when the next board of its kind begins
    (each in UTC; a day, week or month begins at local midnight in the variant's time zone)."""

    id: str = Field(description="the period in the URL's form: alltime, day:2026-11-30, season:s1")
    starts_at: str | None = Field(description="its first instant; null for alltime")
    ends_at: str | None = Field(description="the first instant after it; null for alltime")
    next_reset_at: str | None = Field(
        description="when the next board of its kind begins (for the current period, its end; "
        "for seasons, the running one's end or the next one's start); null where none will"
    )

    @classmethod
    def of(cls, period: Period, calendar: Calendar, now: datetime) -> PeriodOut:
        try:
            span = calendar.span(period)
        except ValueError:  # a season no longer listed: its board is kept, its span unknown
            span = Span(None, None)
        return cls(
            id=period.display,
            starts_at=_at(span.starts_at),
            ends_at=_at(span.ends_at),
            next_reset_at=_at(calendar.next_reset(period.kind, now)),
        )


PERIOD = Field(description="the board's period, and when the next board of its kind begins")


def _at(moment: datetime | None) -> str | None:
    return None if moment is None else iso_ms(to_ms(moment))


class BoardPageOut(CamelModel):
    leaderboard_id: str
    period: PeriodOut = PERIOD
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
        description="the dated periods the current ones (day, week, month) name now in UTC (a "
        "variant with a time zone of its own says its current one in each board read's period)",
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


class CohortRankOut(CamelModel):
    cohort_id: str = Field(description="the player's cohort (GET .../{period}/cohorts/{cohortId})")
    tier: str | None = Field(
        default=None, description="the player's league tier on this board (a variant with tiers)"
    )
    rank: int = Field(description="the player's exact rank in their cohort")

    @classmethod
    def of(cls, cohort: CohortRank | None) -> CohortRankOut | None:
        if cohort is None:
            return None
        return cls(cohort_id=cohort.cohort_id, tier=cohort.tier, rank=cohort.rank)


class PlayerRankOut(CamelModel):
    leaderboard_id: str
    period: PeriodOut = PERIOD
    score_format: ScoreFormatName = SCORE_FORMAT
    entry: PlayerEntryOut
    rank: RankOut
    cohort: CohortRankOut | None = Field(
        default=None,
        description="on a variant with cohortSize: the player's cohort and their rank in it "
        "(rank stays the board-wide rank); absent elsewhere",
    )


class AroundEntryOut(EntryOut):
    rank_range: tuple[int, int] | None = None


class AroundOut(CamelModel):
    leaderboard_id: str
    period: PeriodOut = PERIOD
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
    period: PeriodOut = PERIOD
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
