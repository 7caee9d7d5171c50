"""Cohorts' and tournaments' bodies (DESIGN.md section 16): a join's answer."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from app.api.schemas.common import CamelModel
from app.domain.cohorts import Placement
from app.domain.periods import Board
from app.services.cohorts import LeagueView


class EntrantOut(CamelModel):
    player_id: str
    cohort_id: str | None = Field(
        description="the player's cohort on this period board (1, 2, ...: GET "
        ".../{period}/cohorts/{cohortId}); null on a variant without cohortSize"
    )

    tier: str | None = Field(
        default=None,
        description="the player's league tier on this period board; absent on a variant "
        "without tiers",
    )

    @classmethod
    def of(cls, placement: Placement) -> EntrantOut:
        if placement.tier is None:  # unset, so left out: no tier on a variant without tiers
            return cls(player_id=placement.player_id, cohort_id=placement.cohort_id)
        return cls(
            player_id=placement.player_id, cohort_id=placement.cohort_id, tier=placement.tier
        )


class PreviousPeriodOut(CamelModel):
    period: str = Field(description="the period id of the player's last placement")
    tier: str = Field(description="the tier they played it in")
    cohort_id: str
    move: Literal["up", "down", "stay", "pending"] = Field(
        description="what its close did: pending until that close is done (the period's end "
        "plus the accepted lateness, and a closer's run)"
    )


class LeagueOut(CamelModel):
    tier: str = Field(description="the tier the player plays the current period in")
    cohort_id: str | None = Field(
        description="their cohort on the current period's board; null until they are placed "
        "(their first accepted submission or join)"
    )
    period: str | None = Field(description="the current period's id; null between seasons")
    previous: PreviousPeriodOut | None = Field(
        default=None,
        description="their last placement, where it is not on the current period's board",
    )

    @classmethod
    def of(cls, view: LeagueView) -> LeagueOut:
        last = view.previous
        previous = None
        if last is not None and view.move is not None:
            previous = PreviousPeriodOut(
                period=Board.from_id(last.board_id).period.display,
                tier=last.tier,
                cohort_id=last.cohort_id,
                move=view.move,
            )
        return cls(
            tier=view.tier,
            cohort_id=view.cohort_id,
            period=None if view.period is None else view.period.period.display,
            previous=previous,
        )
