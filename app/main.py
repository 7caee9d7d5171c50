"""The application factory and its lifespan, which owns the DynamoDB client (and, with no endpoint
configured outside production, the embedded backend)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import structlog
from fastapi import Depends, FastAPI

from app.api.admin import admin, snapshots
from app.api.deps import refuse_unknown_query
from app.api.middleware import RequestContext
from app.api.problems import install_problem_handlers
from app.api.ratelimit import RateLimiter, RatePolicy
from app.api.routes import reads, router
from app.api.state import AppState
from app.domain.buckets import BucketLayout
from app.local.embedded import EmbeddedDynamo
from app.services.demo import load_demo
from app.services.keys import KeyAuthenticator
from app.services.snapshots import BoardRegistrar
from app.services.submit import SubmitPolicy
from app.settings import Settings, get_settings
from app.store.archive import ArchiveStore
from app.store.dynamo import DynamoStore, open_client
from app.store.keys import DynamoKeyStore
from app.store.operations import BoardOperations
from app.store.tables import TableNames

log = structlog.get_logger(__name__)


def submit_policy(settings: Settings) -> SubmitPolicy:
    from datetime import timedelta

    return SubmitPolicy(
        periods=tuple(settings.periods),
        retention=settings.retention,
        idempotency_ttl=timedelta(hours=settings.idempotency_ttl_hours),
        in_progress_for=timedelta(seconds=settings.idempotency_in_progress_seconds),
        max_lateness=timedelta(seconds=settings.max_lateness_seconds),
        future_skew=timedelta(seconds=settings.future_skew_seconds),
        max_attempts=settings.transact_max_attempts,
        rank_cap=settings.rank_count_cap,
        layout=BucketLayout(),
    )


async def _load_demo(store: DynamoStore, settings: Settings) -> None:
    operations = BoardOperations(
        store.client,
        store.tables,
        counter_shards=settings.counter_shards,
        in_flight=store.in_flight,
    )
    boards = await load_demo(operations, retention=settings.retention)
    log.info("demo_boards_loaded", boards=boards)


def create_app(settings: Settings | None = None, *, demo: bool = False) -> FastAPI:
    """The app; ``demo`` fills a few boards with believable players once the tables are up (on
    the embedded backend only), in the background so the service answers at once."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        embedded: EmbeddedDynamo | None = None
        endpoint = settings.dynamodb_endpoint
        if settings.uses_embedded_backend:
            embedded = EmbeddedDynamo()
            endpoint = await asyncio.to_thread(embedded.start)
            log.info("embedded_backend_started", endpoint=endpoint, pid=embedded.pid)
        try:
            async with open_client(
                endpoint=endpoint,
                region=settings.region,
                dummy_credentials=endpoint is not None and "AWS_ACCESS_KEY_ID" not in os.environ,
                read_timeout=settings.dynamodb_read_timeout_seconds,
            ) as client:
                store = DynamoStore(
                    client,
                    TableNames(settings.scores_table, settings.snapshots_table),
                    counter_shards=settings.counter_shards,
                    max_in_flight=settings.dynamodb_max_in_flight,
                )
                if embedded is not None:
                    await store.create_tables()
                    if settings.dev_api_key is None:
                        log.warning(
                            "no_submit_key",
                            hint="set LEADERBOARD_DEV_API_KEY to post scores to the embedded backend",
                        )
                archive = ArchiveStore(
                    client,
                    store.tables,
                    counter_shards=settings.counter_shards,
                    in_flight=store.in_flight,
                )
                state = AppState(
                    settings=settings,
                    store=store,
                    keys=KeyAuthenticator.from_settings(
                        settings,
                        DynamoKeyStore(client, store.tables, in_flight=store.in_flight),
                        ttl=settings.api_key_cache_ttl_seconds,
                        max_entries=settings.api_key_cache_max_entries,
                    ),
                    policy=submit_policy(settings),
                    write_limits=RateLimiter(
                        RatePolicy(settings.write_rate_per_second, settings.write_burst),
                        max_buckets=settings.rate_limit_max_buckets,
                    ),
                    read_limits=RateLimiter(
                        RatePolicy(settings.read_rate_per_second, settings.read_burst),
                        max_buckets=settings.rate_limit_max_buckets,
                    ),
                    archive=archive,
                    registrar=BoardRegistrar(archive, retention=settings.retention),
                )
                app.state.leaderboard = state  # for operators' tools and tests
                demo_task = None
                if demo and embedded is not None:
                    demo_task = asyncio.create_task(_load_demo(store, settings))
                yield {"app": state}
                if demo_task is not None and not demo_task.done():
                    demo_task.cancel()
        finally:
            if embedded is not None:
                await asyncio.to_thread(embedded.stop)
                log.info("embedded_backend_stopped")

    app = FastAPI(
        title="Leaderboard",
        version="1.0.0",
        summary="Game leaderboards on DynamoDB: scores in, exact boards and ranks out.",
        lifespan=lifespan,
        dependencies=[Depends(refuse_unknown_query)],
    )
    app.add_middleware(
        RequestContext,
        deadline=settings.request_deadline_seconds,
        exempt_suffixes=("/seed", "/reconcile"),
    )
    install_problem_handlers(app)
    app.include_router(router)
    app.include_router(reads)
    app.include_router(admin)
    app.include_router(snapshots)
    return app


def __getattr__(name: str) -> Any:
    # ``uvicorn app.main:app`` builds the app on first access, never at import of this module.
    if name == "app":
        return create_app()
    raise AttributeError(name)
