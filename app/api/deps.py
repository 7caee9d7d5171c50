"""What the lifespan opens once and every request shares (``AppState``, typed by the ports), and
the ``Annotated`` dependency aliases routes declare: what they need, never how it is built."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Annotated, Any, TypeVar, cast

import structlog
from fastapi import Depends, Header, Path, Request, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, ValidationError

from app.api.invalid import invalid_input, validation_errors
from app.api.middleware import lift_deadline
from app.api.overload import leave_admission
from app.api.patterns import IDEMPOTENCY_KEY_PATTERN, PERIOD_PATTERN
from app.api.ratelimit import Decision, RateLimiter, ratelimit_headers
from app.api.readiness import ReadinessLog, StartupJobs
from app.api.schemas import ScoreSubmission
from app.domain.calendar import Calendar, NoSuchSeason
from app.domain.definitions import BoardDefinition
from app.domain.json_depth import MAX_JSON_DEPTH, nests_deeper_than
from app.domain.keys import ID_PATTERN
from app.domain.periods import COHORT_ID_PATTERN, FIRST_YEAR, LAST_YEAR, Board, Period
from app.domain.principal import Principal
from app.domain.storage_keys import RESERVED_GAMES
from app.errors import (
    InvalidInput,
    MalformedJson,
    NestedTooDeeply,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from app.services.leaderboard import Leaderboard
from app.services.reads import BoardReads

ModelT = TypeVar("ModelT", bound=BaseModel)


@dataclass(frozen=True)
class AppState:
    leaderboard: Leaderboard
    write_limits: RateLimiter
    read_limits: RateLimiter
    max_body_bytes: int
    max_context_bytes: int
    startup: StartupJobs = field(default_factory=StartupJobs)
    readiness: ReadinessLog = field(default_factory=ReadinessLog)


# Every dependency here is ``async def``, though most await nothing: FastAPI runs a plain ``def``
# dependency on a worker thread, a thread hop for each one on every request.


def _state(request: Request) -> AppState:
    return cast("AppState", request.state.app)


async def get_state(request: Request) -> AppState:
    return _state(request)


StateDep = Annotated[AppState, Depends(get_state)]


async def get_leaderboard(request: Request) -> Leaderboard:
    return _state(request).leaderboard


LeaderboardDep = Annotated[Leaderboard, Depends(get_leaderboard)]


async def get_now() -> datetime:
    """The request's one "now" (FastAPI resolves a dependency once per request)."""
    return datetime.now(UTC)


NowDep = Annotated[datetime, Depends(get_now)]

GamePath = Annotated[str, Path(pattern=ID_PATTERN, examples=["trivia"], description="the game")]
VariantPath = Annotated[
    str, Path(pattern=ID_PATTERN, examples=["classic"], description="the game's variant (mode)")
]
PlayerPath = Annotated[
    str, Path(pattern=ID_PATTERN, examples=["player_123"], description="the player's id")
]
PeriodParam = Annotated[
    str,
    Path(
        description="alltime, day, week, month, season (the current one, in the variant's time "
        "zone) or day:YYYY-MM-DD, week:YYYY-Www, month:YYYY-MM (a date the calendar has, of the "
        f"years {FIRST_YEAR} to {LAST_YEAR}, or 422), season:ID (404 for a season the variant "
        "does not have, and for season when none is running)",
        examples=["alltime", "day:2026-11-30", "week:2026-W48", "season:s1"],
        pattern=PERIOD_PATTERN,
    ),
]


def _period_asked(period: str) -> None:
    """The period's form, checked before anything is read (a 422 comes before a 404)."""
    try:
        Period.parse(period)
    except ValueError as exc:
        raise InvalidInput(str(exc), errors=[{"field": "period", "message": str(exc)}]) from None


def _named_board(game: str, variant: str, period: str, now: datetime, calendar: Calendar) -> Board:
    """The board named, its current period (``day``) the one of its variant's calendar."""
    try:
        return Board(game, variant, calendar.parse(period, now=now))
    except NoSuchSeason as exc:
        raise NotFound(str(exc)) from None
    except ValueError as exc:
        raise InvalidInput(str(exc), errors=[{"field": "period", "message": str(exc)}]) from None


async def get_board(
    leaderboard: LeaderboardDep,
    game: GamePath,
    variant: VariantPath,
    period: PeriodParam,
    now: NowDep,
) -> Board:
    """The board a ``/v1/leaderboards/{game}/{variant}/{period}`` path names."""
    _period_asked(period)
    calendar = (await leaderboard.rules.definitions.of(game, variant)).definition.calendar
    return _named_board(game, variant, period, now, calendar)


