"""schemathesis against the running service's OpenAPI document, with every check: no 5xx and no
status the document does not declare, for any generated input (valid or not)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import Case, GenerationMode
from schemathesis.schemas import BaseSchema
from schemathesis.specs.openapi.checks import negative_data_rejection

from app.domain.calendar import UTC_CALENDAR
from app.domain.clock import iso_ms, parse_iso_ms, to_ms
from app.main import create_app
from app.settings import Settings
from tests.served import ServiceExited, clean_environment, serve

DEV_KEY = "fuzz-dev-key"
BATCH = "/v1/scores:batch"
VARIANT = "/v1/games/{game}/variants/{variant}"


@pytest.fixture(scope="module")
def served_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("serve")
    env = clean_environment() | {
        # Not the user's own: a `leaderboard serve` they run meanwhile keeps its record.
        "LEADERBOARD_STATE_FILE": str(directory / "embedded.json"),
        "LEADERBOARD_DEV_API_KEY": DEV_KEY,
        "LEADERBOARD_WRITE_RATE_PER_SECOND": "100000",
        "LEADERBOARD_WRITE_BURST": "100000",
        "LEADERBOARD_READ_RATE_PER_SECOND": "100000",
        "LEADERBOARD_READ_BURST": "100000",
        # A seed waits out the submissions' deadline before writing: keep it short here, but
        # long enough for a read on a busy two-core machine (2 s once cut a standings read).
        "LEADERBOARD_REQUEST_DEADLINE_SECONDS": "5",
    }
    try:
        with serve(directory, env, ready_timeout_s=60) as base:
            yield base
    except ServiceExited as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def api_schema(served_url: str) -> BaseSchema:
    return schemathesis.openapi.from_url(f"{served_url}/openapi.json")


def valid_in_time(case: Case) -> None:  # type: ignore[type-arg]
    """What a schema cannot say of a valid request: when it happened, that its key is new, that
    a dated period or a snapshot's time is one the calendar has (the patterns admit day:2026-02-31),
    that a cursor
    is one the service signed (so a valid request starts at the first page), that a seed body
    is a file of rows in the board's period, that a group board with ranks names at most 20, and
    that an entry's metadata takes at most 256 bytes as compact JSON."""
    if case.query:
        case.query.pop("cursor", None)
    period = (case.path_parameters or {}).get("period")
    if period is not None:
        period = unquote(period)  # generated path parameters come percent-encoded
        try:
            UTC_CALENDAR.parse(period, now=datetime.now(UTC))
        except ValueError:
            # No generated variant has seasons: a season period is a 404 of its own.
            kind = period.partition(":")[0]
            case.path_parameters["period"] = "alltime" if kind == "season" else kind
    taken_at = (case.path_parameters or {}).get("snapshot_taken_at")
    if taken_at is not None:
        try:
            parse_iso_ms(unquote(taken_at))
        except ValueError:
            case.path_parameters["snapshot_taken_at"] = iso_ms(to_ms(datetime.now(UTC)))
    if case.operation.path.endswith("/seed"):
        # A grace period is a wait (up to 600 s, as asked): the fuzz asks for a second at most.
        if case.query and "graceSeconds" in case.query:
            case.query["graceSeconds"] = min(1.0, float(case.query["graceSeconds"]))
        # A seed body is a file in a format (CSV or JSON lines), which the schema names as text,
        # of rows within the board's period: the current one.
        period = unquote(case.path_parameters["period"])
        case.path_parameters["period"] = period.partition(":")[0]
        moment = datetime.now(UTC) - timedelta(seconds=1)
        row = {
            "playerId": f"p{uuid.uuid4().hex[:8]}",
            "score": 1,
            "achievedAt": iso_ms(to_ms(moment)),
        }
        if case.media_type == "text/csv":
            case.body = "playerId,score,achievedAt\n" + ",".join(map(str, row.values())) + "\n"
        else:
            case.body = json.dumps(row) + "\n"
    _valid_webhook(case)
    if isinstance(case.body, dict):
        _valid_submission(case.body)
        _valid_batch(case.body)
        _valid_bounds(case)
    if case.query and str(case.query.get("withRank")).lower() == "true" and "ids" in case.query:
        # At most 20 ids with withRank, a bound on one parameter set by another.
        case.query["ids"] = ",".join(str(case.query["ids"]).split(",")[:20])
    if case.headers and "Idempotency-Key" in case.headers:
        case.headers["Idempotency-Key"] = uuid.uuid4().hex


def _valid_webhook(case: Case) -> None:  # type: ignore[type-arg]
    """A webhook URL's host must resolve to an address a delivery may reach (no schema says so):
    loopback, which the fuzz's service (not in production) takes."""
    if case.operation.path.endswith("/webhook") and isinstance(case.body, dict):
        case.body["url"] = "http://127.0.0.1:9/hooks/leaderboard"


def _valid_submission(body: dict[str, Any]) -> None:
    """A submission's time is now, and its metadata at most 256 bytes as compact JSON (a bound in
    bytes, which no schema says)."""
    if "achievedAt" in body:
        body["achievedAt"] = iso_ms(to_ms(datetime.now(UTC)) - 1000)
    metadata = body.get("metadata")
    if metadata is not None and len(json.dumps(metadata, separators=(",", ":"))) > 256:
        body["metadata"] = {}


