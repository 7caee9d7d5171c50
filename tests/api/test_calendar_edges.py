"""Periods at the calendar's edges: every period string is a 200 or a 4xx problem on every endpoint
that takes one, with the longest retention and lateness the settings allow."""

from __future__ import annotations

import pytest

from app.bootstrap import Runtime
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, SUBMIT_KEY, make_settings, serve

EDGES = [
    "day:9999-12-31",
    "week:9999-W52",
    "day:0001-01-01",
    "week:0001-W01",
    "day:1969-12-31",
    "day:9900-01-01",
    # The first and last the service takes, and their weeks.
    "day:1970-01-01",
    "week:1970-W01",
    "day:9899-12-31",
    "week:9899-W52",
]
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


def endpoints(period: str) -> list[tuple[str, str, dict[str, str], bytes | None]]:
    board = f"/v1/leaderboards/trivia/classic/{period}"
    seed = b"playerId,score,achievedAt\nann,1,2026-11-01T10:00:00Z\n"
    return [
        ("GET", board, {}, None),
        ("GET", f"{board}/players/ann", {}, None),
        ("GET", f"{board}/players/ann/around", {}, None),
        ("GET", f"{board}/snapshots", {}, None),
        ("GET", f"{board}/snapshots/2026-11-30T00:00:00.000Z", {}, None),
        ("POST", f"{board}/snapshots", ADMIN, None),
        ("POST", f"{board}/reconcile", ADMIN, None),
        ("POST", f"{board}/seed", {**ADMIN, "Content-Type": "text/csv"}, seed),
    ]


async def test_every_period_endpoint_answers_200_or_a_problem_at_the_calendar_s_edges(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(
        dynamo_endpoint,
        table_names,
        retention_days=3650,
        max_lateness_seconds=30 * 86400,
        request_deadline_seconds=0.5,  # the seed's grace period
    )
    async with serve(settings) as running:
        for period in EDGES:
            for method, path, headers, body in endpoints(period):
                response = await running.http.request(method, path, headers=headers, content=body)
                where = f"{method} {path}: {response.text}"
                assert response.status_code < 500, where
                if response.status_code >= 400:
                    assert response.headers["content-type"] == "application/problem+json", where
                    assert response.json()["detail"], where
                if "9999" in period or "0001" in period or "1969" in period or "9900" in period:
                    assert response.status_code == 422, where


@pytest.mark.parametrize(
    "achieved_at",
    ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59.999-01:00", "1969-12-31T23:59:59Z"],
)
async def test_a_submission_achieved_at_the_calendar_s_edges_is_a_422(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime, achieved_at: str
) -> None:
    settings = make_settings(dynamo_endpoint, table_names)
    async with serve(settings) as running:
        response = await running.http.post(
            "/v1/scores",
            json={
                "playerId": "ann",
                "score": 1,
                "game": "trivia",
                "variant": "classic",
                "achievedAt": achieved_at,
            },
            headers={"Authorization": f"Bearer {SUBMIT_KEY}", "Idempotency-Key": "edge"},
        )
    assert response.status_code == 422, response.text


async def test_a_seed_row_achieved_at_the_calendar_s_edges_is_a_line_problem(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names)
    rows = "playerId,score,achievedAt\nann,1,0001-01-01T00:00:00+01:00\nbob,1,9999-12-31T23:59:59-01:00\n"
    async with serve(settings) as running:
        response = await running.http.post(
            "/v1/leaderboards/trivia/classic/alltime/seed",
            content=rows.encode(),
            headers={**ADMIN, "Content-Type": "text/csv"},
        )
    assert response.status_code == 422, response.text
    assert [e["line"] for e in response.json()["errors"]] == [2, 3]