BoardDep = Annotated[Board, Depends(get_board)]


@dataclass(frozen=True)
class Reading:
    """What every public read needs, resolved as one dependency: FastAPI's work per dependency
    is much of a read's own CPU (decision 0023)."""

    reads: BoardReads
    now: datetime


@dataclass(frozen=True)
class BoardReading(Reading):
    """A read of the board a ``/v1/leaderboards/{game}/{variant}/{period}`` path names, and how
    it ranks (404 for an undefined variant where undefined boards are refused, and for a period
    the variant does not keep)."""

    board: Board
    definition: BoardDefinition


async def get_reading(request: Request) -> Reading:
    return Reading(_state(request).leaderboard.reads, datetime.now(UTC))


ReadingDep = Annotated[Reading, Depends(get_reading)]


async def get_board_reading(
    request: Request, game: GamePath, variant: VariantPath, period: PeriodParam
) -> BoardReading:
    leaderboard, now = _state(request).leaderboard, datetime.now(UTC)
    _period_asked(period)
    definition = await leaderboard.rules.for_reading(game, variant)
    board = _named_board(game, variant, period, now, definition.calendar)
    await leaderboard.rules.check_kept(board, definition)
    return BoardReading(leaderboard.reads, now, board, definition)


BoardReadingDep = Annotated[BoardReading, Depends(get_board_reading)]


COHORT_404 = "404 on a variant without cohortSize; a cohort past the board's last has no entries."
"""What every route of a cohort says of the cohorts it finds (``cohort_of``)."""

CohortPath = Annotated[
    str,
    Path(
        pattern=COHORT_ID_PATTERN,
        description="the cohort (1, 2, ...; in a league gold-1, ...), as a join answers",
    ),
]


def cohort_of(
    board: Board, definition: BoardDefinition, cohort_id: str
) -> tuple[Board, BoardDefinition]:
    """One cohort of the period board and how it ranks: a board of its own, never sharded
    (decision 0039). 404 on a variant without cohortSize; a cohort past the board's last is a
    board with no entries, as any board nobody has played."""
    if definition.cohort_size is None:
        raise NotFound(f"{board.game}/{board.variant} has no cohorts (no cohortSize)")
    return board.in_cohort(cohort_id), replace(definition, shards=1)


async def get_cohort_reading(read: BoardReadingDep, cohort_id: CohortPath) -> BoardReading:
    """A read of the cohort a ``.../{period}/cohorts/{cohort_id}`` path names."""
    cohort, definition = cohort_of(read.board, read.definition, cohort_id)
    return BoardReading(read.reads, read.now, cohort, definition)


CohortReadingDep = Annotated[BoardReading, Depends(get_cohort_reading)]


async def get_read_definition(leaderboard: LeaderboardDep, board: BoardDep) -> BoardDefinition:
    """How the named board ranks: its variant's definition (404 for an undefined variant where
    undefined boards are refused)."""
    return await leaderboard.rules.for_reading(board.game, board.variant)


ReadDefinitionDep = Annotated[BoardDefinition, Depends(get_read_definition)]


async def get_write_definition(leaderboard: LeaderboardDep, board: BoardDep) -> BoardDefinition:
    """The rules rows written to the named board follow (422 for an undefined variant where
    undefined boards are refused)."""
    return await leaderboard.rules.for_submitting(board.game, board.variant)


WriteDefinitionDep = Annotated[BoardDefinition, Depends(get_write_definition)]


@dataclass(frozen=True)
class NamedBoard:
    """A board a path names and how it ranks: a period board, or one of its cohorts."""

    board: Board
    definition: BoardDefinition


async def get_cohort_board(
    board: BoardDep, definition: ReadDefinitionDep, cohort_id: CohortPath
) -> NamedBoard:
    """The cohort a ``.../{period}/cohorts/{cohort_id}`` path names (``cohort_of``)."""
    return NamedBoard(*cohort_of(board, definition, cohort_id))


CohortDep = Annotated[NamedBoard, Depends(get_cohort_board)]


