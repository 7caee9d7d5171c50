"""A reward claim's body (``POST .../claims/{playerId}``)."""

from __future__ import annotations

from pydantic import Field

from app.api.schemas.common import CamelModel
from app.services.ports import Claim


class ClaimOut(CamelModel):
    player_id: str
    leaderboard_id: str
    rank: int = Field(description="the player's exact final rank on the closed board")
    player_count: int
    claimed_at: str = Field(description="when the first claim was answered (ISO 8601 UTC)")

    @classmethod
    def of(cls, claim: Claim) -> ClaimOut:
        return cls(
            player_id=claim.player_id,
            leaderboard_id=claim.board_id,
            rank=claim.rank,
            player_count=claim.player_count,
            claimed_at=claim.claimed_at,
        )
