"""Per-request context: a request id, the DynamoDB call count, and one canonical log line."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.errors import PROBLEM_JSON, Unavailable
from app.telemetry import CallStats, current_stats

log = structlog.get_logger("app.request")
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


class RequestContext:
    """Pure ASGI middleware (no BaseHTTPMiddleware), so streaming and lifespans are untouched.

    Also bounds each request's time: past ``deadline`` seconds a request that has not started its
    response is answered 503 with ``Retry-After`` (a submission cut short this way is completed
    exactly once by a retry with the same Idempotency-Key). Operator paths (seeding, reconciling)
    are exempt: they take as long as the board does, and a seeder cut short leaves rows uncounted.
    """

    def __init__(
        self, app: ASGIApp, *, deadline: float = 10.0, exempt_suffixes: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.deadline = deadline
        self.exempt_suffixes = exempt_suffixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(b"x-request-id", b"").decode("latin-1")
        request_id = given if _REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
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

        try:
            exempt = scope["path"].endswith(self.exempt_suffixes)
            async with asyncio.timeout(None if exempt else self.deadline):
                await self.app(scope, receive, send_with_id)
        except TimeoutError:
            if started:
                raise
            status = 503
            log.warning("request_deadline_exceeded", deadline_s=self.deadline)
            await _send_timeout(send_with_id, scope["path"], self.deadline)
        finally:
            log.info(
                "request",
                method=scope["method"],
                path=scope["path"],
                status=status,
                duration_ms=round((time.perf_counter() - began) * 1000, 2),
                dynamodb_calls=stats.total_calls,
                read_units=round(stats.read_units, 2),
                write_units=round(stats.write_units, 2),
            )
            current_stats.reset(stats_token)
            structlog.contextvars.clear_contextvars()


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
