"""Shared fixtures: one embedded DynamoDB (moto's server over HTTP) per test session, fresh tables
per test, the real adapter, and the app served in-process through its lifespan.

Every DynamoDB client a test opens (through the composition root) carries ``tests.faults``' hook:
a request real DynamoDB would refuse fails the test, pages end as DynamoDB ends them, and a test
may switch on DynamoDB's unkinder answers (``faithful_run``).

Set ``LEADERBOARD_TEST_DYNAMODB_ENDPOINT`` to run the same tests against another endpoint
(DynamoDB Local, say) instead of the embedded one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import structlog
from asgi_lifespan import LifespanManager
from botocore.retries.standard import ExponentialBackoff
from fastapi import FastAPI
from hypothesis import settings as hypothesis_settings

from app import bootstrap
from app.api.deps import AppState
from app.bootstrap import Runtime, open_runtime
from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from app.main import create_app
from app.services.api_keys import digest_of
from app.settings import ApiKeyEntry, Settings
from app.store.client import open_client
from app.store.tables import TableNames
from tests.faults import MODERATE, Faithful, Profile, faithful, install

# No per-example deadline: on a busy two-core machine a property's example can take longer than
# hypothesis' 200 ms for reasons of the machine's, not the code's (example counts bound the time).
hypothesis_settings.register_profile("leaderboard", deadline=None)
hypothesis_settings.load_profile("leaderboard")

SUBMIT_KEY = "test-submit-trivia-key"
OTHER_GAME_KEY = "test-submit-chess-key"
ADMIN_KEY = "test-admin-key"


@pytest.fixture(scope="session", autouse=True)
def _logging() -> None:
    configure_logging(json=True, cache=False)
    structlog.contextvars.clear_contextvars()


@asynccontextmanager
async def _faithful_client(*, endpoint: str | None, **kwargs: Any) -> AsyncIterator[Any]:
    async with open_client(endpoint=endpoint, **kwargs) as client:
        if endpoint is not None:
            install(client, endpoint)
        yield client


@pytest.fixture(scope="session", autouse=True)
def _faithful_clients() -> Iterator[None]:
    """Every client the composition root opens in this process carries the hook."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bootstrap, "open_client", _faithful_client)
        yield


@pytest.fixture(autouse=True)
def _refused_requests_fail_the_test() -> Iterator[None]:
    faithful.reset()
    yield
    refused, faithful.refused = faithful.refused, []
    faithful.reset()
    assert not refused, "DynamoDB would refuse what the service sent:\n" + "\n".join(refused)


@pytest.fixture
def faithful_run(dynamo_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faithful]:
    """DynamoDB's unkind answers at ``MODERATE`` rates for this test (``tests.faults``), with
    botocore's retries as configured but without their waits (up to 1 s, then 2 s, at random):
    what a retry does is under test, not how long it waits first."""
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda _self, _context: 0.01)
    faithful.use(MODERATE, endpoint=dynamo_endpoint)
    yield faithful
    faithful.use(Profile(), endpoint=dynamo_endpoint)


@pytest.fixture(scope="session")
def dynamo_endpoint() -> Iterator[str]:
    given = os.environ.get("LEADERBOARD_TEST_DYNAMODB_ENDPOINT")
    if given:
        yield given
        return
    with EmbeddedDynamo() as endpoint:
        yield endpoint


@pytest.fixture
def table_names() -> TableNames:
    run = uuid.uuid4().hex[:10]
    return TableNames(scores=f"scores-{run}", snapshots=f"snapshots-{run}")


def make_settings(endpoint: str, tables: TableNames, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "dynamodb_endpoint": endpoint,
        "scores_table": tables.scores,
        "snapshots_table": tables.snapshots,
        "cursor_secret": "test-cursor-secret-of-enough-length-000",
        # Tests send many requests from one key and one address; the limits get their own tests.
        "write_rate_per_second": 10_000,
        "write_burst": 10_000,
        "read_rate_per_second": 10_000,
        "read_burst": 10_000,
        # Tests send bursts past what the embedded backend answers within a second, to test what
        # happens behind the overload limit; the limit gets its own tests (tests/unit/
        # test_overload.py, and tests/load/, through `leaderboard serve` as configured by default).
        "admission_latency_target_seconds": 0,
        # Tests read what they just wrote; the per-task caches get their own tests.
        "player_count_cache_seconds": 0,
        "hot_board_summary_seconds": 0,
        "board_list_cache_seconds": 0,
        "lease_cache_seconds": 0,
        # One task, with no request in flight when a test changes a variant's ranking: no grace,
        # and the leases let go as the definition is put (their own tests set both).
        "definition_cache_seconds": 0,
        "definition_change_grace_seconds": 0,
        # No deliverer polling the outbox under every test: the webhook tests run theirs.
        "webhook_poll_seconds": 0,
        # No closer at work behind a test's back: the close gets its own tests.
        "close_interval_seconds": 3600,
        "api_keys": [
            ApiKeyEntry(
                name="trivia-server", sha256=digest_of(SUBMIT_KEY), scopes=["submit:trivia"]
            ),
            ApiKeyEntry(
                name="chess-server", sha256=digest_of(OTHER_GAME_KEY), scopes=["submit:chess"]
            ),
            ApiKeyEntry(name="ops", sha256=digest_of(ADMIN_KEY), scopes=["admin"]),
        ],
    }
    values.update(overrides)
    return Settings.model_validate(values)


@pytest.fixture
def settings(dynamo_endpoint: str, table_names: TableNames) -> Settings:
    return make_settings(dynamo_endpoint, table_names)


@pytest.fixture
async def runtime(settings: Settings, table_names: TableNames) -> AsyncIterator[Runtime]:
    """The real adapters on fresh tables, built by the composition root as the service builds
    them, the tables dropped afterwards so moto stays small and fast."""
    async with open_runtime(settings, create_tables=True) as opened:
        yield opened
        for name in (table_names.scores, table_names.snapshots):
            await opened.client.delete_table(TableName=name)


@dataclass
class Service:
    """The app, served in-process, and a client for it."""

    app: FastAPI
    http: httpx.AsyncClient
    asgi: Any
    """The app as served (with its lifespan state), for clients of a test's own."""

    @property
    def state(self) -> AppState:
        state: AppState = self.app.state.leaderboard
        return state

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.app.state.runtime
        return runtime


@asynccontextmanager
async def serve(settings: Settings) -> AsyncIterator[Service]:
    """The app with these settings, through its lifespan, and an async client for it."""
    app = create_app(settings)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://leaderboard.test"
        ) as http:
            yield Service(app, http, manager.app)


@pytest.fixture
async def service(settings: Settings, runtime: Runtime) -> AsyncIterator[Service]:
    async with serve(settings) as running:
        yield running
