"""What every browser test module shares: a `leaderboard serve --demo` of its own (the module's
tests share it), a headless Chromium, and a client of the service's API."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import Browser

from tests.browser.harness import CHROMIUM_MISSING, SETTINGS, chromium, demo_service
from tests.served import ServiceExited


@pytest.fixture(scope="module")
def service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    try:
        with demo_service(tmp_path_factory.mktemp(request.module.__name__), SETTINGS) as base_url:
            yield base_url
    except ServiceExited as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    try:
        with chromium() as (_, launched):
            yield launched
    except FileNotFoundError:
        pytest.fail(CHROMIUM_MISSING)


@pytest.fixture
def api(service: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=service, timeout=10.0, trust_env=False) as client:
        yield client
