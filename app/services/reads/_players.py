"""Where am I: a player's entry and rank on a board, the players around them, and their standings
on every live board."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from app.domain.calendar import board_expiry_s, board_is_expired
from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.definitions import BoardDefinition
from app.domain.models import Entry, Standing
from app.domain.periods import Board
from app.domain.ranks import EstimatedRank, ExactRank, Rank, RankQuery
from app.domain.shards import board_of_partition, partition_ids, player_partition
from app.errors import InvalidCursor, InvalidInput, NotFound
from app.services.policies import ReadPolicy
from app.services.ports import BoardIndex, StandingStore, Stores
from app.services.ranking import Ranking
from app.services.reads._asks import BoardAsk, PageAsk
from app.services.rules.held import Definitions


@dataclass(frozen=True)
class CohortRank:
    """A player's place in their cohort of a period board (decision 0039): exact, always."""

    cohort_id: str
    tier: str | None
    """Their league tier, which the cohort's id names (``None`` outside a league)."""
    rank: int


@dataclass(frozen=True)
class PlayerRank:
    board: Board
    entry: Entry
    rank: Rank
    context_json: str | None = None
    """The context the submission that set the entry sent (the player's own row holds it)."""
    read_at: datetime | None = None
    """When the reads the rank stands on began, where they are not this request's own (a hot
    board's mirror: ``Ranking.rank_at``)."""
    cohort: CohortRank | None = None
    """Their rank in their cohort, on a period board of a variant with ``cohortSize``, where
    their cohort's row is read (every submission writes it beside the board's)."""


@dataclass(frozen=True)
class Neighbour:
    entry: Entry
    offset: int
    """Places from the player: -2 is two ahead, 0 is the player, 1 is just behind."""


@dataclass(frozen=True)
class Around:
    player: PlayerRank
    neighbours: list[Neighbour]

    def rank_of(self, neighbour: Neighbour) -> int | None:
        if isinstance(self.player.rank, ExactRank):
            return self.player.rank.rank + neighbour.offset
        return None

    def range_of(self, neighbour: Neighbour) -> tuple[int, int] | None:
        if isinstance(self.player.rank, EstimatedRank):
            lo, hi = self.player.rank.rank_range
            return max(1, lo + neighbour.offset), max(1, hi + neighbour.offset)
        return None


async def player_rank(
    stores: Stores, ranking: Ranking, asked: BoardAsk, player_id: str
) -> PlayerRank:
    """The player's entry (read strongly from their row) and rank: one round trip for the row,
    one for the rank's reads."""
    standing = await _standing(stores.standings, asked, player_id)
    query = _query(asked.board, asked.definition, standing)
    rank, read_at = await ranking.rank_at(query)
    _build_if_crowded(ranking, asked, standing, query, rank)
    return PlayerRank(asked.board, standing.entry, rank, standing.context_json, read_at)


def _build_if_crowded(
    ranking: Ranking, asked: BoardAsk, standing: Standing, query: RankQuery, rank: Rank
) -> None:
    """A range: have the task build (or repair) the slot's tie counters where the player's row is
    (the player's partition of a sharded board)."""
    expires_at = board_expiry_s(asked.board, asked.definition)
    ranking.build_if_crowded(standing.board_id, query, rank, expires_at=expires_at)


def _query(board: Board, definition: BoardDefinition, standing: Standing) -> RankQuery:
    """The rank of the player's standing on the board (on each partition of a sharded one)."""
    return RankQuery(
        board.board_id,
        standing.entry.key,
        tie_mark=standing.tie_mark,
        consistent=definition.places_fall,
        shards=definition.shards,
    )


async def _standing(standings: StandingStore, asked: BoardAsk, player_id: str) -> Standing:
    board, definition = asked.board, asked.definition
    standing = None
    if not board_is_expired(board, now=asked.now, definition=definition):
        row_id = player_partition(board.board_id, player_id, definition.shards)
        standing = await standings.read_standing(row_id, player_id)
    if standing is None:
        raise NotFound(f"player {player_id!r} is not on board {board.board_id}")
    return standing


async def around_player(
    stores: Stores,
    ranking: Ranking,
    asked: BoardAsk,
    player_id: str,
    before: int,
    after: int,
) -> Around:
    """The ``before`` entries just ahead, the player, the ``after`` just behind, in board order:
    one round trip for the player's row, one for their rank and the neighbours together."""
    board, shards = asked.board, asked.definition.shards
    standing = await _standing(stores.standings, asked, player_id)
    key = standing.entry.key.encode()
    query = _query(board, asked.definition, standing)
    (rank, read_at), ahead, behind = await asyncio.gather(
        ranking.rank_at(query),
        _neighbours(stores.index, board, shards, key, ahead=True, limit=before),
        _neighbours(stores.index, board, shards, key, ahead=False, limit=after),
    )
    _build_if_crowded(ranking, asked, standing, query, rank)
    found = PlayerRank(board, standing.entry, rank, standing.context_json, read_at)
    neighbours = [Neighbour(e, -(i + 1)) for i, e in enumerate(ahead)][::-1]
    neighbours.append(Neighbour(found.entry, 0))
    neighbours += [Neighbour(e, i + 1) for i, e in enumerate(behind)]
    return Around(found, neighbours)


async def _neighbours(
    index: BoardIndex, board: Board, shards: int, key: str, *, ahead: bool, limit: int
) -> list[Entry]:
    """The ``limit`` entries nearest ``key`` on one side, nearest first: of the board, or of
    every partition of a sharded board at once, merged."""
    found = await asyncio.gather(
        *(
            index.query_neighbours(pid, key, ahead=ahead, limit=limit)
            for pid in partition_ids(board.board_id, shards)
        )
    )
    if shards == 1:
        return found[0]
    merged = sorted((e for entries in found for e in entries), key=lambda e: e.key.order)
    return (merged[::-1] if ahead else merged)[:limit]


