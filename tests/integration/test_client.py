"""The DynamoDB client the composition root opens: whose credentials it signs with (the default
chain's in production, whatever the endpoint), and a connection pool in step with the bound on
calls in flight."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import HTTPClientError

from app.bootstrap import open_runtime
from app.errors import Unavailable
from app.store.tables import TableNames
from tests.conftest import make_settings

PROFILE_KEY_ID = "AKIAPROFILEINTHECHAIN"


@pytest.fixture
def chain_with_a_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The default credential chain finds one thing: a default profile in a credentials file (as
    on ECS it finds the task role's, through the container provider, never AWS_ACCESS_KEY_ID)."""
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    credentials = tmp_path / "credentials"
    credentials.write_text(
        f"[default]\naws_access_key_id = {PROFILE_KEY_ID}\naws_secret_access_key = profile-secret\n"
    )
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


async def test_production_signs_with_the_chain_s_credentials_on_an_explicit_endpoint(
    dynamo_endpoint: str, table_names: TableNames, chain_with_a_profile: None
) -> None:
    """A VPC endpoint URL in production is still AWS: the task role signs, not dummy keys."""
    settings = make_settings(dynamo_endpoint, table_names, environment="production")
    signed: list[str] = []

    def record(request: Any, **_: Any) -> None:
        signed.append(request.headers["Authorization"].decode())

    async with open_runtime(settings) as runtime:
        runtime.client.meta.events.register("before-send.dynamodb", record)
        await runtime.client.list_tables(Limit=1)  # moto takes any signature
    (authorization,) = signed
    assert f"Credential={PROFILE_KEY_ID}/" in authorization


async def test_development_signs_with_dummy_credentials_on_its_endpoint(
    dynamo_endpoint: str, table_names: TableNames, chain_with_a_profile: None
) -> None:
    """Outside production the endpoint is DynamoDB Local or moto: keys found in the chain are not
    sent to it."""
    settings = make_settings(dynamo_endpoint, table_names)
    signed: list[str] = []

    def record(request: Any, **_: Any) -> None:
        signed.append(request.headers["Authorization"].decode())

    async with open_runtime(settings) as runtime:
        runtime.client.meta.events.register("before-send.dynamodb", record)
        await runtime.client.list_tables(Limit=1)
    (authorization,) = signed
    assert "Credential=local/" in authorization


@pytest.mark.parametrize("bound", [1, 200, 1024])
async def test_the_connection_pool_holds_every_call_in_flight(
    dynamo_endpoint: str, table_names: TableNames, bound: int
) -> None:
    """A call let through the bound on calls in flight finds a connection: past the pool it would
    wait for one, with no timeout."""
    settings = make_settings(dynamo_endpoint, table_names, dynamodb_max_in_flight=bound)
    async with open_runtime(settings) as runtime:
        config: Any = runtime.client.meta.config  # botocore sets its options at run time
        assert config.max_pool_connections == bound


async def test_work_that_outlives_the_runtime_makes_no_call(
    dynamo_endpoint: str, table_names: TableNames
) -> None:
    """A load a cancelled request left running can reach DynamoDB after the service stopped: it
    fails as unavailable, without a call, where a call on the closed client would open an HTTP
    session that nobody closes."""
    settings = make_settings(dynamo_endpoint, table_names)
    sent: list[str] = []

    def record(request: Any, **_: Any) -> None:
        sent.append(request.url)

    async with open_runtime(settings, create_tables=True) as runtime:
        runtime.client.meta.events.register("before-send.dynamodb", record)
        standings = runtime.stores.standings
        assert await standings.read_standing("trivia#classic#alltime", "ann") is None
    made = len(sent)
    with pytest.raises(Unavailable, match="the service is stopping"):
        await standings.read_standing("trivia#classic#alltime", "ann")
    assert len(sent) == made
    # And a call on the closed client itself fails, saying so, opening nothing (botocore
    # wraps the guard's error as the HTTP client's).
    with pytest.raises(HTTPClientError, match="a client that has closed"):
        await runtime.client.list_tables(Limit=1)