def _valid_bounds(case: Case) -> None:  # type: ignore[type-arg]
    """A definition's ``scoreMax`` is at least its ``scoreMin`` (a rule between two fields, which
    no schema states); and a variant given bounds is one no generated submission names, since a
    valid submission's score may lie outside them (a 422, which is right there)."""
    body = case.body
    if case.operation.path != VARIANT or case.method.upper() != "PUT" or not isinstance(body, dict):
        return
    _valid_calendar(body)
    # A league's rules bind tiers to cohortSize, periods and maxEntrants, which no schema
    # states: tests/api/test_leagues.py and tests/unit/test_leagues.py test them.
    body.pop("tiers", None)
    low, high = body.get("scoreMin"), body.get("scoreMax")
    # Integers, or numbers written as floats (48692348326.0), as JSON Schema's integer admits.
    if isinstance(low, int | float) and isinstance(high, int | float) and low > high:
        body["scoreMin"], body["scoreMax"] = high, low
    if low is not None or high is not None:
        case.path_parameters["variant"] = f"bounded-{uuid.uuid4().hex[:8]}"


def _valid_calendar(body: dict[str, Any]) -> None:
    """A zone the IANA database holds, and seasons that neither overlap nor end before they
    start (facts no schema states); the season period only with seasons, and seasons only with
    it where periods are named (a rule between two fields)."""
    if "timeZone" in body:
        body["timeZone"] = "Europe/Paris"
    if body.get("seasons"):
        body["seasons"] = [
            {"id": "s1", "startsAt": "2030-01-01T00:00:00Z", "endsAt": "2030-02-01T00:00:00Z"}
        ]
    periods = body.get("periods")
    if isinstance(periods, list):
        with_seasons = bool(body.get("seasons"))
        if with_seasons and "season" not in periods:
            body["seasons"] = []
        if not with_seasons and "season" in periods:
            body["periods"] = [p for p in periods if p != "season"] or ["alltime"]


def _invalid_items_refused_alone(ctx: Any, response: Any, case: Case) -> bool | None:  # type: ignore[type-arg]
    """A batch holding a submission the schema refuses may be refused whole (the usual check) or
    answered with that submission refused in its own result, as POST /v1/scores would answer it
    alone (decision 0034)."""
    if response.status_code == 200:
        statuses = [result["status"] for result in response.json()["results"]]
        if any(400 <= status < 500 for status in statuses):
            return None
    result: bool | None = negative_data_rejection(ctx, response, case)
    return result


def _valid_batch(body: dict[str, Any]) -> None:
    """A batch's items: each a valid submission, each with a key of its own; at most 3 of them,
    since each is most likely a new game's first submission, five round trips on a backend that
    serves one call at a time (a hundred would take the batch past its 5 s deadline)."""
    items = body.get("submissions")
    if not isinstance(items, list):
        return
    del items[3:]
    for item in items:
        if isinstance(item, dict):
            _valid_submission(item)
            item["idempotencyKey"] = uuid.uuid4().hex


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_api_honours_its_document(
    api_schema: BaseSchema, served_url: str, mode: GenerationMode
) -> None:
    """Every operation, valid and invalid inputs, every check at its defaults: no 5xx, no status
    or body off the document, and a schema-valid request is accepted. Two rules no schema can
    state are met by the valid inputs (``valid_in_time``): the clock, the calendar, the cursor's
    signature, a seed file's format, a grace period short enough to wait for, and bounds in
    order."""
    for result in api_schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]
        # A valid seed waits out the request deadline (5 s here) and a reconcile lets the index
        # settle between its two counts: seconds each, so fewer examples.
        slow = operation.path.endswith(("/seed", "/reconcile"))
        # A batch's every item is a submission, most to a game never seen: fewer examples.
        examples = 4 if slow else 10 if operation.path == BATCH else 20

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: Case) -> None:  # type: ignore[type-arg]
            if mode is GenerationMode.POSITIVE:
                valid_in_time(case)
            headers = {"Authorization": f"Bearer {DEV_KEY}"}
            if mode is GenerationMode.NEGATIVE and "Authorization" not in (case.headers or {}):
                headers = {}  # the invalid part of this request is its missing key
            if case.operation.path == BATCH and mode is GenerationMode.NEGATIVE:
                # The batch answers a violating item in that item's result, not with its status.
                case.call_and_validate(
                    base_url=served_url,
                    headers=headers,
                    timeout=30,
                    excluded_checks=[negative_data_rejection],
                    additional_checks=[_invalid_items_refused_alone],
                )
                return
            case.call_and_validate(base_url=served_url, headers=headers, timeout=30)

        try:
            check()
        except Unsatisfiable:
            # No invalid input exists for an operation without parameters (/healthz, say).
            assert mode is GenerationMode.NEGATIVE
            assert not operation.path_parameters
            assert not operation.query
            assert not operation.body


_NOT_JSON_SCHEMA = {"ge", "gt", "le", "lt", "min_length", "max_length"}


def _keywords(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            if key != "properties":  # property names are not keywords
                yield from _keywords(value)
            else:
                for schema in value.values():
                    yield from _keywords(schema)
    elif isinstance(node, list):
        for value in node:
            yield from _keywords(value)


def test_the_document_states_bounds_in_json_schema_words() -> None:
    """A bound written as pydantic's ``ge`` is invisible to every client and fuzzer."""
    document = create_app(Settings(dynamodb_endpoint="http://127.0.0.1:1")).openapi()
    assert not _NOT_JSON_SCHEMA & set(_keywords(document))
    body = document["paths"]["/v1/scores"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/ScoreSubmission"}
    submission = document["components"]["schemas"]["ScoreSubmission"]
    score = submission["properties"]["score"]
    assert (score["minimum"], score["exclusiveMaximum"]) == (0, 10**12)
    # The reserved game names are the storage's: said in words, refused with a 422, not listed.
    assert "reserved" not in submission["properties"]["game"]
    assert "refused" in submission["properties"]["game"]["description"]
