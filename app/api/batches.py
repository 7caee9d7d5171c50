"""``POST /v1/scores:batch``: a game server submits up to 100 results at once. The batch's shape
is checked as a whole; then each item is answered as ``POST /v1/scores`` would answer it alone, a
few at a time, each under the limits a submission of its own meets: a token of the key's rate
limit, a place under the task's overload limit, the request's deadline (decision 0034)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import structlog
from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from app import telemetry
from app.api.deps import AppState, NowDep, PrincipalDep, StateDep, WriteLimitDep, json_body
from app.api.invalid import invalid_input, validation_errors
from app.api.middleware import deadline_at
from app.api.openapi import component_ref
from app.api.overload import ItemPlaces, batch_places
from app.api.problems import answered_as
from app.api.ratelimit import Decision, ratelimit_headers, refusal
from app.api.routing import StrictQueryRoute
from app.api.schemas import (
    MAX_BATCH,
    BatchResponse,
    BatchResultOut,
    IdempotencyKey,
    Problem,
    ScoreBatch,
    ScoreSubmission,
    SubmitResponse,
    problem_responses,
)
from app.api.scores import submission_of
from app.domain.clock import to_ms
from app.domain.principal import Principal
from app.errors import InvalidInput, LeaderboardError, Unavailable
from app.services.submissions import SubmitResult

log = structlog.get_logger(__name__)
router = APIRouter(route_class=StrictQueryRoute, tags=["submissions"])

ROUTE = "/v1/scores:batch"
SINGLE = "/v1/scores"
"""What an item's problem names as its ``instance``: the answer is the one a submission alone gets."""

CONCURRENCY = 8
"""Items of one batch running at once, at most: each also holds a place under the task's overload
limit while it runs, which bounds them first when the backend is slow."""
BODY_FACTOR = 16
"""A batch's body may take this many times the body limit (``LEADERBOARD_MAX_BODY_BYTES``): 1 MiB
by default, about 10 KiB an item."""

CUT_MARGIN_S = 0.5
"""At most this long before the request's deadline, an item not done is cut off and answered 503
on its own, so the batch is answered with the rest (a tenth of what is left, where less)."""


class _BatchShape(BaseModel):
    """A batch as a whole: its items' own fields are each item's to answer for."""

    model_config = ConfigDict(extra="forbid")

    submissions: list[dict[str, Any]] = Field(min_length=1, max_length=MAX_BATCH)


_KEY: TypeAdapter[str] = TypeAdapter(IdempotencyKey)


@dataclass(frozen=True)
class BatchItem:
    """One item as sent: its Idempotency-Key, and the submission body without it."""

    idempotency_key: str
    body: dict[str, Any]


async def read_batch(request: Request, state: StateDep) -> list[BatchItem]:
    """The batch's items, or a 422 for the whole batch, before anything is done: fewer than 1 or
    more than 100, an item without a key (or not an object), two items with one key. The items'
    own fields are each item's to answer for."""
    body = await json_body(request, state.max_body_bytes * BODY_FACTOR)
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    try:
        shape = _BatchShape.model_validate(body)
    except ValidationError as exc:
        raise invalid_input(validation_errors(exc.errors()), whole="body") from None
    keys, errors = [], []
    for index, raw in enumerate(shape.submissions):
        where = ("submissions", index, "idempotencyKey")
        try:
            keys.append(_KEY.validate_python(raw.get("idempotencyKey")))
        except ValidationError as exc:
            said = [{"type": "missing"}] if "idempotencyKey" not in raw else exc.errors()
            errors += [{**error, "loc": where} for error in said]
    if errors:
        raise invalid_input(validation_errors(errors), whole="body")
    first: dict[str, int] = {}
    repeats = [
        {
            "field": f"submissions.{index}.idempotencyKey",
            "message": f"repeats the key of submissions.{first[key]}: each submission has a key "
            "of its own",
        }
        for index, key in enumerate(keys)
        if first.setdefault(key, index) != index
    ]
    if repeats:
        raise invalid_input(repeats, whole="body")
    return [
        BatchItem(key, {name: v for name, v in raw.items() if name != "idempotencyKey"})
        for key, raw in zip(keys, shape.submissions, strict=True)
    ]


BatchDep = Annotated[list[BatchItem], Depends(read_batch)]


