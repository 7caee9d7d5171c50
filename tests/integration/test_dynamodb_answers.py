"""What DynamoDB answers and moto never does, one answer at a time in DynamoDB's wire shape
(``tests.faults``), against the work each once broke: a plain write meeting a transaction, a
response lost after the write was applied (botocore resends it), a transaction cancelled for
throughput or found invalid, a page that stops exactly at its ``Limit``, and RankIndex lagging its
table. Each test here failed before its fix."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from aiobotocore.awsrequest import AioAWSResponse

from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.periods import Board
from app.domain.seed_file import parse_seed_text
from app.domain.storage_keys import coarse_pk, fine_pk
from app.services import work as retries
from app.services.api_keys import digest_of
from app.services.operations import ReconcileReport
from app.settings import Settings
from tests.conftest import ADMIN_KEY, Service
from tests.faults import (
    Profile,
    cancelled_at,
    fail_first,
    faithful,
    install,
    item_busy,
)
from tests.integration.test_erasure import erase
from tests.integration.test_reconcile import (
    SCORES,
    add_to_counter,
    submitted_board,
)
from tests.integration.test_seeding import (
    assert_counters_match_board,
    csv_text,
    policy,
    seeding,
)
from tests.support import now_ms, operations, scores_items, submit

BOARD = Board.from_id("trivia#classic#alltime")
LAYOUT = BucketLayout()
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


@pytest.fixture(autouse=True)
def _no_backoff_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Operator retries as they are, without their waits: what a retry does is under test."""
    monkeypatch.setattr(retries, "backoff_s", lambda *_a, **_k: 0.0)


def _counters(body: dict[str, object]) -> bool:
    key = body.get("Key")
    return isinstance(key, dict) and str(key["playerId"].get("S", "")).startswith("hist#")


async def _drifted(service: Service, runtime: Runtime) -> None:
    """A submitted board whose counters drifted in two places."""
    await submitted_board(service)
    c_bucket, _ = LAYOUT.slot_of(SCORES["c"])
    f_bucket, f_slot = LAYOUT.slot_of(SCORES["f"])
    await add_to_counter(runtime, coarse_pk(BOARD.board_id, 0), c_bucket, 3)
    await add_to_counter(runtime, fine_pk(BOARD.board_id, f_bucket), f_slot, 2)


async def _reconcile(runtime: Runtime) -> ReconcileReport:
    """``reconcile --apply``, with no gap between the recount's passes."""
    definition = runtime.definitions.default
    return await operations(runtime, pass_gap_s=0).reconcile(BOARD, definition, apply=True)


def _tasks() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if not t.done()}


# ---- a plain write meeting a transaction in flight ------------------------------------------


async def test_reconcile_retries_a_repair_a_transaction_holds_and_repairs(
    service: Service, runtime: Runtime, dynamo_endpoint: str
) -> None:
    await _drifted(service, runtime)
    faults = install(runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("UpdateItem", 3, lambda _: item_busy(), matching=_counters))
    report = await _reconcile(runtime)
    assert len(report.differences) == 2
    assert (report.repaired, report.skipped, report.unwritten) == (report.differences, [], [])
    assert await assert_counters_match_board(runtime, BOARD.board_id) == len(SCORES)


async def test_a_repair_never_let_through_is_reported_unwritten_and_nothing_is_left_running(
    service: Service, runtime: Runtime, dynamo_endpoint: str
) -> None:
    await _drifted(service, runtime)
    faults = install(runtime.client, dynamo_endpoint)
    stuck = fine_pk(BOARD.board_id, LAYOUT.slot_of(SCORES["f"])[0])
    faults.rules.append(
        fail_first(
            "UpdateItem",
            1000,
            lambda _: item_busy(),
            matching=lambda body: _counters(body) and body["Key"]["playerId"]["S"] == stuck,
        )
    )
    before = _tasks()
    report = await _reconcile(runtime)
    assert _tasks() <= before  # no write of the run is still going
    assert [d.cell.slot is None for d in report.repaired] == [True]
    assert [d.cell.slot is not None for d in report.unwritten] == [True]
    assert report.skipped == []


async def test_a_seed_whose_counter_writes_meet_transactions_still_counts_the_board(
    runtime: Runtime, settings: Settings, dynamo_endpoint: str
) -> None:
    faults = install(runtime.client, dynamo_endpoint)
    faults.rules.append(fail_first("UpdateItem", 4, lambda _: item_busy(), matching=_counters))
    rows = [(f"s{i}", 10 * i, now_ms() - 60_000) for i in range(12)]
    report = await seeding(runtime, policy(settings)).seed(
        BOARD, parse_seed_text(csv_text(rows), board=BOARD, now=datetime.now(UTC))
    )
    assert (report.rows_written, report.counter_conflicts, report.counters_unwritten) == (12, 0, 0)
    assert report.lease_released
    assert await assert_counters_match_board(runtime, BOARD.board_id) == 12


# ---- a response lost after the write was applied: botocore resends it ----------------------


