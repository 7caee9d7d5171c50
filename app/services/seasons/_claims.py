"""Rewards exactly once: a player's claim of their final place on a closed board (docs/
operations.md, "Claims"). The first claim is recorded in the ledger with the request's token;
every later one answers what was recorded, so the game grants the reward on the first only.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from datetime import datetime, timedelta

from app import telemetry
from app.domain.buckets import BucketLayout
from app.domain.calendar import board_is_expired, period_closes_at
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import key_just_below
from app.domain.models import Standing
from app.domain.periods import Board
from app.domain.ranks import ExactRank, RankQuery
from app.domain.shards import partition_ids, player_partition
from app.errors import NotFound, PeriodOpen
from app.services.ports import Stores
from app.services.ports.claims import Claim, ClaimLedger
from app.services.ranking.pages import player_count
from app.services.ranking.ranks import rank_of
from app.services.work import persist

_LONGEST_WAIT_S = 86_400
"""The longest ``Retry-After`` a claim on an open period is told (an all-time board's: never)."""
_WRITE_ATTEMPTS = 4
"""Tries of the claim's put within the request (botocore's own retries inside each)."""
_EVERY_KEY = 2**31 - 1
"""A COUNT's cap that no board reaches: the count is exact."""


@dataclass(frozen=True)
class ClaimPolicy:
    layout: BucketLayout
    cap: int
    """The rank reads' COUNT cap: past it, the final rank is counted whole."""
    settle: timedelta
    """How long after its end a period is closed (the accepted lateness)."""


@dataclass(frozen=True)
class ClaimAsk:
    board: Board
    definition: BoardDefinition
    player_id: str
    now: datetime
    token: str
    """Unique to the request (or to its Idempotency-Key): what tells its own claim."""


@dataclass(frozen=True)
class ClaimOutcome:
    claim: Claim
    first: bool
    """This request's claim (201: grant the reward), not one made before (200)."""


async def claim_reward(
    stores: Stores, ledger: ClaimLedger, policy: ClaimPolicy, ask: ClaimAsk
) -> ClaimOutcome:
    """The player's claim on the closed board: recorded now (``first``), or as recorded before.
    ``PeriodOpen`` before the close; ``NotFound`` for a player not on the board (or hidden), and
    for a board past its retention."""
    board, definition, player = ask.board, ask.definition, ask.player_id
    closes = period_closes_at(board, definition, settle=policy.settle)
    if closes is None or closes > ask.now:
        telemetry.claim_answered("open")
        wait = _LONGEST_WAIT_S if closes is None else (closes - ask.now).total_seconds() + 1
        raise PeriodOpen(
            f"the period of board {board.board_id} "
            + ("never closes" if closes is None else f"closes at {iso_ms(to_ms(closes))}"),
            retry_after=int(min(wait, _LONGEST_WAIT_S)),
        )
    standing, recorded = None, None
    if not board_is_expired(board, now=ask.now, definition=definition):
        row_id = player_partition(board.board_id, player, definition.shards)
        standing, recorded = await asyncio.gather(
            stores.standings.read_standing(row_id, player),
            ledger.get_claim(player, board.board_id),
        )
    if standing is None:
        telemetry.claim_answered("absent")
        raise NotFound(f"player {player!r} is not on board {board.board_id}")
    if recorded is None:
        rank, players = await final_place(stores, policy, board, definition, standing)
        claimed_at = iso_ms(to_ms(ask.now))
        mine = Claim(player, board.board_id, rank, players, claimed_at, ask.token)
        # Tried again on throttling or a held item with the same token: a write of it that
        # landed unanswered is still found to be this request's.
        recorded = await persist(
            functools.partial(ledger.record_claim, mine), attempts=_WRITE_ATTEMPTS, cap_s=0.5
        )
    first = recorded.token == ask.token
    telemetry.claim_answered("first" if first else "repeat")
    return ClaimOutcome(recorded, first)


async def final_place(
    stores: Stores,
    policy: ClaimPolicy,
    board: Board,
    definition: BoardDefinition,
    standing: Standing,
) -> tuple[int, int]:
    """The player's exact rank on the closed board, and its player count. The rank read first
    (counters and a capped COUNT, one round trip); where it is a range, the entries ahead are
    counted whole on every partition: the board no longer changes, and a reward is never paid
    on an estimate."""
    shards = definition.shards
    query = RankQuery(
        board.board_id,
        standing.entry.key,
        tie_mark=standing.tie_mark,
        consistent=True,
        shards=shards,
    )
    rank, players = await asyncio.gather(
        rank_of(stores.ranks, policy.layout, query, cap=policy.cap),
        player_count(stores.counters, board.board_id, shards),
    )
    if isinstance(rank, ExactRank):
        exact = rank.rank
    else:
        below = key_just_below(standing.entry.key.encode())
        counted = await asyncio.gather(
            *(
                stores.ranks.count_keys(
                    pid, "0", below, limit=_EVERY_KEY, exclude_player=standing.entry.player_id
                )
                for pid in partition_ids(board.board_id, shards)
            )
        )
        exact = sum(count for count, _ in counted) + 1
    return exact, max(players, exact)
