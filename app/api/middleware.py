"""Per-request context: a request id, the deadline, the request's metrics, and one canonical log
line with its DynamoDB calls and units (and, on AWS, its CloudWatch metrics)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from contextvars import ContextVar
from typing import Any

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import embedded_metrics, telemetry
from app.errors import PROBLEM_JSON, Unavailable
from app.telemetry import CallStats, current_stats

log = structlog.get_logger("app.request")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestContext:
    """Pure ASGI middleware (no BaseHTTPMiddleware), so streaming and lifespans are untouched.

    Also bounds each request's time: past ``deadline`` seconds a request that has not started its
    response is answered 503 with ``Retry-After`` (a submission cut short this way is completed
    exactly once by a retry with the same Idempotency-Key). A route lifts the bound for its own
    request (``lift_deadline``, as a dependency, after the admin key is checked): seeding and
    reconciling, which take as long as the board does (a seeder cut short leaves rows
    uncounted), and a definition's ``PUT``, which a change of order, operator or shards holds for
    its grace period. Never a path: anyone can end a path in ``/seed`` (a player called "seed").
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        deadline: float = 10.0,
        cloudwatch_metrics: bool = False,
        placeholder_units: bool = False,
    ) -> None:
        self.app = app
        self.deadline = deadline
        self.cloudwatch_metrics = cloudwatch_metrics
        """Write the embedded metric format on each log line (for CloudWatch Logs on AWS)."""
        self.placeholder_units = placeholder_units
        """The backend reports made-up capacity units (moto): say so on each log line."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _REQUEST_ID.fullmatch(given) else os.urandom(16).hex()
        stats = CallStats()
        stats_token = current_stats.set(stats)
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        began = time.perf_counter()
        status = 500
        started = False  # the response has begun: too late to answer with a 503

        async def send_with_id(message: Message) -> None:
            nonlocal status, started
            if message["type"] == "http.response.start":
                started = True
                status = message["status"]
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-request-id", request_id.encode())]
            await send(message)

        telemetry.HTTP_IN_FLIGHT.inc()
        try:
            async with asyncio.timeout(self.deadline) as deadline:
                deadline_token = _deadline.set(deadline)
                try:
                    await self.app(scope, receive, send_with_id)
                finally:
                    _deadline.reset(deadline_token)
        except TimeoutError:
            if started:
                raise
            status = 503
            telemetry.deadline_exceeded(_route_template(scope))
            log.warning("request_deadline_exceeded", deadline_s=self.deadline)
            await _send_timeout(send_with_id, scope["path"], self.deadline)
        finally:
            telemetry.HTTP_IN_FLIGHT.dec()
            self._log_request(scope, status, time.perf_counter() - began, stats)
            current_stats.reset(stats_token)
            structlog.contextvars.clear_contextvars()

    def _log_request(self, scope: Scope, status: int, elapsed: float, stats: CallStats) -> None:
        """The request's metrics, and its one canonical log line (on AWS, with its CloudWatch
        metrics; a batch whose items had several outcomes adds a line for each)."""
        route = _route_template(scope)
        method = scope["method"]
        telemetry.request_answered(route, method, status, elapsed)
        fields: dict[str, Any] = {
            "method": method,
            "path": scope["path"],
            "status": status,
            "duration_ms": round(elapsed * 1000, 2),
            "dynamodb_calls": stats.total_calls,
            "read_units": round(stats.read_units, 2),
            "write_units": round(stats.write_units, 2),
        }
        if self.placeholder_units:
            fields["units"] = "the embedded backend's placeholders, not DynamoDB's"
        if not self.cloudwatch_metrics:
            log.info("request", **fields)
            return
        timestamp_ms = int(time.time() * 1000)
        fields |= embedded_metrics.emf_fields(
            route=route, status=status, stats=stats, timestamp_ms=timestamp_ms
        )
        log.info("request", **fields)
        for counts in embedded_metrics.emf_outcome_lines(stats, timestamp_ms=timestamp_ms):
            log.info("submissions", **counts)


_deadline: ContextVar[asyncio.Timeout | None] = ContextVar("request_deadline", default=None)
"""The running request's deadline (its route's handler runs in the middleware's task)."""


async def lift_deadline() -> None:
    """A dependency of the routes that may take as long as their work does: the request runs on
    with no deadline. Listed after the admin check, so only an admin's request is exempt."""
    deadline = _deadline.get()
    if deadline is not None:
        deadline.reschedule(None)


def deadline_at() -> float | None:
    """When the running request's deadline falls, on the event loop's clock (``None``: it has
    none), for work that answers in parts before it (a batch's items)."""
    deadline = _deadline.get()
    return None if deadline is None else deadline.when()


def _route_template(scope: Scope) -> str:
    """The path as the router matched it (``/v1/leaderboards/{game}/...``), never the raw path:
    metrics label by it, and raw paths are unbounded (player ids, typos, scanners)."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"


async def _send_timeout(send: Send, path: str, deadline: float) -> None:
    error = Unavailable(f"the request took longer than {deadline:g} s; retry shortly")
    body = json.dumps(error.problem(path)).encode()
    headers = [(name.lower().encode(), value.encode()) for name, value in error.headers().items()]
    await send(
        {
            "type": "http.response.start",
            "status": error.status,
            "headers": [
                (b"content-type", PROBLEM_JSON.encode()),
                *headers,
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
