"""The service: its use cases grouped by who asks, built once by the composition root
(``app.bootstrap``). The HTTP routes, the ``leaderboard`` command and the demo call these
methods and nothing below them."""

from __future__ import annotations

from dataclasses import dataclass

from app.services.api_keys import ApiKeys
from app.services.cohorts import Cohorts
from app.services.operations import Operations
from app.services.ports import Readiness
from app.services.ranking import Ranking
from app.services.reads import BoardReads
from app.services.rules import BoardRules
from app.services.seasons import Claims
from app.services.submissions import Submissions
from app.services.webhooks import Webhooks


@dataclass(frozen=True)
class Leaderboard:
    submissions: Submissions
    """Game servers' scores."""
    reads: BoardReads
    """Players' and viewers' reads of boards, ranks and snapshots."""
    rules: BoardRules
    """How each variant's boards rank: defining them, and knowing it on every request."""
    operations: Operations
    """Operators' work on boards and players."""
    api_keys: ApiKeys
    """API keys: issuing, listing, revoking, and recognising one on a request."""
    readiness: Readiness
    """Whether the tables answer (``/readyz``)."""
    ranking: Ranking
    """The task's ranks, which submissions and reads share (its tie builds close with it)."""
    webhooks: Webhooks
    """A game's webhook, its deliveries, and the deliverer the service's tasks run."""
    claims: Claims
    """Players' rewards on closed boards, claimed exactly once."""
    cohorts: Cohorts
    """Players' joins and places on the period boards of cohort variants."""

    async def ping(self) -> None:
        """``Unavailable`` unless both tables answer."""
        await self.readiness.ping()
