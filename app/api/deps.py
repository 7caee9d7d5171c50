"""``Annotated`` dependency aliases: routes declare what they need, never how it is built."""

from __future__ import annotations

import json
from typing import Annotated, Any, cast

import structlog
from fastapi import Depends, Header, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import ValidationError

from app.api.auth import Principal
from app.api.problems import validation_errors
from app.api.ratelimit import Decision, ratelimit_headers
from app.api.schemas import ScoreSubmission
from app.api.state import AppState
from app.errors import (
    InvalidInput,
    MalformedJson,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from app.settings import Settings
from app.store.dynamo import DynamoStore


def get_state(request: Request) -> AppState:
    return cast("AppState", request.state.app)


StateDep = Annotated[AppState, Depends(get_state)]


def get_store(state: StateDep) -> DynamoStore:
    return state.store


def get_settings_dep(state: StateDep) -> Settings:
    return state.settings


StoreDep = Annotated[DynamoStore, Depends(get_store)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


_bearer = HTTPBearer(auto_error=False, description="An API key: `Authorization: Bearer <key>`")


async def get_principal(
    state: StateDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    authorization = None if credentials is None else f"Bearer {credentials.credentials}"
    principal = await state.keys.authenticate(authorization)
    structlog.contextvars.bind_contextvars(client=principal.name)
    return principal


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def limit_writes(state: StateDep, principal: PrincipalDep) -> Decision:
    """Per key, before the body is read or anything reserved: a 429 stores nothing."""
    return state.write_limits.enforce(principal.name)


WriteLimitDep = Annotated[Decision, Depends(limit_writes)]


def limit_reads(state: StateDep, request: Request, response: Response) -> None:
    """Per client address (behind a trusted proxy, the forwarded one)."""
    address = request.client.host if request.client else "unknown"
    decision = state.read_limits.enforce(address)
    response.headers.update(ratelimit_headers(decision))


def get_idempotency_key(
    idempotency_key: Annotated[
        str,
        Header(
            alias="Idempotency-Key",
            pattern=r"^[\x21-\x7e]{1,255}$",
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


async def read_json_body(request: Request, settings: SettingsDep) -> Any:
    """The body as JSON: 415 unless it says it is JSON, 413 over the limit (checked while
    streaming, so a lying Content-Length cannot get more through), 400 if it does not parse."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json" and not media_type.endswith("+json"):
        raise UnsupportedMediaType("send the body as application/json")
    body = await _read_limited(request, settings.max_body_bytes)
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedJson(f"the body is not valid JSON: {exc}") from None


def _query_names(dependant: Dependant) -> set[str]:
    names = {param.alias for param in dependant.query_params}
    for inner in dependant.dependencies:
        names |= _query_names(inner)
    return names


def refuse_unknown_query(request: Request) -> None:
    """An unknown query parameter is a 422, like an unknown body field: a typo (``?limt=5``)
    should not silently fall back to a default."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not request.query_params:
        return
    unknown = sorted(set(request.query_params) - _query_names(route.dependant))
    if unknown:
        raise InvalidInput(
            f"unknown query parameters: {', '.join(unknown)}",
            errors=[{"field": name, "message": "unknown"} for name in unknown],
        )


async def read_text_body(request: Request, settings: Settings) -> tuple[str, str]:
    """A text body (CSV or JSON lines) and its media type: 415 for anything else, 413 over the
    body limit."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type not in {"text/csv", "application/x-ndjson", "application/jsonl"}:
        raise UnsupportedMediaType("send the rows as text/csv or application/x-ndjson")
    body = await _read_limited(request, settings.max_body_bytes)
    try:
        return body.decode("utf-8"), media_type
    except UnicodeDecodeError:
        raise InvalidInput("the body is not UTF-8 text") from None


async def get_submission(body: Annotated[Any, Depends(read_json_body)]) -> ScoreSubmission:
    if not isinstance(body, dict):
        raise InvalidInput("the body must be a JSON object")
    try:
        return ScoreSubmission.model_validate(body)
    except ValidationError as exc:
        errors = validation_errors(exc.errors())
        fields = ", ".join(sorted({e["field"] or "body" for e in errors}))
        raise InvalidInput(f"invalid: {fields}", errors=errors) from None


SubmissionDep = Annotated[ScoreSubmission, Depends(get_submission)]