_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`")


async def get_principal(
    state: StateDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    authorization = None if credentials is None else f"Bearer {credentials.credentials}"
    principal = await state.leaderboard.api_keys.authenticate(authorization)
    structlog.contextvars.bind_contextvars(client=principal.name)
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


async def require_admin(principal: PrincipalDep) -> Principal:
    """A key with the admin scope, or 401/403 before anything else is looked at."""
    principal.require_admin()
    return principal


ADMIN_ONLY = Depends(require_admin)
"""The admin endpoints' router-level dependency."""


async def long_operation() -> None:
    """The request runs on with no deadline, outside the overload limit (its time says nothing
    of the backend's latency)."""
    await lift_deadline()
    await leave_admission()


NO_DEADLINE = Depends(long_operation)
"""The admin routes whose work takes as long as it does (seeding, reconciling, a definition's
change): listed after the admin check, so no one else's request runs without a deadline."""


async def limit_writes(state: StateDep, principal: PrincipalDep) -> Decision:
    """Per key, before the body is read or anything reserved: a 429 stores nothing."""
    return state.write_limits.enforce(principal.name)


WriteLimitDep = Annotated[Decision, Depends(limit_writes)]


async def read_limit_headers(request: Request) -> dict[str, str]:
    """Per client address (behind a trusted proxy, the forwarded one): a 429 past the limit, else
    the headers that say where the caller stands, for a route that builds its own response
    (FastAPI adds a dependency's headers only to a response it builds)."""
    address = request.client.host if request.client else "unknown"
    decision = _state(request).read_limits.enforce(address)
    return ratelimit_headers(decision)


ReadLimitDep = Annotated[dict[str, str], Depends(read_limit_headers)]


async def limit_reads(response: Response, headers: ReadLimitDep) -> None:
    """``read_limit_headers``, for a route that returns a model."""
    response.headers.update(headers)


async def get_idempotency_key(
    idempotency_key: Annotated[
        str,
        Header(
            alias="Idempotency-Key",
            pattern=IDEMPOTENCY_KEY_PATTERN,
            description="1..255 visible ASCII characters; one per distinct submission. "
            "Missing: 400.",
        ),
    ],
) -> str:
    return idempotency_key


IdempotencyKeyDep = Annotated[str, Depends(get_idempotency_key)]


async def _read_limited(request: Request, limit: int) -> bytes:
    """The body, checked against ``limit`` while streaming, so a lying Content-Length cannot get
    more through."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"the body is over the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(f"the body is over the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


async def read_json_body(request: Request, state: StateDep) -> Any:
    """The body as JSON, within the body limit (``json_body``)."""
    return await json_body(request, state.max_body_bytes)


async def json_body(request: Request, limit: int) -> Any:
    """The body as JSON: 415 unless it says it is JSON, 413 over ``limit`` (checked while
    streaming, so a lying Content-Length cannot get more through), 422 if it nests deeper than
    ``MAX_JSON_DEPTH`` (measured before parsing, which recurses), 400 if it does not parse."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise UnsupportedMediaType("send the body as application/json")
    body = await _read_limited(request, limit)
    if nests_deeper_than(body):
        raise NestedTooDeeply(
            f"the body nests arrays and objects more than {MAX_JSON_DEPTH} deep (the outermost "
            "counts as one); flatten it"
        )
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedJson(f"the body is not valid JSON: {exc}") from None


async def read_text_body(request: Request, max_bytes: int) -> tuple[str, str]:
    """A text body (CSV or JSON lines) and its media type: 415 for anything else, 413 over the
    body limit."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type not in {"text/csv", "application/x-ndjson", "application/jsonl"}:
        raise UnsupportedMediaType("send the rows as text/csv or application/x-ndjson")
    body = await _read_limited(request, max_bytes)
    try:
        return body.decode("utf-8"), media_type
    except UnicodeDecodeError:
        raise InvalidInput("the body is not UTF-8 text") from None


def object_body(model: type[ModelT]) -> Callable[[Any], Awaitable[ModelT]]:
    """A dependency: the request's JSON body as ``model``, a 422 saying what is wrong where it is
    not an object or not a valid one."""

    async def parsed(body: Annotated[Any, Depends(read_json_body)]) -> ModelT:
        if not isinstance(body, dict):
            raise InvalidInput("the body must be a JSON object")
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            raise invalid_input(validation_errors(exc.errors()), whole="body") from None

    return parsed


get_submission = object_body(ScoreSubmission)


async def _game(game: GamePath) -> str:
    """A game the client may name: not one of the names the table keeps for itself."""
    if game in RESERVED_GAMES:
        raise InvalidInput(
            f"{game!r} is a reserved name", errors=[{"field": "game", "message": "reserved"}]
        )
    return game


GameDep = Annotated[str, Depends(_game)]
SubmissionDep = Annotated[ScoreSubmission, Depends(get_submission)]
