"""A player's rank in their cohort (decision 0039), read beside their board-wide rank: a cohort
holds at most ``cohortSize`` (1,000) players on one index partition, so its rank is one exact
COUNT, and the cohort's part costs 2 calls whatever the board's."""

from __future__ import annotations

from dataclasses import replace

from app.domain.calendar import board_is_expired
from app.domain.keys import key_just_below
from app.domain.periods import Board, tier_of_cohort
from app.services.ports import Stores
from app.services.ranking import Ranking
from app.services.reads._asks import BoardAsk
from app.services.reads._players import CohortRank, PlayerRank, player_rank
from app.services.work import both

_EVERY_KEY = 2**31 - 1
"""A COUNT's cap no cohort reaches (a cohort holds at most 1,000): the count is exact."""


async def rank_with_cohort(
    stores: Stores, ranking: Ranking, asked: BoardAsk, player_id: str
) -> PlayerRank:
    """The player's board rank (``player_rank``) and, at the same time, their rank in their
    cohort: no round trip more than the board's rank alone."""
    found, in_cohort = await both(
        player_rank(stores, ranking, asked, player_id), cohort_rank(stores, asked, player_id)
    )
    return replace(found, cohort=in_cohort)


async def cohort_rank(stores: Stores, asked: BoardAsk, player_id: str) -> CohortRank | None:
    """The player's cohort and exact rank in it, in 2 calls: their row on their cohort (one
    Query of their partition, strongly consistent: its board id names the cohort and it holds
    their key), then one COUNT of the cohort's index partition ahead of that key. ``None`` where
    they have no visible cohort row (none yet, hidden, or expired)."""
    board, now = asked.board, asked.now
    if board_is_expired(board, now=now, definition=asked.definition):
        return None
    row = await stores.standings.cohort_row(board.board_id, player_id)
    if (
        row is None
        or row.hidden
        or (row.expires_at is not None and row.expires_at <= now.timestamp())
    ):
        return None
    cohort_id = Board.from_id(row.board_id).cohort
    if cohort_id is None:  # not a cohort's id: nothing of this board's would be
        return None
    key = row.entry.key
    ahead, _ = await stores.ranks.count_keys(
        row.board_id,
        "0",
        key_just_below(key.encode()),
        limit=_EVERY_KEY,
        exclude_player=key.player_id,
    )
    return CohortRank(cohort_id, tier_of_cohort(cohort_id), ahead + 1)
