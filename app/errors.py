"""The service's one exception hierarchy, and the one function that makes a problem document.

::

    LeaderboardError                  base; ``status``, ``title``, ``slug`` say how it is served
    ├── BadRequest (400)
    │   ├── MalformedJson
    │   ├── IdempotencyKeyMissing
    │   └── InvalidCursor
    ├── Unauthorized (401)
    ├── Forbidden (403)
    │   ├── PlayerBanned              the player is banned from the game: nothing is stored
    │   └── NotJoined                 a submission to a joinRequired variant from a player not in
    ├── NotFound (404)
    ├── Conflict (409, with Retry-After)
    │   ├── RequestInFlight           the same Idempotency-Key is still being processed
    │   ├── BoardBeingSeeded          a seeding lease holds the board
    │   ├── PlayerBeingErased         an erasure of the player is running
    │   ├── PeriodOpen                a claim on a period that has not closed yet
    │   ├── EntrantsFull              a join past the variant's maxEntrants
    │   └── AttemptsExhausted         a submission past the variant's maxAttempts
    ├── PayloadTooLarge (413)
    ├── UnsupportedMediaType (415)
    ├── InvalidInput (422)            a field out of range, unknown, or malformed
    │   ├── NestedTooDeeply           JSON nested past the limit, refused before parsing
    │   ├── IdempotencyKeyReused      the same key with a different request
    │   └── ScoreOutOfBounds          a score outside its variant's scoreMin..scoreMax
    ├── RateLimited (429)             the caller's token bucket is empty
    ├── Unavailable (503)             a dependency failing after retries, or the request deadline
    │   ├── Throttled                 DynamoDB throttled the call past botocore's retries, or
    │   │                             cancelled a transaction for throughput (never contention)
    │   ├── ItemBusy                  a plain write met a transaction holding its item
    │   ├── Overloaded                the task answers all its backend serves within the target
    │   ├── LeagueClosing             a league's player waits on their last period's close
    │   └── CountsIncomplete          a seed or a counter rebuild has the counters part-written
    └── StoreError                    raised by the DynamoDB adapter, handled inside the services
        ├── ConditionFailed           a conditional write found another state
        ├── TransactionCancelled      a transaction was cancelled: a conflict, or a condition
        │   └── LeaseHeld             ... because a seeding lease holds the board
        └── StoreRejected (500)       DynamoDB refused a request as malformed: a bug of ours

The adapter translates every DynamoDB and transport error into one of these, so services never see
botocore's ``ClientError``. Errors a user can cause are 4xx problems that say what was wrong (RFC
9457 ``application/problem+json``, built by ``problem_document``); anything 5xx is logged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

PROBLEM_JSON = "application/problem+json"


def problem_types() -> dict[str, tuple[int, str]]:
    """Every problem ``type`` the service answers with, by slug: its status and title."""
    found: dict[str, tuple[int, str]] = {}
    waiting: list[type[LeaderboardError]] = [LeaderboardError]
    while waiting:
        cls = waiting.pop()
        waiting.extend(cls.__subclasses__())
        if "slug" in cls.__dict__ and cls.slug not in found:
            found[cls.slug] = (cls.status, cls.title)
    return dict(sorted(found.items()))


def problem_document(
    *,
    status: int,
    title: str,
    detail: str,
    slug: str | None = None,
    instance: str | None = None,
    errors: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """An RFC 9457 problem: ``type`` is ``/problems/<slug>``, or ``about:blank`` when the status
    says it all (a 404 for a path no route serves, say)."""
    body: dict[str, Any] = {
        "type": f"/problems/{slug}" if slug else "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    if errors:
        body["errors"] = [dict(error) for error in errors]
    return body


class LeaderboardError(Exception):
    status: ClassVar[int] = 500
    title: ClassVar[str] = "Internal error"
    slug: ClassVar[str] = "internal"

    def __init__(self, detail: str, *, errors: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = [dict(error) for error in errors]

    def headers(self) -> dict[str, str]:
        return {}

    def problem(self, instance: str | None = None) -> dict[str, Any]:
        return problem_document(
            status=self.status,
            title=self.title,
            slug=self.slug,
            detail=self.detail,
            instance=instance,
            errors=self.errors,
        )


class BadRequest(LeaderboardError):
    status, title, slug = 400, "Bad request", "bad-request"


class MalformedJson(BadRequest):
    title, slug = "Malformed JSON", "malformed-json"


class IdempotencyKeyMissing(BadRequest):
    title, slug = "Idempotency-Key header required", "idempotency-key-missing"


class InvalidCursor(BadRequest):
    title, slug = "Invalid cursor", "invalid-cursor"


class CorsRefused(BadRequest):
    """A browser's preflight asked for more than reading the public boards: another method, a
    header such as ``Authorization``, or an origin not allowed (docs/security.md)."""

    title, slug = "Cross-origin request refused", "cors-refused"


class Unauthorized(LeaderboardError):
    status, title, slug = 401, "Unauthorized", "unauthorized"

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": 'Bearer realm="leaderboard"'}


class Forbidden(LeaderboardError):
    status, title, slug = 403, "Forbidden", "forbidden"


class PlayerBanned(Forbidden):
    """A banned player's submission to the game (decision 0036): refused before anything is
    written."""

    title, slug = "Player banned", "player-banned"


class NotJoined(Forbidden):
    """A submission to a ``joinRequired`` variant from a player who has not joined the period
    board (decision 0039): refused before anything is written."""

    title, slug = "Not joined", "not-joined"


class NotFound(LeaderboardError):
    status, title, slug = 404, "Not found", "not-found"


class _RetryLater(LeaderboardError):
    """A refusal that says when to come back, in whole seconds."""

    def __init__(
        self, detail: str, *, retry_after: int = 1, errors: Sequence[Mapping[str, Any]] = ()
    ) -> None:
        super().__init__(detail, errors=errors)
        self.retry_after = max(1, int(retry_after))

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


class Conflict(_RetryLater):
    status, title, slug = 409, "Conflict", "conflict"


class RequestInFlight(Conflict):
    title, slug = "Request in progress", "request-in-flight"


class BoardBeingSeeded(Conflict):
    title, slug = "Board is being seeded", "board-being-seeded"


class PlayerBeingErased(Conflict):
    title, slug = "Player is being erased", "player-being-erased"


class PeriodOpen(Conflict):
    """A reward claimed on a board whose period has not closed (its end plus the accepted
    lateness has not passed; all-time never closes)."""

    title, slug = "Period open", "period-open"


class EntrantsFull(Conflict):
    """A join (or a first submission) to a period board that has placed ``maxEntrants`` players
    (decision 0039): nothing is stored."""

    title, slug = "Full", "full"


class AttemptsExhausted(Conflict):
    """A player's submission past the variant's ``maxAttempts`` on a period board: nothing is
    stored (a replay is answered as before: it is not an attempt)."""

    title, slug = "Attempts exhausted", "attempts-exhausted"


class PayloadTooLarge(LeaderboardError):
    status, title, slug = 413, "Payload too large", "payload-too-large"


class UnsupportedMediaType(LeaderboardError):
    status, title, slug = 415, "Unsupported media type", "unsupported-media-type"


class InvalidInput(LeaderboardError):
    status, title, slug = 422, "Invalid input", "invalid-input"


class NestedTooDeeply(InvalidInput):
    title, slug = "JSON nested too deeply", "nested-too-deeply"


class IdempotencyKeyReused(InvalidInput):
    title, slug = "Idempotency-Key reused with a different request", "idempotency-key-reused"


class ScoreOutOfBounds(InvalidInput):
    """A submission's score is outside the bounds its variant's definition sets (``scoreMin``,
    ``scoreMax``): refused before anything is read or written."""

    title, slug = "Score out of bounds", "score-out-of-bounds"


class RateLimited(LeaderboardError):
    """429: the caller's bucket is empty. ``limit_headers`` (``Retry-After`` and the RateLimit
    fields) go on the response; nothing was done or stored for the request."""

    status, title, slug = 429, "Too many requests", "rate-limited"

    def __init__(self, detail: str, *, limit_headers: Mapping[str, str]) -> None:
        super().__init__(detail)
        self._headers = dict(limit_headers)

    def headers(self) -> dict[str, str]:
        return dict(self._headers)


class Unavailable(_RetryLater):
    status, title, slug = 503, "Service unavailable", "unavailable"


class Throttled(Unavailable):
    title, slug = "Throttled", "throttled"


class CountsIncomplete(Unavailable):
    """A board's counters are part-written (a seed or a counter rebuild is under way, or one
    stopped part-way): no rank or player count can be known from them until it completes, or
    ``reconcile --apply`` rebuilds them."""

    title, slug = "Board is being counted", "counts-incomplete"


class BoardBusy(Unavailable):
    """A task's limit of submissions to one board at once is reached, and no place came free in
    time (``app.services.submissions.admission``): nothing was done; retry after ``Retry-After``."""

    title, slug = "Board busy", "board-busy"


class Overloaded(Unavailable):
    """The task already has in flight all the requests its backend answers within the latency
    target (``app.api.overload``): refused at once, with nothing read or done."""

    title, slug = "Overloaded", "overloaded"


class LeagueClosing(Unavailable):
    """A league's player of the last period cannot be placed in the next before its close has
    decided their tier (decision 0040)."""


class Contended(Unavailable):
    """A submission's transaction was cancelled by conflicts on every one of its attempts: the
    boards are too contended right now; a retry with the same Idempotency-Key completes it. The
    problem is the plain ``unavailable`` one: only the metrics tell it apart."""


class ItemBusy(Unavailable):
    """DynamoDB refused a plain write (Put, Update, Delete) because a transaction in flight holds
    its item (``TransactionConflictException``, which botocore does not retry): try again in a
    moment. Operator work retries it (``app.services.work``); a request answers 503."""

    title, slug = "Busy", "busy"


class StoreError(LeaderboardError):
    """The adapter's errors that services handle themselves (a 500 if one ever escapes)."""


class ConditionFailed(StoreError):
    """A conditional write found another state than the one it was conditioned on."""


CancelKind = Literal["conflict", "condition", "other"]


class TransactionCancelled(StoreError):
    """A transaction was cancelled and nothing of it was applied. ``kind`` says why: another
    transaction held one of its items (``conflict``), a condition failed (``condition``, the state
    changed since it was read), or something else (``other``: a token reused). Both are worth a
    re-read and another try; a transaction cancelled for throughput is ``Throttled`` instead, and
    one DynamoDB found invalid is ``StoreRejected``: neither is retried."""

    def __init__(self, detail: str, *, kind: CancelKind) -> None:
        super().__init__(detail)
        self.kind: CancelKind = kind


class LeaseHeld(TransactionCancelled):
    """The transaction's check that no seeding lease holds the board failed."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail, kind="condition")


class StoreRejected(StoreError):
    """DynamoDB refused a request as malformed (``ValidationException`` and the like): the request
    is ours, so this is a bug, logged with DynamoDB's code and served as a 500."""

    def __init__(self, detail: str, *, code: str) -> None:
        super().__init__(detail)
        self.code = code
