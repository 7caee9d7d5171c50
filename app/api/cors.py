"""CORS for the public reads: pages of the configured origins may ``GET`` what is under ``/v1/``,
without credentials (docs/security.md says why no more)."""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.problems import problem_response
from app.errors import CorsRefused

READ_AT = "Leaderboard-Read-At"
"""When a page served from a task's summary of a hot board was read (``app.services.ranking.summary``)."""
EXPOSED = ("RateLimit", "RateLimit-Policy", "Retry-After", "X-Request-Id", READ_AT)
"""Response headers a page's script may read besides the safelisted ones."""

READ_METHODS = ("GET", "HEAD")


class _ProblemCors(CORSMiddleware):
    """Starlette's CORS, whose refused preflight is a problem document like every other 4xx."""

    def preflight_response(self, request_headers: Headers) -> Response:
        response = super().preflight_response(request_headers)
        if response.status_code < 400:
            return response
        refused = bytes(response.body).decode().removeprefix("Disallowed CORS ")
        error = CorsRefused(
            f"a page may not ask this ({refused} refused): browsers may only read the public "
            f"boards ({', '.join(READ_METHODS)}, no credentials)"
        )
        return problem_response(error.status, error.problem())


class PublicReadsCors:
    """CORS on ``GET``, ``HEAD`` and preflights under ``/v1/`` only: the writes and the admin
    endpoints take an ``Authorization`` header no preflight allows, and the operators' paths
    (``/metrics``, ``/docs``, the health checks) answer browsers of other origins nothing."""

    def __init__(self, app: ASGIApp, *, origins: list[str]) -> None:
        self._app = app
        self._cors = _ProblemCors(
            app,
            allow_origins=origins,
            allow_methods=READ_METHODS,
            allow_headers=(),
            allow_credentials=False,
            expose_headers=EXPOSED,
            max_age=600,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"].startswith("/v1/")
            and scope["method"] in (*READ_METHODS, "OPTIONS")
        ):
            await self._cors(scope, receive, send)
        else:
            await self._app(scope, receive, send)
