"""The service's one exception hierarchy, and the one place it becomes an HTTP problem.

::

    LeaderboardError                  base; ``status``, ``title``, ``slug`` say how it is served
    ├── BadRequest (400)
    │   ├── MalformedJson
    │   ├── IdempotencyKeyMissing
    │   └── InvalidCursor
    ├── Unauthorized (401)
    ├── Forbidden (403)
    ├── NotFound (404)
    ├── Conflict (409, with Retry-After)
    │   ├── RequestInFlight           the same Idempotency-Key is still being processed
    │   └── BoardBeingSeeded          a seeding lease holds the board
    ├── PayloadTooLarge (413)
    ├── UnsupportedMediaType (415)
    ├── InvalidInput (422)            a field out of range, unknown, or malformed
    │   └── IdempotencyKeyReused      the same key with a different request
    └── StoreError                    raised by the DynamoDB adapter, never a boto3 ClientError
        ├── ConditionFailed           a conditional write found another state (handled inside)
        ├── TransactionCancelled      a transaction was cancelled; ``reasons`` per item
        └── Unavailable (503)         throttled, timed out or failing after retries

Errors a user can cause are 4xx problems that say what was wrong (RFC 9457
``application/problem+json``); anything else reaching the handler is a bug, served as a bare 500.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

PROBLEM_JSON = "application/problem+json"


class LeaderboardError(Exception):
    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal error"
    slug: ClassVar[str] = "internal"

    def __init__(self, detail: str, *, errors: Sequence[dict[str, Any]] = ()) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = list(errors)

    def headers(self) -> dict[str, str]:
        return {}

    def problem(self, instance: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "type": f"/problems/{self.slug}",
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if instance:
            body["instance"] = instance
        if self.errors:
            body["errors"] = self.errors
        return body


class BadRequest(LeaderboardError):
    status, title, slug = 400, "Bad request", "bad-request"


class MalformedJson(BadRequest):
    title, slug = "Malformed JSON", "malformed-json"


class IdempotencyKeyMissing(BadRequest):
    title, slug = "Idempotency-Key header required", "idempotency-key-missing"


class InvalidCursor(BadRequest):
    title, slug = "Invalid cursor", "invalid-cursor"


class Unauthorized(LeaderboardError):
    status, title, slug = 401, "Unauthorized", "unauthorized"

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="leaderboard"'}


class Forbidden(LeaderboardError):
    status, title, slug = 403, "Forbidden", "forbidden"


class NotFound(LeaderboardError):
    status, title, slug = 404, "Not found", "not-found"


class Conflict(LeaderboardError):
    status, title, slug = 409, "Conflict", "conflict"

    def __init__(self, detail: str, *, retry_after: int = 1) -> None:
        super().__init__(detail)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class RequestInFlight(Conflict):
    title, slug = "Request in progress", "request-in-flight"


class BoardBeingSeeded(Conflict):
    title, slug = "Board is being seeded", "board-being-seeded"


class PayloadTooLarge(LeaderboardError):
    status, title, slug = 413, "Payload too large", "payload-too-large"


class UnsupportedMediaType(LeaderboardError):
    status, title, slug = 415, "Unsupported media type", "unsupported-media-type"


class InvalidInput(LeaderboardError):
    status, title, slug = 422, "Invalid input", "invalid-input"


class IdempotencyKeyReused(InvalidInput):
    title, slug = "Idempotency-Key reused with a different request", "idempotency-key-reused"


class StoreError(LeaderboardError):
    """Raised by the DynamoDB adapter; services see these, never botocore's ClientError."""


class ConditionFailed(StoreError):
    pass


class TransactionCancelled(StoreError):
    """``reasons`` holds one code per item of the transaction (``None`` where that item was fine)."""

    def __init__(self, detail: str, *, reasons: Sequence[str | None]) -> None:
        super().__init__(detail)
        self.reasons = list(reasons)


class Unavailable(StoreError):
    status, title, slug = 503, "Service unavailable", "unavailable"

    def __init__(self, detail: str, *, retry_after: int = 1) -> None:
        super().__init__(detail)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}
