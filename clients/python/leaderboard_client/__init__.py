"""A Python client for the Leaderboard service's HTTP API (v1): typed models generated from its
OpenAPI document, and a thin layer that submits scores safely and reads boards and ranks."""

from .client import (
    AsyncLeaderboardClient,
    BatchItem,
    BatchResult,
    Claim,
    Entrant,
    EstimatedRank,
    ExactRank,
    LeaderboardClient,
    LeaderboardError,
    PlayerRank,
    Rank,
    Refused,
    Submission,
)
from .webhooks import EVENT_ID_HEADER, SIGNATURE_HEADER, verify_signature

__all__ = [
    "EVENT_ID_HEADER",
    "SIGNATURE_HEADER",
    "AsyncLeaderboardClient",
    "BatchItem",
    "BatchResult",
    "Claim",
    "Entrant",
    "EstimatedRank",
    "ExactRank",
    "LeaderboardClient",
    "LeaderboardError",
    "PlayerRank",
    "Rank",
    "Refused",
    "Submission",
    "verify_signature",
]
__version__ = "0.1.0"
