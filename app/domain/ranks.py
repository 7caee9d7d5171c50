"""Rank arithmetic: from counts of the entries ahead to an exact rank or an honest range.

Nothing here does I/O. The service layer gathers the counts (counter items and one capped COUNT of
the index); this module turns them into what the API reports, and never reports an estimate as a
fact: when the capped count cannot settle the player's place inside their bucket, ``rank`` is absent
and the range is given instead, a range that always contains the true rank.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ExactRank:
    rank: int
    top_percent: float

    kind = "exact"


@dataclass(frozen=True)
class EstimatedRank:
    rank_range: tuple[int, int]
    top_percent_range: tuple[float, float]
    rank_estimate: int

    kind = "estimated"


Rank = ExactRank | EstimatedRank


def top_percent(rank: int, player_count: int) -> float:
    """The share of the board at or above ``rank``, in percent, to two decimals; never above 100
    (a counter read a moment after the index can make ``rank`` exceed the count briefly)."""
    if player_count <= 0:
        return 100.0
    return round(min(100.0, 100.0 * rank / player_count), 2)


def rank_from_counts(
    *,
    ahead_in_higher_buckets: int,
    ahead_in_bucket: int,
    bucket_capped: bool,
    bucket_size: int,
    player_count: int,
) -> Rank:
    """Combine the counts into a rank.

    ``ahead_in_higher_buckets`` counts the players in buckets entirely ahead of the player's own;
    ``ahead_in_bucket`` is the capped COUNT inside the player's bucket, ``bucket_capped`` whether it
    stopped at its cap; ``bucket_size`` is the bucket's counter (the player included).
    """
    if not bucket_capped:
        rank = ahead_in_higher_buckets + ahead_in_bucket + 1
        return ExactRank(rank, top_percent(rank, max(player_count, rank)))
    # At least ``ahead_in_bucket`` (the cap) are ahead inside the bucket, and at most everyone in it
    # but the player; a counter that lags the index cannot make the range exclude the truth.
    lo = ahead_in_higher_buckets + ahead_in_bucket + 1
    hi = max(lo, ahead_in_higher_buckets + bucket_size)
    count = max(player_count, hi)
    return EstimatedRank(
        rank_range=(lo, hi),
        top_percent_range=(top_percent(lo, count), top_percent(hi, count)),
        rank_estimate=(lo + hi) // 2,
    )
