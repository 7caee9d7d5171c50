"""The application factory and its lifespan, which opens the service's parts once (through the
composition root) and closes them at shutdown."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import FastAPI
from fastapi.routing import APIRoute

from app import __version__, telemetry
from app.api import (
    admin,
    batches,
    claims,
    entrants,
    health,
    league,
    moderation,
    reads,
    scores,
    snapshots,
    variants,
    webhooks,
)
from app.api.cors import PublicReadsCors
from app.api.deps import AppState
from app.api.docs import install_docs
from app.api.middleware import RequestContext
from app.api.openapi import install_openapi
from app.api.overload import AdaptiveLimit, Admission
from app.api.problem_types import install_problem_pages
from app.api.problems import install_problem_handlers
from app.api.ratelimit import RateLimiter, RatePolicy
from app.api.readiness import StartupJobs
from app.api.routing import StrictQueryRoute
from app.api.viewer import install_viewer
from app.bootstrap import Runtime
from app.configuration import ConfigurationError, get_settings, unknown_settings
from app.errors import LeaderboardError
from app.local.demo import load_demo
from app.local.serves import open_service_runtime
from app.services.leaderboard import Leaderboard
from app.services.rules import BoardRules
from app.settings import Settings

log = structlog.get_logger(__name__)


def app_state(runtime: Runtime, settings: Settings) -> AppState:
    return AppState(
        leaderboard=runtime.leaderboard,
        write_limits=RateLimiter(
            RatePolicy(settings.write_rate_per_second, settings.write_burst),
            max_buckets=settings.rate_limit_max_buckets,
        ),
        read_limits=RateLimiter(
            RatePolicy(settings.read_rate_per_second, settings.read_burst),
            max_buckets=settings.rate_limit_max_buckets,
        ),
        max_body_bytes=settings.max_body_bytes,
        max_context_bytes=settings.max_context_bytes,
    )


def warn_of_unknown_settings(environ: Mapping[str, str]) -> None:
    """One warning for each ``LEADERBOARD_`` variable that is no setting (a misspelling leaves
    the setting at its default): its name and the closest setting's, never its value, which may
    be a secret."""
    for variable, closest in unknown_settings(environ):
        log.warning("unknown_setting", variable=variable, suggestion=closest)


DEMO_JOB = "loading the demo boards"
DEFINITIONS_JOB = "reading the board definitions"


async def _keep_definitions(rules: BoardRules, startup: StartupJobs) -> None:
    """Hold the definition of every variant with boards before the service is ready, then keep
    the games in use fresh until shutdown (``app.services.rules.held``). A failed preload is
    logged, not fatal: requests then read the definitions they need themselves."""
    try:
        variants, found = await rules.hold_registered()
        log.info("definitions_preloaded", variants=variants, definitions=found)
    except LeaderboardError as exc:
        log.warning("definitions_preload_failed", error=str(exc))
    finally:
        startup.finish(DEFINITIONS_JOB)
    await rules.keep_fresh()


async def _load_demo(leaderboard: Leaderboard, startup: StartupJobs) -> None:
    """Fill the demo boards; the service is ready once they are (or never, if they fail)."""
    began = time.perf_counter()
    log.info("demo_boards_loading")
    try:
        loaded = await load_demo(leaderboard)
    except Exception:
        startup.fail(DEMO_JOB)
        log.exception("demo_boards_failed")
        return
    startup.finish(DEMO_JOB)
    log.info("demo_boards_loaded", boards=loaded, duration_s=round(time.perf_counter() - began, 2))


def create_app(settings: Settings | None = None, *, demo: bool = False) -> FastAPI:
    """The app; ``demo`` fills a few boards with believable players once the tables are up (on
    the embedded backend only), in the background so the service answers at once, and ready
    (``/readyz``) once they are full."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        warn_of_unknown_settings(os.environ)
        async with open_service_runtime(settings) as runtime:
            if settings.uses_embedded_backend and settings.dev_api_key is None:
                log.warning(
                    "no_submit_key",
                    hint="set LEADERBOARD_DEV_API_KEY to post scores to the embedded backend",
                )
            state = app_state(runtime, settings)
            telemetry.watch_bounds(
                key_cache=lambda: state.leaderboard.api_keys.authenticator.remembered,
                write_buckets=lambda: len(state.write_limits),
                read_buckets=lambda: len(state.read_limits),
            )
            app.state.leaderboard = state  # for operators' tools and tests
            app.state.runtime = runtime
            state.startup.begin(DEFINITIONS_JOB)  # /readyz is 503 until they are held
            definitions_task = asyncio.create_task(
                _keep_definitions(runtime.leaderboard.rules, state.startup)
            )
            # Every task delivers the outbox's events; their leases keep two from sending one.
            deliverer = asyncio.create_task(runtime.leaderboard.webhooks.deliver_forever())
            # Every task closes the periods that are due; the close happens once whatever
            # their number (app.services.operations._close).
            closer_task = asyncio.create_task(runtime.leaderboard.operations.keep_closing())
            demo_task = None
            if demo and settings.uses_embedded_backend:
                state.startup.begin(DEMO_JOB)  # /readyz is 503 until it is done
                demo_task = asyncio.create_task(_load_demo(runtime.leaderboard, state.startup))
            yield {"app": state}
            if demo_task is not None and not demo_task.done():
                demo_task.cancel()
            definitions_task.cancel()
            deliverer.cancel()
            closer_task.cancel()
            await asyncio.gather(deliverer, closer_task, return_exceptions=True)

    app = FastAPI(
        title="Leaderboard",
        version=__version__,
        license_info={"name": "MIT", "identifier": "MIT"},
        summary="Game leaderboards on DynamoDB: scores in, exact boards and ranks out.",
        lifespan=lifespan,
        # Swagger UI from the service's own copy (install_docs), never a CDN; no ReDoc, whose
        # script no package here carries.
        docs_url=None,
        redoc_url=None,
        # The service's metrics are its own (/metrics, and CloudWatch's on AWS): FastAPI's
        # OpenTelemetry hooks would only ask, on every request, whether a provider is set.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.router.route_class = StrictQueryRoute  # the app's own routes (the viewer's, /docs)
    if settings.admission_latency_target_seconds > 0:
        # Inside CORS, so a refused page of another origin can read why; inside RequestContext,
        # so a refusal is logged and counted.
        app.add_middleware(
            Admission,
            limit=AdaptiveLimit(
                target_s=settings.admission_latency_target_seconds,
                initial=settings.admission_initial_limit,
            ),
        )
    if settings.browser_origins:
        # Inside RequestContext: a preflight is logged, counted and held to the deadline too.
        app.add_middleware(PublicReadsCors, origins=settings.browser_origins)
    app.add_middleware(
        RequestContext,
        deadline=settings.request_deadline_seconds,
        # On AWS the log line carries CloudWatch's embedded metrics; locally it would be noise.
        cloudwatch_metrics=settings.environment == "production",
        placeholder_units=settings.uses_embedded_backend,
    )
    install_problem_handlers(app)
    install_docs(app)
    install_problem_pages(app)
    install_openapi(app)
    install_viewer(app)
    routers = [
        module.router
        for module in (
            scores,
            batches,
            claims,
            entrants,
            health,
            league,
            reads,
            variants,
            admin,
            moderation,
            snapshots,
            webhooks,
        )
    ]
    for router in routers:
        app.include_router(router)
    telemetry.show_known_series(
        [route.path for router in routers for route in router.routes if isinstance(route, APIRoute)]
    )
    return app


def __getattr__(name: str) -> Any:
    # ``uvicorn app.main:app`` builds the app on first access, never at import of this module.
    if name == "app":
        try:
            return create_app()
        except ConfigurationError as exc:
            # The reason alone, as `leaderboard` prints it, instead of a traceback.
            raise SystemExit(f"leaderboard: configuration error: {exc}") from None
    raise AttributeError(name)
