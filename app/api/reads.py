"""Reading boards (public, rate limited per client address): which boards there are, the top, a
player's rank, the players around them, and a player's standings on every board."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Response

from app.api.cors import READ_AT
from app.api.deps import (
    BoardReading,
    BoardReadingDep,
    PlayerPath,
    ReadingDep,
    StateDep,
    limit_reads,
)
from app.api.patterns import GROUP_IDS_PATTERN
from app.api.routing import StrictQueryRoute
from app.api.schemas import (
    AroundEntryOut,
    AroundOut,
    BoardListOut,
    BoardPageOut,
    BoardStandingOut,
    CohortRankOut,
    EntryOut,
    GroupEntryOut,
    GroupOut,
    PeriodOut,
    PlayerEntryOut,
    PlayerRankOut,
    StandingsOut,
    problem_responses,
    rank_out,
)
from app.domain.periods import COHORT_ID_PATTERN
from app.domain.ranks import ExactRank
from app.errors import NotFound
from app.services.reads import (
    MAX_GROUP,
    MAX_GROUP_RANKED,
    MAX_LISTED_VARIANTS,
    MAX_STANDINGS,
    STANDINGS_QUERIES_PER_PAGE,
    STANDINGS_ROWS_PER_QUERY,
)
from app.services.registry import REGISTRY_QUERIES_PER_PAGE

CursorQuery = Annotated[
    str | None,
    Query(
        max_length=1024, description="nextCursor from the previous page, as issued (400 otherwise)"
    ),
]

router = APIRouter(
    route_class=StrictQueryRoute, tags=["reads"], dependencies=[Depends(limit_reads)]
)


def _read_at(description: str) -> dict[str, Any]:
    """A 200 answer's ``Leaderboard-Read-At`` header, as the OpenAPI document states it."""
    return {
        "headers": {
            READ_AT: {
                "description": description,
                "schema": {"type": "string", "format": "date-time"},
            }
        }
    }


MIRRORED = _read_at(
    "on a sharded board, where the task answered from its mirror of the board: when the reads "
    "of the other players' places began (RFC 3339, UTC), at most a second before the request; "
    "the rank is exact as of then, with the player's own last write in it"
)


@router.get(
    "/v1/boards",
    operation_id="listBoards",
    response_model=BoardListOut,
    responses=problem_responses(400, 422, 429),
    summary="The games and variants that have boards, and each one's live periods",
    description=f"A page of at most `limit` variants (each with all its live periods), in game "
    f"and variant order; `nextCursor` leads to the next. A page reads at most "
    f"{REGISTRY_QUERIES_PER_PAGE} pages of the board registry and the definition of each variant "
    "on it.",
)
async def get_boards(
    read: ReadingDep,
    limit: Annotated[
        int,
        Query(ge=1, le=MAX_LISTED_VARIANTS, description="most variants on the page"),
    ] = MAX_LISTED_VARIANTS,
    cursor: CursorQuery = None,
) -> BoardListOut:
    listing = await read.reads.boards(now=read.now, limit=limit, cursor=cursor)
    return BoardListOut.of(listing)


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}",
    operation_id="getTopOfBoard",
    response_model=BoardPageOut,
    responses={
        200: _read_at(
            "on a sharded board's first page: when its entries were read (RFC 3339, UTC), at "
            "most a second before the request, since every task serves such a page from what "
            "it read last; the ranks are exact as of then"
        ),
        **problem_responses(400, 404, 422, 429),
    },
    summary="The top of a board, best first",
)
async def get_board(
    read: BoardReadingDep,
    response: Response,
    limit: Annotated[int, Query(ge=1, le=100)] = 25,
    cursor: CursorQuery = None,
) -> BoardPageOut:
    page = await read.reads.top(
        read.board, read.definition, limit=limit, cursor=cursor, now=read.now
    )
    _say_read_at(response, page.read_at)
    return BoardPageOut(
        leaderboard_id=page.board_id,
        period=_period(read),
        player_count=page.player_count,
        score_format=read.definition.score_format.value,
        entries=[EntryOut.of(ranked.entry, ranked.rank) for ranked in page.entries],
        next_cursor=page.next_cursor,
    )


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}/cohorts/{cohort_id}",
    operation_id="getTopOfCohort",
    response_model=BoardPageOut,
    responses=problem_responses(400, 404, 422, 429),
    summary="The top of one cohort of a board, best first (a variant with cohortSize)",
    description="A cohort is a board of its own (decision 0039): the same page as the board's "
    "top, ranked within the cohort. 404 on a variant without cohortSize.",
)
async def get_cohort(
    read: BoardReadingDep,
    cohort_id: Annotated[
        str,
        Path(pattern=COHORT_ID_PATTERN, description="the cohort (1, 2, ...), as a join answers"),
    ],
    limit: Annotated[int, Query(ge=1, le=100)] = 25,
    cursor: CursorQuery = None,
) -> BoardPageOut:
    definition = read.definition
    if definition.cohort_size is None:
        raise NotFound(f"{read.board.game}/{read.board.variant} has no cohorts (no cohortSize)")
    cohort = read.board.in_cohort(cohort_id)
    page = await read.reads.top(
        cohort, replace(definition, shards=1), limit=limit, cursor=cursor, now=read.now
    )
    return BoardPageOut(
        leaderboard_id=page.board_id,
        period=_period(read),
        player_count=page.player_count,
        score_format=definition.score_format.value,
        entries=[EntryOut.of(ranked.entry, ranked.rank) for ranked in page.entries],
        next_cursor=page.next_cursor,
    )


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}/players",
    operation_id="getGroupBoard",
    response_model=GroupOut,
    responses=problem_responses(404, 422, 429, 503),
    summary="A group's board (friends): those of the players named on the board, in board order",
)
async def get_group(
    read: BoardReadingDep,
    ids: Annotated[
        str,
        Query(
            pattern=GROUP_IDS_PATTERN,
            max_length=MAX_GROUP * 65 - 1,  # as many distinct ids of 64 characters
            description=f"the players, comma-separated (ids=a,b,c): 1 to {MAX_GROUP} distinct "
            f"ids, 1 to {MAX_GROUP_RANKED} with withRank=true (an id named twice counts once "
            "toward either); unknown ones are left out",
        ),
    ],
    with_rank: Annotated[
        bool,
        Query(alias="withRank", description="add each one's board rank (costs a rank read each)"),
    ] = False,
) -> GroupOut:
    members = await read.reads.group(
        read.board, read.definition, _group_ids(ids), with_rank=with_rank, now=read.now
    )
    return GroupOut(
        leaderboard_id=read.board.board_id,
        period=_period(read),
        score_format=read.definition.score_format.value,
        entries=[
            GroupEntryOut(
                group_rank=m.group_rank,
                entry=EntryOut.of(m.entry, m.rank.rank if isinstance(m.rank, ExactRank) else None),
                rank=None if m.rank is None else rank_out(m.rank),
            )
            for m in members
        ],
    )


