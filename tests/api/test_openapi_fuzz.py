"""schemathesis against the running service's OpenAPI document, with every check: no 5xx and no
status the document does not declare, for any generated input (valid or not)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.schemas import BaseSchema
from schemathesis.specs.openapi.checks import positive_data_acceptance

from app.local.embedded import free_port

DEV_KEY = "fuzz-dev-key"


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEADERBOARD_")}
    env |= {
        "LEADERBOARD_DEV_API_KEY": DEV_KEY,
        "LEADERBOARD_WRITE_RATE_PER_SECOND": "100000",
        "LEADERBOARD_WRITE_BURST": "100000",
        "LEADERBOARD_READ_RATE_PER_SECOND": "100000",
        "LEADERBOARD_READ_BURST": "100000",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{base}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail("the service did not start")
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def api_schema(served_url: str) -> BaseSchema:
    return schemathesis.openapi.from_url(f"{served_url}/openapi.json")


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_api_honours_its_document(
    api_schema: BaseSchema, served_url: str, mode: GenerationMode
) -> None:
    """Every operation, valid and invalid inputs, every check but one: ``positive_data_acceptance``
    expects a 2xx for every schema-valid request, and the API has rules a schema cannot state
    (``achievedAt`` within a window of the server's clock, a player not on a board is a 404, a
    reused Idempotency-Key is a 422). Those answers are declared 4xx problems; any undeclared
    status, any 5xx, any response off its schema still fails."""
    for result in api_schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=20,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: Case) -> None:  # type: ignore[type-arg]
            case.call_and_validate(
                base_url=served_url,
                headers={"Authorization": f"Bearer {DEV_KEY}"},
                excluded_checks=[positive_data_acceptance],
            )

        try:
            check()
        except Unsatisfiable:
            # No invalid input exists for an operation without parameters (/healthz, say).
            assert mode is GenerationMode.NEGATIVE
            assert not operation.path_parameters
            assert not operation.query
            assert not operation.body
