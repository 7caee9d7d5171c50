"""``POST /v1/scores``: a game server submits a round's result for one player."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Response

from app.api.deps import (
    IdempotencyKeyDep,
    NowDep,
    PrincipalDep,
    StateDep,
    SubmissionDep,
    WriteLimitDep,
)
from app.api.openapi import component_ref
from app.api.ratelimit import ratelimit_headers
from app.api.routing import StrictQueryRoute
from app.api.schemas import ScoreSubmission, SubmitResponse, problem_responses
from app.domain.clock import to_ms
from app.domain.models import MAX_METADATA_BYTES
from app.domain.submission import Submission
from app.errors import InvalidInput

router = APIRouter(route_class=StrictQueryRoute, tags=["submissions"])


def _stored_json(field: str, value: dict[str, Any], max_bytes: int, *, whose: str) -> str:
    """A JSON field as each board row stores it (compact, non-ASCII escaped, so its length is its
    bytes); 422 over ``max_bytes``, which keeps the rows items DynamoDB takes."""
    stored = json.dumps(value, separators=(",", ":"))
    if len(stored) > max_bytes:
        message = f"must be at most {max_bytes:,} bytes as compact JSON"
        raise InvalidInput(
            f"{field} takes {len(stored):,} bytes as compact JSON, over the {max_bytes:,} bytes "
            f"{whose}",
            errors=[{"field": field, "message": message}],
        )
    return stored


def submission_of(
    body: ScoreSubmission, *, max_context_bytes: int
) -> tuple[Submission, dict[str, Any]]:
    """The submission a body asks for, and its fields as sent (unset ones absent: what a reuse of
    its Idempotency-Key must match); 422 for a context or metadata over its bound."""
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
        else _stored_json(
            "context", body.context, max_context_bytes, whose="a submission may store"
        ),
        metadata_json=None
        if body.metadata is None
        else _stored_json(
            "metadata", body.metadata, MAX_METADATA_BYTES, whose="an entry's metadata may take"
        ),
        rank_delta=body.rank_delta,
    )
    return submission, fields


@router.post(
    "/v1/scores",
    operation_id="submitScore",
    response_model=SubmitResponse,
    response_model_exclude_unset=True,
    responses=problem_responses(400, 401, 403, 409, 413, 415, 422, 429, 503),
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": component_ref(ScoreSubmission)}},
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
    now: NowDep,
    response: Response,
) -> SubmitResponse:
    principal.require_submit(body.game)
    submission, fields = submission_of(body, max_context_bytes=state.max_context_bytes)
    result = await state.leaderboard.submissions.submit(
        submission,
        client=principal.name,
        idempotency_key=idempotency_key,
        fields=fields,
        now_ms=to_ms(now),
    )
    response.headers.update(ratelimit_headers(limit))
    if result.replayed:
        response.headers["Idempotent-Replayed"] = "true"
    return SubmitResponse.of(result.outcome)
