"""What a submission says of each board before it writes: the ranks before and after its move
(``rankDelta``), when it was achieved, checked against the clock and the lateness, and its score,
checked against its variant's bounds."""

from __future__ import annotations

from dataclasses import replace

import structlog

from app import telemetry
from app.domain.definitions import BoardDefinition
from app.domain.periods import COHORT_MARK
from app.domain.ranks import EstimatedRank, ExactRank, Rank, RankQuery
from app.domain.submission import PlannedWrite, Submission
from app.errors import CountsIncomplete, InvalidInput, ScoreOutOfBounds, Throttled
from app.services.policies import SubmitPolicy
from app.services.ranking import Ranking

log = structlog.get_logger(__name__)


async def with_ranks(  # noqa: PLR0912 (one branch a kind of move, and a cohort's skipped)
    ranking: Ranking, definition: BoardDefinition, planned: list[PlannedWrite]
) -> tuple[list[PlannedWrite], frozenset[str]]:
    """Add rankBefore/rankAfter where they are exact; leave them out where they are not; and
    the boards whose rank after the move is a range (the player lands deep in a crowded slot).
    Asked before the write, of the counters as they stand: after the move the player is at
    ``key``; before it, at ``previous_key`` (nowhere, for a new player)."""
    queries: list[RankQuery] = []
    consistent = definition.places_fall
    for p in planned:
        board_id = p.outcome.board_id
        if COHORT_MARK in board_id:
            continue  # a cohort's row is not in the answer: no rank asked (decision 0039)
        shards = definition.shards
        if p.previous_key is None or not p.previous_counted:
            # Counted nowhere: a new player, or a hidden one (decision 0036), whose ranks are
            # where they would land among the players the board shows.
            queries.append(
                RankQuery(board_id, p.key, on_board=False, tie_mark=p.tie_mark, shards=shards)
            )
            if p.previous_key is not None and p.previous_key != p.key:
                queries.append(RankQuery(board_id, p.previous_key, on_board=False, shards=shards))
        elif p.previous_key == p.key:
            queries.append(
                RankQuery(
                    board_id,
                    p.key,
                    tie_mark=p.previous_tie_mark,
                    consistent=consistent,
                    shards=shards,
                )
            )
        else:
            queries.append(
                RankQuery(
                    board_id,
                    p.key,
                    counted_at=p.previous_key,
                    tie_mark=p.tie_mark,
                    counted_mark=p.previous_tie_mark,
                    consistent=consistent,
                    shards=shards,
                )
            )
            queries.append(
                RankQuery(
                    board_id,
                    p.previous_key,
                    tie_mark=p.previous_tie_mark,
                    consistent=consistent,
                    shards=shards,
                )
            )
    try:
        ranks = await ranking.rank_many(queries)
    except CountsIncomplete:
        # A board's counters are part-written: no rank is known, so none is said.
        return planned, frozenset()
    except Throttled as throttled:
        # The rank reads of a hot board met its limits: the score matters more than the ranks
        # around it, so it is written all the same, and no rank is said.
        telemetry.rank_delta_skipped("throttled")
        log.info("rank_delta_skipped", reason="throttled", detail=throttled.detail)
        return planned, frozenset()
    found = iter(ranks)
    ranked = []
    ranges: set[str] = set()
    for p in planned:
        if COHORT_MARK in p.outcome.board_id:
            ranked.append(p)
            continue
        after = next(found)
        if isinstance(after, EstimatedRank):
            ranges.add(p.outcome.board_id)
        if p.previous_key is None:
            before: Rank | None = None
        elif p.previous_key == p.key:
            before = after
        else:
            before = next(found)
        ranked.append(
            replace(
                p,
                outcome=replace(p.outcome, rank_after=_exact(after), rank_before=_exact(before)),
            )
        )
    return ranked, frozenset(ranges)


def _exact(rank: Rank | None) -> int | None:
    return rank.rank if isinstance(rank, ExactRank) else None


def checked_achieved_at(submission: Submission, policy: SubmitPolicy, now_ms: int) -> int:
    if submission.achieved_at_ms is None:
        return now_ms
    ahead = submission.achieved_at_ms - now_ms
    if ahead > policy.future_skew.total_seconds() * 1000:
        raise InvalidInput(
            f"achievedAt is {ahead / 1000:.1f} s ahead of the server's clock "
            f"(at most {policy.future_skew.total_seconds():g} s allowed)",
            errors=[{"field": "achievedAt", "message": "in the future"}],
        )
    if -ahead > policy.max_lateness.total_seconds() * 1000:
        raise InvalidInput(
            f"achievedAt is older than the allowed lateness of {policy.max_lateness.total_seconds():g} s",
            errors=[{"field": "achievedAt", "message": "too old"}],
        )
    return submission.achieved_at_ms


def check_bounds(submission: Submission, definition: BoardDefinition) -> None:
    """``ScoreOutOfBounds`` where the score is outside the definition's ``scoreMin`` and
    ``scoreMax``: before anything is read or written, so the refusal stores nothing (no row, no
    counter, no Idempotency-Key record: the same request after the bounds change is judged
    anew)."""
    score = submission.score
    if definition.within_bounds(score):
        return
    game, variant = submission.game, submission.variant
    bounds = definition.bounds_words
    raise ScoreOutOfBounds(
        f"score {score} is outside the bounds of {game}/{variant}: its scores are {bounds} "
        f"({definition.bounds_named}); nothing was written",
        errors=[{"field": "score", "message": f"must be {bounds}, got {score}"}],
    )