@dataclass(frozen=True)
class BoardStanding:
    board: Board
    standing: Standing
    rank: Rank


@dataclass(frozen=True)
class StandingsPage:
    boards: list[BoardStanding]
    next_cursor: str | None
    """Where the next page starts; ``None``: this page is the last."""


MAX_STANDINGS = 20
"""Most boards one page of a player's standings holds: it reads each one's rank, as a group board
with ``withRank`` does for at most as many players (``MAX_GROUP_RANKED``)."""
STANDINGS_ROWS_PER_QUERY = 100
"""Rows of the player's partition one Query of a page reads (a few KB): their idempotency records
and snapshot memberships, which sort among their boards, count too."""
STANDINGS_QUERIES_PER_PAGE = 3
"""Most Queries of the player's partition one page makes: past a crowd of other rows, a page may
hold fewer boards than ``limit`` (even none) and still have a next one."""


async def player_standings(
    stores: Stores,
    policy: ReadPolicy,
    ranking: Ranking,
    definitions: Definitions,
    player_id: str,
    page: PageAsk,
) -> StandingsPage:
    """Up to ``limit`` of the live boards the player is on, in board id order, after where
    ``cursor`` left off: at most ``STANDINGS_QUERIES_PER_PAGE`` base-table Queries, then the
    ranks together (and each variant's definition, mostly remembered: it says how long its
    boards live)."""
    scope = _standings_scope(player_id)
    after = _standings_start(page.cursor, scope, policy.cursor_secret)
    limit, now = page.limit, page.now
    rows: list[Standing] = []
    last: str | None = after
    for _ in range(STANDINGS_QUERIES_PER_PAGE):
        read = await stores.standings.standings_page(
            player_id, after=last or "", limit=STANDINGS_ROWS_PER_QUERY
        )
        rows += read.standings
        last = read.last
        if last is None or len(rows) >= limit:
            break
    if len(rows) > limit:
        rows, last = rows[:limit], rows[limit - 1].board_id
    # A row of a sharded board is on one of its partitions: ranked on the whole board.
    boards = [(Board.from_id(board_of_partition(row.board_id)), row) for row in rows]
    variants = sorted({(board.game, board.variant) for board, _ in boards})
    found = await asyncio.gather(*(definitions.of(game, variant) for game, variant in variants))
    definition_of = {v: resolved.definition for v, resolved in zip(variants, found, strict=True)}
    live = [
        (board, row)
        for board, row in boards
        if not board_is_expired(
            board, now=now, definition=definition_of[(board.game, board.variant)]
        )
        and (row.expires_at is None or row.expires_at > now.timestamp())
    ]
    ranked = await ranking.rank_many(
        [_query(board, definition_of[(board.game, board.variant)], row) for board, row in live]
    )
    next_cursor = (
        None if last is None else encode_cursor(Cursor(scope, last, "", 0), policy.cursor_secret)
    )
    return StandingsPage(
        [BoardStanding(board, row, rank) for (board, row), rank in zip(live, ranked, strict=True)],
        next_cursor,
    )


def _standings_scope(player_id: str) -> str:
    """What a standings cursor is bound to: this player's standings (two parts, where a board id
    has three or more, so no board page's cursor is one)."""
    return f"standings#{player_id}"


def _standings_start(cursor: str | None, scope: str, secret: bytes) -> str:
    if cursor is None:
        return ""
    try:
        return decode_cursor(cursor, secret, board_id=scope).rank_key
    except CursorError:
        raise InvalidCursor(
            "the cursor is not one this service issued for this player's standings"
        ) from None


MAX_GROUP = 100
"""Most ids one group board names (one BatchGetItem)."""
MAX_GROUP_RANKED = 20
"""Most ids a group board with each one's board rank names (the ranks' reads grow with them)."""


@dataclass(frozen=True)
class GroupMember:
    group_rank: int
    entry: Entry
    rank: Rank | None
    """The board rank, where asked for."""


async def group_board(
    stores: Stores,
    ranking: Ranking,
    asked: BoardAsk,
    player_ids: Sequence[str],
    with_rank: bool,
) -> list[GroupMember]:
    """Those of ``player_ids`` (1..100 distinct ids; 1..20 ``with_rank``; an id named twice
    counts once toward either) on the board, in board order, ranked among themselves; unknown
    ids are left out. One BatchGetItem (two where DynamoDB leaves keys unprocessed), then,
    ``with_rank``, one round trip for the ranks together."""
    limit = MAX_GROUP_RANKED if with_rank else MAX_GROUP
    if not 1 <= len(set(player_ids)) <= limit:
        raise InvalidInput(
            f"name 1 to {limit} distinct players in ids"
            + (" with withRank=true" if with_rank else "")
            + f" (an id named twice counts once); {len(set(player_ids))} were named",
            errors=[{"field": "ids", "message": f"must name 1 to {limit} distinct players"}],
        )
    player_ids = list(dict.fromkeys(player_ids))
    board, definition, now = asked.board, asked.definition, asked.now
    if board_is_expired(board, now=now, definition=definition):
        return []
    rows = await stores.standings.standings_on_board(
        board.board_id, player_ids, shards=definition.shards
    )
    rows = [r for r in rows if r.expires_at is None or r.expires_at > now.timestamp()]
    rows.sort(key=lambda r: r.entry.key.order)
    found: list[Rank | None] = [None] * len(rows)
    if with_rank and rows:
        found = list(await ranking.rank_many([_query(board, definition, r) for r in rows]))
    return [
        GroupMember(i, row.entry, rank)
        for i, (row, rank) in enumerate(zip(rows, found, strict=True), start=1)
    ]
