"""The service as the harness runs it: in-process (the real app through its lifespan, driven over
ASGI, its own DynamoDB client hooked by the tracer), and the settings and keys it runs with."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aioboto3
import httpx
from asgi_lifespan import LifespanManager
from fastapi import FastAPI

from app.bootstrap import Runtime
from app.main import create_app
from app.services.api_keys import digest_of
from app.settings import ApiKeyEntry, Settings
from app.store.tables import TableNames

SUBMIT_KEY = "bench-submit-key-not-a-secret-0001"
ADMIN_KEY = "bench-admin-key-not-a-secret-0001"
GAME = "trivia"


def run_tables(prefix: str) -> TableNames:
    run = uuid.uuid4().hex[:8]
    return TableNames(f"{prefix}-scores-{run}", f"{prefix}-snapshots-{run}")


def bench_settings(endpoint: str, tables: TableNames, **overrides: Any) -> Settings:
    """The service's defaults, on ``endpoint`` and ``tables``, with the harness's two keys and
    rate limits high enough that one driver's requests are never refused for their number."""
    values: dict[str, Any] = {
        "dynamodb_endpoint": endpoint,
        "scores_table": tables.scores,
        "snapshots_table": tables.snapshots,
        "cursor_secret": "bench-cursor-secret-of-enough-length-0000",
        "write_rate_per_second": 100_000,
        "write_burst": 100_000,
        "read_rate_per_second": 100_000,
        "read_burst": 100_000,
        "api_keys": [
            ApiKeyEntry(name="bench-server", sha256=digest_of(SUBMIT_KEY), scopes=["submit:*"]),
            ApiKeyEntry(name="bench-ops", sha256=digest_of(ADMIN_KEY), scopes=["admin"]),
        ],
    }
    values.update(overrides)
    return Settings.model_validate(values)


@dataclass
class InProcess:
    app: FastAPI
    http: httpx.AsyncClient

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.app.state.runtime
        return runtime


@asynccontextmanager
async def in_process(settings: Settings) -> AsyncIterator[InProcess]:
    """The app through its lifespan (which creates the tables on the embedded backend only: the
    harness creates them itself elsewhere), and an ASGI client for it."""
    app = create_app(settings)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench.local") as http:
            yield InProcess(app, http)


@asynccontextmanager
async def bench_client(endpoint: str | None, region: str = "us-east-1") -> AsyncIterator[Any]:
    """A DynamoDB client of the harness's own, not the service's (not traced, not counted)."""
    secret = "local" if endpoint is not None else None
    async with aioboto3.Session().client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=region,
        aws_access_key_id=secret,
        aws_secret_access_key=secret,
    ) as client:
        yield client


def submit_headers(idempotency_key: str | None = None, key: str = SUBMIT_KEY) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {key}",
        "Idempotency-Key": idempotency_key or uuid.uuid4().hex,
    }


def score_body(player: str, score: int, *, variant: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "playerId": player,
        "score": score,
        "game": GAME,
        "variant": variant,
        "displayName": f"Player {player[-5:]}".ljust(12)[:12],
        "country": "GB",
    }
    body.update(extra)
    return body
