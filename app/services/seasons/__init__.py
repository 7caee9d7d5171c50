"""What a period's close gives players: their rewards, claimed exactly once (``_claims``). The
close itself is operators' work (``app.services.operations._close``)."""

from __future__ import annotations

from app.services.ports import Stores
from app.services.ports.claims import Claim, ClaimLedger
from app.services.seasons._claims import ClaimAsk, ClaimOutcome, ClaimPolicy, claim_reward


class Claims:
    """Players' claims of their final place on closed boards, over the board's rows and the
    claims ledger."""

    def __init__(self, stores: Stores, ledger: ClaimLedger, policy: ClaimPolicy) -> None:
        self._stores = stores
        self._ledger = ledger
        self._policy = policy

    async def claim(self, ask: ClaimAsk) -> ClaimOutcome:
        """201's claim (``first``) or 200's: see ``claim_reward``."""
        return await claim_reward(self._stores, self._ledger, self._policy, ask)


__all__ = ["Claim", "ClaimAsk", "ClaimLedger", "ClaimOutcome", "ClaimPolicy", "Claims"]
