"""Cohorts' and tournaments' bodies (DESIGN.md section 16): a join's answer."""

from __future__ import annotations

from pydantic import Field

from app.api.schemas.common import CamelModel
from app.domain.cohorts import Placement


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
