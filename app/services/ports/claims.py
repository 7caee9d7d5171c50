"""The port of the claims ledger: one item per reward claimed, in the player's own partition
(``<player>`` / ``claim#<board>``), so the player's erasure finds it with their rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Claim:
    """A player's claim of their reward on a closed board: where they finished."""

    player_id: str
    board_id: str
    rank: int
    """The player's exact final rank on the board."""
    player_count: int
    claimed_at: str
    """ISO 8601 UTC with milliseconds and ``Z``: when the first claim was answered."""
    token: str
    """The request that made it (unique to a request: a resend of it carries the same)."""


class ClaimLedger(Protocol):
    async def get_claim(self, player_id: str, board_id: str) -> Claim | None:
        """The claim on record, read strongly; ``None`` if the player has not claimed."""

    async def record_claim(self, claim: Claim) -> Claim:
        """Record ``claim`` unless the player has claimed the board already: the claim on
        record, whose ``token`` tells this request's (a resend of this very write after a lost
        answer included) from another's."""

    async def erase_claim(self, player_id: str, board_id: str) -> None:
        """Delete the claim (nothing, if it is gone already): the player's erasure."""
