"""/readyz in production-like failures: a 503 problem that names no cause, and the cause in the log
once (not once a probe), whichever it is: no credentials, the endpoint unreachable, a table
missing, access denied."""

from __future__ import annotations

import time
from collections.abc import MutableMapping
from typing import Any

import pytest
import structlog

from app.local.embedded import free_port
from app.store.tables import (
    PREVIOUS_RANK_INDEX,
    RANK_INDEX,
    TableNames,
    index_not_ready,
    rank_index_spec,
    scores_table_spec,
    snapshots_table_spec,
)
from tests.conftest import Service, make_settings, serve
from tests.faults import _PREFIX, dynamo_response, fail_first, install

PROBES = 3


async def probe(running: Service, times: int = PROBES) -> list[Any]:
    """``times`` probes of /readyz, each a 503 problem that names nothing of the cause."""
    answers = []
    for _ in range(times):
        response = await running.http.get("/readyz")
        assert response.status_code == 503, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert "Retry-After" in response.headers
        assert "the service's log says why" in response.json()["detail"]
        answers.append(response.json())
    return answers


def not_ready(logs: list[MutableMapping[str, Any]]) -> list[str]:
    return [entry["cause"] for entry in logs if entry["event"] == "not_ready"]


def assert_hidden(answers: list[Any], *words: str) -> None:
    for word in words:
        assert word not in str(answers)


async def test_a_missing_table_is_logged_once_and_the_recovery_too(
    dynamo_endpoint: str, table_names: TableNames
) -> None:
    settings = make_settings(dynamo_endpoint, table_names)
    async with serve(settings) as running:
        with structlog.testing.capture_logs() as logs:
            answers = await probe(running)
            (cause,) = not_ready(logs)
            assert "the table is missing" in cause
            assert table_names.scores in cause or table_names.snapshots in cause
            assert_hidden(answers, table_names.scores, table_names.snapshots, "ResourceNotFound")
            await running.runtime.table_admin.create_tables()
            try:
                assert (await running.http.get("/readyz")).status_code == 200
                assert (await running.http.get("/readyz")).status_code == 200
                assert [e["event"] for e in logs].count("ready_again") == 1
            finally:
                for name in (table_names.scores, table_names.snapshots):
                    await running.runtime.client.delete_table(TableName=name)


async def test_an_unreachable_endpoint_is_logged_once(table_names: TableNames) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    settings = make_settings(closed, table_names)
    async with serve(settings) as running:
        with structlog.testing.capture_logs() as logs:
            answers = await probe(running, times=2)
    (cause,) = not_ready(logs)
    assert "unreachable" in cause
    assert closed in cause
    assert_hidden(answers, closed, "127.0.0.1")


async def test_an_endpoint_refusing_connections_is_answered_at_once(
    table_names: TableNames,
) -> None:
    """The readiness check asks once, with a short timeout, instead of after botocore's backoff
    (once 2.4 to 5.9 s): a load balancer's probe learns at once."""
    settings = make_settings(f"http://127.0.0.1:{free_port()}", table_names)
    async with serve(settings) as running:
        took = []
        for _ in range(3):
            began = time.perf_counter()
            await probe(running, times=1)
            took.append(time.perf_counter() - began)
    # Connection refused comes back in milliseconds; the bound leaves a busy machine its own
    # delays and still tells one attempt from botocore's backoff (2.4 s at the least).
    assert max(took) < 2.0, took


async def test_access_denied_is_logged_once(dynamo_endpoint: str, table_names: TableNames) -> None:
    settings = make_settings(dynamo_endpoint, table_names)
    denied = dynamo_response(
        400,
        {
            "__type": _PREFIX + "AccessDeniedException",
            "message": "User: arn:aws:sts::123456789012:assumed-role/task is not authorized",
        },
    )
    async with serve(settings) as running:
        faults = install(running.runtime.probe_client, dynamo_endpoint)
        faults.rules.append(fail_first("DescribeTable", 100, lambda body: denied))
        with structlog.testing.capture_logs() as logs:
            answers = await probe(running)
    (cause,) = not_ready(logs)
    assert "access denied" in cause
    assert "123456789012" in cause
    assert_hidden(answers, "123456789012", "AccessDenied")


async def test_no_credentials_in_production_is_logged_once(
    table_names: TableNames, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    # No files to find keys in, and no instance metadata to ask (it would wait on the network).
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    settings = make_settings("unused", table_names, environment="production")
    settings = settings.model_copy(update={"dynamodb_endpoint": None})
    async with serve(settings) as running:
        with structlog.testing.capture_logs() as logs:
            answers = await probe(running)
    (cause,) = not_ready(logs)
    assert "no AWS credentials found" in cause
    assert_hidden(answers, "credentials")


async def test_a_table_from_before_rank_index_v2_is_not_ready_until_create_tables_adds_it(
    dynamo_endpoint: str, table_names: TableNames
) -> None:
    """A Scores table with only the first RankIndex (decision 0025): not ready, saying which index
    is missing and what adds it; ``create-tables`` adds it, and then the service is ready."""
    settings = make_settings(dynamo_endpoint, table_names)
    async with serve(settings) as running:
        client = running.runtime.client
        earlier = scores_table_spec(table_names.scores)
        earlier["GlobalSecondaryIndexes"] = [rank_index_spec(previous=True)]
        await client.create_table(**earlier)
        await client.create_table(**snapshots_table_spec(table_names.snapshots))
        try:
            with structlog.testing.capture_logs() as logs:
                answers = await probe(running)
                (cause,) = not_ready(logs)
            assert f"index {RANK_INDEX} is missing" in cause
            assert "leaderboard create-tables adds it" in cause
            assert_hidden(answers, RANK_INDEX)
            report = await running.runtime.table_admin.create_tables()
            assert report.index_added == [f"{table_names.scores} ({RANK_INDEX})"]
            assert (await running.http.get("/readyz")).status_code == 200
            described = await client.describe_table(TableName=table_names.scores)
            names = {i["IndexName"] for i in described["Table"]["GlobalSecondaryIndexes"]}
            assert names == {PREVIOUS_RANK_INDEX, RANK_INDEX}  # the first is the operator's to drop
            again = await running.runtime.table_admin.create_tables()
            assert again.index_added == []
        finally:
            for name in (table_names.scores, table_names.snapshots):
                await client.delete_table(TableName=name)


@pytest.mark.parametrize(
    ("index", "says"),
    [
        ({"IndexName": RANK_INDEX, "IndexStatus": "ACTIVE"}, None),
        ({"IndexName": RANK_INDEX}, None),
        (
            {"IndexName": RANK_INDEX, "IndexStatus": "CREATING", "Backfilling": True},
            f"index {RANK_INDEX} is CREATING (filling from the table)",
        ),
        (
            {"IndexName": RANK_INDEX, "IndexStatus": "ACTIVE", "Backfilling": True},
            f"index {RANK_INDEX} is ACTIVE (filling from the table)",
        ),
        ({"IndexName": PREVIOUS_RANK_INDEX, "IndexStatus": "ACTIVE"}, f"{RANK_INDEX} is missing"),
    ],
)
def test_the_rank_index_must_be_there_and_filled(index: dict[str, Any], says: str | None) -> None:
    found = index_not_ready({"GlobalSecondaryIndexes": [index]})
    assert found is None if says is None else (found is not None and says in found)
