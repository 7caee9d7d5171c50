"""The one place errors become RFC 9457 problem responses (documents built by
``app.errors.problem_document``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from app.api.invalid import invalid_input, validation_errors
from app.errors import (
    PROBLEM_JSON,
    IdempotencyKeyMissing,
    LeaderboardError,
    StoreRejected,
    problem_document,
)

log = structlog.get_logger(__name__)

_HTTP_TITLES = {404: "Not found", 405: "Method not allowed", 406: "Not acceptable"}


def problem_response(
    status: int, body: Mapping[str, Any], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        dict(body), status_code=status, headers=dict(headers or {}), media_type=PROBLEM_JSON
    )


def error_response(error: LeaderboardError, instance: str) -> JSONResponse:
    return problem_response(error.status, error.problem(instance), error.headers())


def answered_as(error: Exception, path: str) -> LeaderboardError:
    """The error ``error`` is answered as, logged as it deserves: a service error as itself (a
    5xx logged); our own request refused by DynamoDB, or any other exception, as the anonymous
    internal error (a bug, logged in full under the request id). A request's, or one item's of a
    batch."""
    if isinstance(error, StoreRejected):
        # Our own request, refused: a bug, logged with DynamoDB's code to find it by, and
        # answered as any other bug.
        log.error("dynamodb_rejected_request", code=error.code, detail=error.detail)
        return _bug()
    if isinstance(error, LeaderboardError):
        if error.status >= 500:
            log.warning("request_failed", problem=error.slug, detail=error.detail)
        return error
    log.error("unhandled_error", path=path, exc_info=error)
    return _bug()


async def _on_service_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, LeaderboardError):  # pragma: no cover - registered for this type only
        raise exc
    return error_response(answered_as(exc, request.url.path), request.url.path)


def _is_missing_idempotency_key(error: Any) -> bool:
    """A submission without the header is a 400 (the key is how retries are made safe), not the
    422 of a malformed field."""
    loc = tuple(str(part).lower() for part in error.get("loc", ()))
    return error.get("type") == "missing" and loc == ("header", "idempotency-key")


async def _on_validation_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, RequestValidationError):  # pragma: no cover
        raise exc
    if any(_is_missing_idempotency_key(e) for e in exc.errors()):
        missing = IdempotencyKeyMissing("send an Idempotency-Key header with every submission")
        return error_response(missing, request.url.path)
    errors = validation_errors(exc.errors())
    return error_response(invalid_input(errors, whole="request"), request.url.path)


async def _on_http_error(request: Request, exc: Exception) -> JSONResponse:
    if not isinstance(exc, StarletteHTTPException):  # pragma: no cover
        raise exc
    body = problem_document(
        status=exc.status_code,
        title=_HTTP_TITLES.get(exc.status_code, "HTTP error"),
        detail=str(exc.detail),
        instance=request.url.path,
    )
    return problem_response(exc.status_code, body, exc.headers)


async def _on_bug(request: Request, exc: Exception) -> JSONResponse:
    # A bug: logged in full under the request id, answered without internals.
    return error_response(answered_as(exc, request.url.path), request.url.path)


def _bug() -> LeaderboardError:
    return LeaderboardError(
        "the service failed unexpectedly; the request id identifies the log entry"
    )


def install_problem_handlers(app: FastAPI) -> None:
    app.add_exception_handler(LeaderboardError, _on_service_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)
    app.add_exception_handler(Exception, _on_bug)