async def test_a_seeder_whose_lease_answer_was_lost_is_not_refused_by_its_own_lease(
    runtime: Runtime, settings: Settings, dynamo_endpoint: str
) -> None:
    faults = install(runtime.client, dynamo_endpoint)
    faults.lose["PutItem"] = 1  # the first: taking the lease
    rows = [(f"s{i}", i, now_ms() - 60_000) for i in range(5)]
    report = await seeding(runtime, policy(settings)).seed(
        BOARD, parse_seed_text(csv_text(rows), board=BOARD, now=datetime.now(UTC))
    )
    assert faults.seen["PutItem"] >= 2  # the put, and botocore's resend of it
    assert (report.rows_created, report.lease_released) == (5, True)


async def test_seeded_rows_whose_answers_were_lost_are_counted_as_written(
    runtime: Runtime, settings: Settings, dynamo_endpoint: str
) -> None:
    faults = install(runtime.client, dynamo_endpoint)
    faults.lose["UpdateItem"] = 3  # three of the rows (the lease and registry are puts)
    rows = [(f"s{i}", i, now_ms() - 60_000) for i in range(6)]
    report = await seeding(runtime, policy(settings)).seed(
        BOARD, parse_seed_text(csv_text(rows), board=BOARD, now=datetime.now(UTC))
    )
    assert (report.rows_created, report.rows_skipped) == (6, 0)


async def test_a_repair_whose_answer_was_lost_is_reported_repaired(
    service: Service, runtime: Runtime, dynamo_endpoint: str
) -> None:
    await _drifted(service, runtime)
    faults = install(runtime.client, dynamo_endpoint)
    faults.lose["UpdateItem"] = 2
    report = await _reconcile(runtime)
    assert (report.repaired, report.skipped) == (report.differences, [])
    assert await assert_counters_match_board(runtime, BOARD.board_id) == len(SCORES)


async def test_a_lease_release_whose_answer_was_lost_is_released(
    runtime: Runtime, settings: Settings, dynamo_endpoint: str
) -> None:
    faults = install(runtime.client, dynamo_endpoint)
    faults.lose["DeleteItem"] = 1  # nothing else a small seed deletes: the release
    rows = [(f"s{i}", i, now_ms() - 60_000) for i in range(3)]
    report = await seeding(runtime, policy(settings)).seed(
        BOARD, parse_seed_text(csv_text(rows), board=BOARD, now=datetime.now(UTC))
    )
    assert faults.seen["DeleteItem"] >= 2
    assert report.lease_released
    assert await runtime.stores.leases.read_lease(BOARD.board_id) is None


async def test_a_snapshot_whose_answer_was_lost_is_written_once_and_erasure_scrubs_it(
    service: Service, runtime: Runtime, dynamo_endpoint: str
) -> None:
    await submitted_board(service)
    faults = install(runtime.client, dynamo_endpoint)
    faults.lose["PutItem"] = 1  # the snapshot's (its memberships go in a batch)
    s = runtime.stores
    taken = await runtime.leaderboard.operations.snapshot(
        BOARD, runtime.definitions.default, now=datetime.now(UTC), top=100
    )
    listed = await s.snapshots.list_snapshots(BOARD.board_id, limit=10)
    assert [x.taken_at for x in listed] == [taken.taken_at]  # one snapshot, not two
    members = [
        i["playerId"]["S"]
        for i in await scores_items(runtime)
        if i["leaderboardId"]["S"].startswith("snap#")
    ]
    assert sorted(members) == sorted(SCORES)
    erased = await service.http.delete("/v1/players/d", headers=ADMIN)
    assert erased.status_code == 200, erased.text
    assert erased.json()["removed"]["snapshots"] == 1
    kept = await s.snapshots.get_snapshot(BOARD.board_id, taken.taken_at)
    assert kept is not None
    assert "d" not in [e.player_id for e in kept.entries]


async def test_an_api_key_whose_answer_was_lost_is_stored_as_asked(
    runtime: Runtime, dynamo_endpoint: str
) -> None:
    faults = install(runtime.client, dynamo_endpoint)
    faults.lose["PutItem"] = 1
    digest = digest_of("a-key-made-once-of-enough-length-1234")
    stored = await runtime.stores.api_keys.create_key(digest, "studio", ["submit:trivia"])
    assert stored.name == "studio"
    assert [k.digest for k in await runtime.stores.api_keys.list_keys()] == [digest]


async def test_an_erasure_whose_answers_were_lost_reports_what_it_removed(
    service: Service, runtime: Runtime, dynamo_endpoint: str
) -> None:
    for score in (5, 9):
        response = await submit(service.http, player="ada", score=score, rankDelta=False)
        assert response.status_code == 200, response.text
    faults = install(runtime.client, dynamo_endpoint)
    faults.lose["DeleteItem"] = 2  # the two idempotency records' deletes
    report = await erase(runtime, "ada")
    assert (report.boards, report.idempotency_records) == (3, 2)
    assert [i for i in await scores_items(runtime) if i["playerId"]["S"] == "ada"] == []


