"""A Python client for the Leaderboard service's HTTP API (v1): typed models generated from its
OpenAPI document, and a thin layer that submits scores safely and reads boards and ranks."""

from .client import (
    AsyncLeaderboardClient,
    EstimatedRank,
    ExactRank,
    LeaderboardClient,
    LeaderboardError,
    PlayerRank,
    Rank,
    Submission,
)

__all__ = [
    "AsyncLeaderboardClient",
    "EstimatedRank",
    "ExactRank",
    "LeaderboardClient",
    "LeaderboardError",
    "PlayerRank",
    "Rank",
    "Submission",
]
__version__ = "0.1.0"
