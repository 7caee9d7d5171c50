"""/metrics: requests by route template and status, DynamoDB calls, ranks and replays, and no
label that holds a player id, a board id or a raw path; the CloudWatch embedded metrics on the
request log line in production."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families
from structlog.testing import capture_logs

from app.store.tables import TableNames
from tests.conftest import Service, make_settings, serve
from tests.support import now_ms, submit

PLAYER = "player-who-must-not-be-a-label"


async def scrape(service: Service) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    response = await service.http.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def test_requests_show_under_their_route_template_and_nothing_unbounded_is_a_label(
    service: Service,
) -> None:
    before = await scrape(service)
    t = now_ms() - 1000
    first = await submit(service.http, player=PLAYER, score=10, achieved_ms=t, idempotency_key="k")
    assert first.status_code == 200
    replay = await submit(service.http, player=PLAYER, score=10, achieved_ms=t, idempotency_key="k")
    assert replay.headers["Idempotent-Replayed"] == "true"
    rank = await service.http.get(f"/v1/leaderboards/trivia/classic/alltime/players/{PLAYER}")
    assert rank.status_code == 200
    lost = await service.http.get(f"/no/such/path/{PLAYER}")
    assert lost.status_code == 404
    after = await scrape(service)
    text = (await service.http.get("/metrics")).text

    def grew(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    scores = {"route": "/v1/scores", "method": "POST", "status": "200"}
    assert grew("leaderboard_http_requests_total", **scores) == 2
    player_route = "/v1/leaderboards/{game}/{variant}/{period}/players/{player_id}"
    assert (
        grew("leaderboard_http_requests_total", route=player_route, method="GET", status="200") == 1
    )
    assert (
        grew("leaderboard_http_requests_total", route="unmatched", method="GET", status="404") == 1
    )
    assert (
        grew("leaderboard_http_request_duration_seconds_count", route="/v1/scores", method="POST")
        == 2
    )
    assert grew("leaderboard_submission_repeats_total", outcome="replayed") == 1
    assert grew("leaderboard_submissions_total", outcome="written") == 1
    assert grew("leaderboard_submissions_total", outcome="replayed") == 1
    assert grew("leaderboard_rank_answers_total", kind="exact") >= 1
    assert grew("leaderboard_dynamodb_calls_total", operation="BatchGetItem") >= 2
    assert grew("leaderboard_dynamodb_calls_total", operation="TransactWriteItems") >= 1
    assert PLAYER not in text
    assert "trivia#classic" not in text
    assert "/no/such/path" not in text


async def test_the_process_is_measured_and_no_series_is_a_creation_time(
    service: Service,
) -> None:
    samples = await scrape(service)
    names = {name for name, _ in samples}
    for process in ("process_resident_memory_bytes", "process_cpu_seconds_total"):
        assert process in names
    assert "process_open_fds" in names
    assert "python_info" in names
    assert "python_gc_collections_total" in names
    assert not [name for name in names if name.endswith("_created")]
    # Known outcomes are series from the start, at 0: a panel draws a line, not "no data".
    for outcome in ("board_busy", "throttled", "contended"):
        assert ("leaderboard_submissions_total", frozenset({("outcome", outcome)})) in samples
    assert (
        "leaderboard_request_deadlines_exceeded_total",
        frozenset({("route", "/v1/scores")}),
    ) in samples


async def test_made_up_methods_share_one_label(service: Service) -> None:
    before = await scrape(service)
    for method in ("FOO", "BAR", "PROPFIND", "BREW"):
        response = await service.http.request(method, "/v1/boards")
        assert 400 <= response.status_code < 500
    after = await scrape(service)
    methods = {
        dict(labels)["method"]
        for name, labels in after
        if name == "leaderboard_http_requests_total"
    }
    assert not methods & {"FOO", "BAR", "PROPFIND", "BREW"}
    grown = sum(
        after[key] - before.get(key, 0.0)
        for key in after
        if key[0] == "leaderboard_http_requests_total" and ("method", "other") in key[1]
    )
    assert grown == 4


async def test_in_production_the_log_line_carries_cloudwatch_embedded_metrics(
    dynamo_endpoint: str,
    table_names: TableNames,
    service: Service,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Production signs with the credential chain's keys, even on moto's endpoint: give it some.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "production-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "production-test")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    # Production refuses undefined variants unless told otherwise (decision 0028).
    settings = make_settings(
        dynamo_endpoint, table_names, environment="production", undefined_boards="allow"
    )
    async with serve(settings) as production:
        with capture_logs() as logs:
            response = await submit(production.http, player="p1", score=5)
    assert response.status_code == 200
    [line] = [entry for entry in logs if entry["event"] == "request"]
    assert line["route"] == "/v1/scores"
    assert line["server_error"] == 0
    emf = line["_aws"]
    assert isinstance(emf["Timestamp"], int)
    directive, outcome = emf["CloudWatchMetrics"]
    assert directive["Namespace"] == outcome["Namespace"] == "Leaderboard"
    assert directive["Dimensions"] == [["route"], []]
    # A submission's line counts it by outcome too; every count it names is on the line.
    assert outcome["Dimensions"] == [["outcome"]]
    assert line["outcome"] == "written"
    assert line["submissions"] == 1
    assert line["rank_exact"] == 3  # the rank after on each of its three boards
    for metric in directive["Metrics"] + outcome["Metrics"]:
        assert isinstance(line[metric["Name"]], int | float), metric
    for metric in directive["Metrics"]:
        assert metric["Name"] in line  # every metric named is a value on the line
    assert line["dynamodb_calls"] >= 2
    assert "units" not in line  # DynamoDB's own figures there, not placeholders