@router.post(
    ROUTE,
    operation_id="submitScores",
    response_model=BatchResponse,
    response_model_exclude_unset=True,
    responses=problem_responses(400, 401, 413, 415, 422, 429, 503),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": component_ref(ScoreBatch)}},
        }
    },
    summary="Submit up to 100 results at once, each answered as POST /v1/scores would answer it",
    description="200 with one result per submission, in the request's order: the status and "
    "body `POST /v1/scores` would have answered for that submission alone (a problem document "
    "for a 4xx or 503), `replayed` for a key seen before, `retryAfter` where a retry is due. "
    "Submissions are independent: one's refusal changes nothing for the others. Each counts as "
    "a submission of its own for the key's rate limit: those past it are each a 429 result. The "
    "problems listed here are the whole batch's, which then stores nothing.",
)
async def post_scores(
    state: StateDep,
    principal: PrincipalDep,
    limit: WriteLimitDep,
    batch: BatchDep,
    now: NowDep,
    response: Response,
) -> BatchResponse:
    # The token taken before the body was read is the first item's; each other item takes one.
    decisions = [limit, *(state.write_limits.check(principal.name) for _ in batch[1:])]
    results = await answer_batch(
        state, principal, list(zip(batch, decisions, strict=True)), to_ms(now)
    )
    headers = ratelimit_headers(decisions[-1])
    headers.pop("Retry-After", None)  # a refused item's wait is in its own result
    response.headers.update(headers)
    return BatchResponse(results=results)


async def answer_batch(
    state: AppState, principal: Principal, items: Sequence[tuple[BatchItem, Decision]], now_ms: int
) -> list[BatchResultOut]:
    """Each item's answer, in the items' order, each with its rate limit's decision: at most
    ``CONCURRENCY`` at once, none able to stop another."""
    run = _Run(state, principal, batch_places(CONCURRENCY), _cut_at(), now_ms)
    results = await asyncio.gather(*(run.answer(item, decision) for item, decision in items))
    if run.cut:
        log.warning("batch_items_cut_off", items=run.cut, of=len(items))
    return list(results)


def _cut_at() -> float | None:
    """When items not done are cut off: a little before the request's deadline."""
    deadline = deadline_at()
    if deadline is None:
        return None
    left = deadline - asyncio.get_running_loop().time()
    return deadline - min(CUT_MARGIN_S, max(0.0, left) / 10)


@dataclass
class _Run:
    """What every item of one batch shares, and how many were cut off at the deadline."""

    state: AppState
    principal: Principal
    places: ItemPlaces
    cut_at: float | None
    now_ms: int
    cut: int = 0

    async def answer(self, item: BatchItem, decision: Decision) -> BatchResultOut:
        """What ``POST /v1/scores`` would answer for the item alone: never an exception, so one
        item's failure leaves the others to finish."""
        key = item.idempotency_key
        try:
            async with asyncio.timeout_at(self.cut_at) as cut:
                result = await self._submit(item, decision)
        except Exception as exc:  # every error, a bug too, is this item's answer alone
            if isinstance(exc, TimeoutError) and cut.expired():
                self.cut += 1
                telemetry.deadline_exceeded(ROUTE)
                return _refused(key, _cut_off())
            return _refused(key, answered_as(exc, ROUTE))
        return _accepted(key, result)

    async def _submit(self, item: BatchItem, decision: Decision) -> SubmitResult:
        if not decision.allowed:
            raise refusal(decision)
        try:
            body = ScoreSubmission.model_validate(item.body)
        except ValidationError as exc:
            raise invalid_input(validation_errors(exc.errors()), whole="body") from None
        self.principal.require_submit(body.game)
        submission, fields = submission_of(body, max_context_bytes=self.state.max_context_bytes)
        async with self.places.place():
            return await self.state.leaderboard.submissions.submit(
                submission,
                client=self.principal.name,
                idempotency_key=item.idempotency_key,
                fields=fields,
                now_ms=self.now_ms,
            )


def _cut_off() -> Unavailable:
    return Unavailable(
        "this item was not done by the request's deadline: all of it was written or none of it; "
        "send it again with the same idempotencyKey to learn which (or to write it)"
    )


def _accepted(key: str, result: SubmitResult) -> BatchResultOut:
    telemetry.batch_item(200)
    return BatchResultOut(
        idempotency_key=key,
        status=200,
        replayed=result.replayed,
        body=SubmitResponse.of(result.outcome),
    )


def _refused(key: str, error: LeaderboardError) -> BatchResultOut:
    telemetry.batch_item(error.status)
    problem = Problem.model_validate(error.problem(SINGLE))
    result = BatchResultOut(idempotency_key=key, status=error.status, replayed=False, body=problem)
    retry_after = error.headers().get("Retry-After")
    if retry_after is not None:
        result.retry_after = int(retry_after)  # set: served (the others leave it out)
    return result