async def test_an_erasure_whose_delete_committed_unseen_then_was_throttled_reports_it(
    service: Service, runtime: Runtime, dynamo_endpoint: str
) -> None:
    response = await submit(service.http, player="ada", score=5, rankDelta=False)
    assert response.status_code == 200, response.text
    faults = install(runtime.client, dynamo_endpoint)
    faults.lose_responses = 1  # the first standing's delete commits; its answer is lost
    seen: list[str] = []
    throttled: list[str] = []

    def resend_throttled(operation: str, body: dict[str, Any]) -> AioAWSResponse | None:
        """botocore's resend of that delete (a token seen again) is throttled."""
        if operation != "TransactWriteItems":
            return None
        token = body["ClientRequestToken"]
        resent = token in seen
        seen.append(token)
        if resent and not throttled:
            throttled.append(token)
            return cancelled_at(body, "ThrottlingError", index=1)
        return None

    faults.rules.append(resend_throttled)
    report = await erase(runtime, "ada")
    # One delete sent, its answer lost, resent and throttled; not sent again, but counted.
    assert len(throttled) == 1
    assert seen.count(throttled[0]) == 2
    assert report.boards == 3
    assert [i for i in await scores_items(runtime) if i["playerId"]["S"] == "ada"] == []


# ---- throttling inside a transaction is not contention ---------------------------------------


def _metric(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))  # as exposed
    found = re.search(rf"^{name}\{{{wanted}\}} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


@pytest.mark.parametrize("reason", ["ThrottlingError", "ProvisionedThroughputExceeded"])
async def test_a_transaction_cancelled_for_throughput_is_a_503_throttled_at_once(
    service: Service, dynamo_endpoint: str, reason: str
) -> None:
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.rules.append(
        fail_first("TransactWriteItems", 1000, lambda body: cancelled_at(body, reason, index=1))
    )
    before = (await service.http.get("/metrics")).text
    response = await submit(service.http, player="p1", score=42, rankDelta=False)
    assert response.status_code == 503, response.text
    assert response.json()["type"].endswith("/throttled")
    assert "throttled" in response.json()["detail"]
    assert int(response.headers["Retry-After"]) >= 1
    assert faults.seen["TransactWriteItems"] == 1  # not retried as contention
    after = (await service.http.get("/metrics")).text
    for name, labels in [
        ("leaderboard_dynamodb_failures_total", {"kind": "throttled"}),
        (
            "leaderboard_transaction_cancellations_total",
            {"writer": "submission", "reason": "throttled"},
        ),
    ]:
        assert _metric(after, name, **labels) == _metric(before, name, **labels) + 1


async def test_a_transaction_dynamodb_found_invalid_is_not_retried(
    service: Service, dynamo_endpoint: str
) -> None:
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.rules.append(
        fail_first("TransactWriteItems", 1000, lambda body: cancelled_at(body, "ValidationError"))
    )
    response = await submit(service.http, player="p1", score=42, rankDelta=False)
    assert response.status_code == 500
    assert faults.seen["TransactWriteItems"] == 1


# ---- a page that stops at its Limit ----------------------------------------------------------


async def test_a_top_page_ending_the_board_exactly_has_no_cursor(service: Service) -> None:
    for i, player in enumerate("abcd"):
        response = await submit(service.http, player=player, score=10 + i, rankDelta=False)
        assert response.status_code == 200, response.text
    whole = await service.http.get("/v1/leaderboards/trivia/classic/alltime?limit=4")
    assert whole.json()["nextCursor"] is None
    first = await service.http.get("/v1/leaderboards/trivia/classic/alltime?limit=2")
    second = await service.http.get(
        "/v1/leaderboards/trivia/classic/alltime",
        params={"limit": 2, "cursor": first.json()["nextCursor"]},
    )
    assert [e["playerId"] for e in second.json()["entries"]] == ["b", "a"]
    assert second.json()["nextCursor"] is None


# ---- RankIndex lagging its table -------------------------------------------------------------


@pytest.fixture
def held_index(dynamo_endpoint: str) -> Iterator[None]:
    """RankIndex (and eventually consistent reads) holding every write back until settled."""
    faithful.use(Profile(lag_s=3600), endpoint=dynamo_endpoint)
    yield
    faithful.use(Profile(), endpoint=dynamo_endpoint)


async def test_a_latest_player_whose_score_fell_is_never_counted_ahead_of_themselves(
    service: Service, held_index: None
) -> None:
    defined = await service.http.put(
        "/v1/games/trivia/variants/classic", json={"operator": "latest"}, headers=ADMIN
    )
    assert defined.status_code == 200, defined.text
    t = now_ms() - 60_000
    for player, score, at in [("p", 50, t), ("q", 40, t)]:
        response = await submit(service.http, player=player, score=score, achieved_ms=at)
        assert response.status_code == 200, response.text
    assert faithful.view is not None
    await faithful.view.settle()
    fell = await submit(service.http, player="p", score=30, achieved_ms=t + 1)
    assert fell.status_code == 200, fell.text
    # The index still shows p at 50, ahead of the 30 p now holds: p must not count it.
    read = await service.http.get("/v1/leaderboards/trivia/classic/alltime/players/p")
    rank = read.json()["rank"]
    assert rank == {**rank, "kind": "exact", "rank": 2}