def _group_ids(given: str) -> list[str]:
    """The ids of ``ids=a,b,c`` (already matched against ``GROUP_IDS_PATTERN``) in the order
    named, each once."""
    return list(dict.fromkeys(given.split(",")))


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}",
    operation_id="getPlayerRank",
    response_model=PlayerRankOut,
    responses={
        200: MIRRORED,
        **problem_responses(404, 422, 429),
    },
    summary="A player's entry and rank: exact, or an honest range",
)
async def get_player_rank(
    read: BoardReadingDep, state: StateDep, player_id: PlayerPath, response: Response
) -> PlayerRankOut:
    cohorts = read.definition.cohort_size is not None
    found, placement = await asyncio.gather(
        read.reads.rank(read.board, read.definition, player_id, now=read.now),
        state.leaderboard.cohorts.placement(read.board, player_id) if cohorts else _none(),
    )
    in_cohort = None
    if placement is not None and placement.cohort_id is not None:
        # One COUNT of the cohort's small partition: exact (decision 0039).
        rank = await state.leaderboard.cohorts.rank_in_cohort(
            read.board, placement.cohort_id, found.entry.key
        )
        in_cohort = CohortRankOut(cohort_id=placement.cohort_id, tier=placement.tier, rank=rank)
    _say_read_at(response, found.read_at)
    exact = found.rank.rank if isinstance(found.rank, ExactRank) else None
    return PlayerRankOut(
        leaderboard_id=read.board.board_id,
        period=_period(read),
        score_format=read.definition.score_format.value,
        entry=PlayerEntryOut.of(
            found.entry,
            exact,
            context=None if found.context_json is None else json.loads(found.context_json),
        ),
        rank=rank_out(found.rank),
        cohort=in_cohort,
    )


async def _none() -> None:
    return None


@router.get(
    "/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}/around",
    operation_id="getPlayersAround",
    response_model=AroundOut,
    responses={
        200: MIRRORED,
        **problem_responses(404, 422, 429),
    },
    summary="The players just ahead of and just behind a player, in board order",
)
async def get_around(
    read: BoardReadingDep,
    player_id: PlayerPath,
    response: Response,
    before: Annotated[int, Query(ge=0, le=50)] = 5,
    after: Annotated[int, Query(ge=0, le=50)] = 5,
) -> AroundOut:
    around = await read.reads.around(
        read.board, read.definition, player_id, before=before, after=after, now=read.now
    )
    _say_read_at(response, around.player.read_at)
    entries = [
        AroundEntryOut.of(n.entry, around.rank_of(n), rank_range=around.range_of(n))
        for n in around.neighbours
    ]
    return AroundOut(
        leaderboard_id=read.board.board_id,
        period=_period(read),
        score_format=read.definition.score_format.value,
        rank_kind="exact" if isinstance(around.player.rank, ExactRank) else "estimated",
        entries=entries,
    )


@router.get(
    "/v1/players/{player_id}/standings",
    operation_id="getPlayerStandings",
    response_model=StandingsOut,
    responses=problem_responses(400, 422, 429),
    summary="Every live board a player is on, with best score and rank",
    description=f"A page of at most `limit` boards, in board id order; `nextCursor` leads to the "
    f"next. A page reads at most {STANDINGS_QUERIES_PER_PAGE} pages of "
    f"{STANDINGS_ROWS_PER_QUERY} of the player's rows (their other rows among them, so a page "
    "may hold fewer boards than `limit`, even none, and still have a next), then the ranks of "
    "the boards on it.",
)
async def get_standings(
    read: ReadingDep,
    player_id: PlayerPath,
    limit: Annotated[
        int, Query(ge=1, le=MAX_STANDINGS, description="most boards on the page")
    ] = MAX_STANDINGS,
    cursor: CursorQuery = None,
) -> StandingsOut:
    page = await read.reads.standings(player_id, now=read.now, limit=limit, cursor=cursor)
    return StandingsOut(
        player_id=player_id,
        boards=[
            BoardStandingOut(
                leaderboard_id=s.board.board_id,
                period=s.board.period.display,
                best=s.standing.entry.score,
                rank=rank_out(s.rank),
            )
            for s in page.boards
        ],
        next_cursor=page.next_cursor,
    )


def _period(read: BoardReading) -> PeriodOut:
    return PeriodOut.of(read.board.period, read.definition.calendar, read.now)


def _say_read_at(response: Response, read_at: datetime | None) -> None:
    if read_at is not None:
        response.headers[READ_AT] = read_at.isoformat(timespec="milliseconds")
