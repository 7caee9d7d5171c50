"""HTTP routes: parse, authorise, call a service, shape the response. No queries here."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Depends, Path, Query, Response
from fastapi.responses import JSONResponse

from app.api.deps import (
    IdempotencyKeyDep,
    PrincipalDep,
    StateDep,
    SubmissionDep,
    WriteLimitDep,
    limit_reads,
)
from app.api.ratelimit import ratelimit_headers
from app.api.schemas import (
    AroundEntryOut,
    AroundOut,
    BoardPageOut,
    BoardStandingOut,
    EntryOut,
    EstimatedRankOut,
    ExactRankOut,
    Health,
    PlayerRankOut,
    Problem,
    ScoreSubmission,
    StandingsOut,
    SubmitResponse,
)
from app.api.state import AppState
from app.domain.clock import iso_ms, to_ms
from app.domain.keys import ID_PATTERN
from app.domain.models import Entry
from app.domain.periods import Board, Period
from app.domain.ranking import ExactRank, Rank
from app.errors import InvalidInput, LeaderboardError
from app.services.boards import read_board
from app.services.standings import RankReads, around_player, player_rank, player_standings
from app.services.submit import Submission, request_fingerprint, submit_score

log = structlog.get_logger(__name__)
router = APIRouter()
reads = APIRouter(dependencies=[Depends(limit_reads)])

PathId = Annotated[str, Path(pattern=ID_PATTERN)]
PeriodParam = Annotated[
    str,
    Path(
        description="alltime, day, week (the current one) or day:YYYY-MM-DD, week:YYYY-Www "
        "(a date the calendar has, or 422)",
        examples=["alltime", "day:2026-11-30", "week:2026-W48"],
        pattern=r"^(alltime|day|week|day:\d{4}-\d{2}-\d{2}|week:\d{4}-W\d{2})$",
    ),
]


def _problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {
        status: {"model": Problem, "content": {"application/problem+json": {}}}
        for status in statuses
    }


def _now() -> datetime:
    return datetime.now(UTC)


async def _register_boards(state: AppState, document: dict[str, Any]) -> None:
    """Make the boards findable by the closed-period snapshot job: one conditional put the first
    time this process sees a board. The score is already stored, so a failure here is logged and
    the next submission tries again."""
    boards = [Board.from_id(board["leaderboardId"]) for board in document["boards"]]
    try:
        await state.registrar.ensure_all(boards)
    except LeaderboardError as exc:
        log.warning("board_registration_failed", detail=exc.detail)


def parse_board(game: str, variant: str, period: str, now: datetime) -> Board:
    try:
        return Board(game, variant, Period.parse(period, now=now))
    except ValueError as exc:
        raise InvalidInput(str(exc), errors=[{"field": "period", "message": str(exc)}]) from None


@router.post(
    "/v1/scores",
    response_model=SubmitResponse,
    response_model_exclude_none=False,
    responses=_problems(400, 401, 403, 409, 413, 415, 422, 429, 503),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": ScoreSubmission.model_json_schema(by_alias=True)}
            },
        }
    },
    summary="Submit a round's score; fans out to the day, week and all-time boards",
)
async def post_score(
    state: StateDep,
    principal: PrincipalDep,
    limit: WriteLimitDep,
    idempotency_key: IdempotencyKeyDep,
    body: SubmissionDep,
) -> Response:
    principal.require_submit(body.game)
    fields = body.model_dump(mode="json", by_alias=True, exclude_unset=True)
    submission = Submission(
        player_id=body.player_id,
        score=body.score,
        game=body.game,
        variant=body.variant,
        achieved_at_ms=None if body.achieved_at is None else to_ms(body.achieved_at),
        display_name=body.display_name,
        country=body.country,
        context_json=None
        if body.context is None
        else json.dumps(body.context, separators=(",", ":")),
        rank_delta=body.rank_delta,
    )
    result = await submit_score(
        store=state.store,
        policy=state.policy,
        client=principal.name,
        idempotency_key=idempotency_key,
        request_hash=request_fingerprint(principal.name, fields),
        submission=submission,
        now_ms=to_ms(_now()),
    )
    if not result.replayed:
        await _register_boards(state, result.document)
    headers = ratelimit_headers(limit)
    if result.replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(result.document, headers=headers)


@reads.get(
    "/v1/leaderboards/{game}/{variant}/{period}",
    response_model=BoardPageOut,
    responses=_problems(400, 422, 429),
    summary="The top of a board, best first",
)
async def get_board(
    state: StateDep,
    game: PathId,
    variant: PathId,
    period: PeriodParam,
    limit: Annotated[int, Query(ge=1, le=100)] = 25,
    cursor: Annotated[
        str | None,
        Query(
            max_length=1024,
            description="nextCursor from the previous page, as issued (400 otherwise)",
        ),
    ] = None,
) -> BoardPageOut:
    now = _now()
    board = parse_board(game, variant, period, now)
    page = await read_board(
        store=state.store,
        board=board,
        limit=limit,
        cursor=cursor,
        cursor_secret=state.settings.cursor_key(),
        now=now,
        retention=state.settings.retention,
    )
    return BoardPageOut(
        leaderboard_id=page.board_id,
        player_count=page.player_count,
        entries=[_entry_out(ranked.entry, ranked.rank) for ranked in page.entries],
        next_cursor=page.next_cursor,
    )


def _rank_out(rank: Rank) -> ExactRankOut | EstimatedRankOut:
    if isinstance(rank, ExactRank):
        return ExactRankOut(rank=rank.rank, top_percent=rank.top_percent)
    return EstimatedRankOut(
        rank_range=rank.rank_range,
        top_percent_range=rank.top_percent_range,
        rank_estimate=rank.rank_estimate,
    )


def _entry_out(entry: Entry, rank: int | None) -> EntryOut:
    return EntryOut(
        rank=rank,
        player_id=entry.player_id,
        display_name=entry.display_name,
        country=entry.country,
        score=entry.score,
        achieved_at=iso_ms(entry.key.achieved_at_ms),
    )


def _reads(state: AppState) -> RankReads:
    return RankReads(
        layout=state.policy.layout,
        cap=state.settings.rank_count_cap,
        retention=state.settings.retention,
    )


@reads.get(
    "/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}",
    response_model=PlayerRankOut,
    responses=_problems(404, 422, 429),
    summary="A player's entry and rank: exact, or an honest range",
)
async def get_player_rank(
    state: StateDep, game: PathId, variant: PathId, period: PeriodParam, player_id: PathId
) -> PlayerRankOut:
    now = _now()
    board = parse_board(game, variant, period, now)
    found = await player_rank(state.store, _reads(state), board=board, player_id=player_id, now=now)
    exact = found.rank.rank if isinstance(found.rank, ExactRank) else None
    return PlayerRankOut(
        leaderboard_id=board.board_id,
        entry=_entry_out(found.entry, exact),
        rank=_rank_out(found.rank),
    )


@reads.get(
    "/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}/around",
    response_model=AroundOut,
    responses=_problems(404, 422, 429),
    summary="The players just ahead of and just behind a player, in board order",
)
async def get_around(
    state: StateDep,
    game: PathId,
    variant: PathId,
    period: PeriodParam,
    player_id: PathId,
    before: Annotated[int, Query(ge=0, le=50)] = 5,
    after: Annotated[int, Query(ge=0, le=50)] = 5,
) -> AroundOut:
    now = _now()
    board = parse_board(game, variant, period, now)
    around = await around_player(
        state.store,
        _reads(state),
        board=board,
        player_id=player_id,
        before=before,
        after=after,
        now=now,
    )
    entries = []
    for neighbour in around.neighbours:
        base = _entry_out(neighbour.entry, around.rank_of(neighbour))
        entries.append(AroundEntryOut(**base.model_dump(), rank_range=around.range_of(neighbour)))
    return AroundOut(
        leaderboard_id=board.board_id,
        rank_kind="exact" if isinstance(around.player.rank, ExactRank) else "estimated",
        entries=entries,
    )


@reads.get(
    "/v1/players/{player_id}/standings",
    response_model=StandingsOut,
    responses=_problems(422, 429),
    summary="Every live board a player is on, with best score and rank",
)
async def get_standings(state: StateDep, player_id: PathId) -> StandingsOut:
    standings = await player_standings(state.store, _reads(state), player_id=player_id, now=_now())
    return StandingsOut(
        player_id=player_id,
        boards=[
            BoardStandingOut(
                leaderboard_id=s.board.board_id,
                period=s.board.period.display,
                best=s.standing.entry.score,
                rank=_rank_out(s.rank),
            )
            for s in standings
        ],
    )


@router.get("/healthz", response_model=Health, summary="Liveness")
async def healthz() -> Health:
    return Health(status="ok")


@router.get(
    "/readyz",
    response_model=Health,
    responses=_problems(503),
    summary="Readiness: the tables answer",
)
async def readyz(state: StateDep) -> Health:
    await state.store.ping()
    return Health(status="ready")
