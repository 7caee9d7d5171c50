"""Joins and first-submission placements (decision 0039) under DynamoDB's unkind answers, as
``tests.faults`` gives them: throttling (errors botocore retries, transactions cancelled for
throughput, which it does not), responses lost after the call was applied (botocore resends the
call, with the same ``ClientRequestToken``), transactions meeting each other on the board's one
count (``TransactionConflict``) and items held by a transaction just applied. Game servers
retry a 503 after its ``Retry-After``, as told to. What the tests check afterwards they read
quietly (the table as it is): every seat handed out once, densely, none lost, no player placed
twice, and each request told whether it placed its player (201) or not (409 full)."""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest
from aiobotocore.awsrequest import AioAWSResponse
from botocore.retries.standard import ExponentialBackoff

from app.bootstrap import Runtime
from app.domain.storage_keys import placement_sk
from tests.api.test_definitions import define
from tests.api.test_entrants import join
from tests.conftest import Service
from tests.faults import (
    Faithful,
    Faults,
    InFlightItems,
    Profile,
    cancelled_at,
    faithful,
    install,
)
from tests.support import scores_items, submit

BOARD_ID = "trivia#classic#alltime"
UNKIND = Profile(throttle=0.08, lose=0.1, hold_s=0.02, seed=45)
"""Rates high enough that every fault strikes in a few dozen transactions; no lag (placements
are read strongly, and the lag is not what is under test here)."""


@pytest.fixture
def unkind(dynamo_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Faithful]:
    """``UNKIND`` for this test, with botocore's retries as configured but not their waits."""
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda _self, _context: 0.01)
    faithful.use(UNKIND, endpoint=dynamo_endpoint)
    yield faithful
    faithful.use(Profile(), endpoint=dynamo_endpoint)


async def retried(send: Callable[[], Awaitable[httpx.Response]]) -> list[httpx.Response]:
    """A game server's request, sent again after ``Retry-After`` (at most 0.2 s here) while it
    is a 503 or a 409 request-in-flight, at most 20 times: every answer it had, the last last."""
    answers = [await send()]
    while len(answers) < 20 and _to_retry(answers[-1]):
        await asyncio.sleep(min(0.2, float(answers[-1].headers.get("Retry-After", "1"))))
        answers.append(await send())
    return answers


def _to_retry(response: httpx.Response) -> bool:
    if response.status_code == 503:
        return True
    return response.status_code == 409 and response.json()["type"].endswith("request-in-flight")


async def placements(runtime: Runtime) -> tuple[int, dict[str, tuple[int, str]]]:
    """The board's count, and each placed player's seat and cohort, as stored."""
    placed, seats = 0, {}
    for item in await scores_items(runtime):
        if item["leaderboardId"]["S"] == placement_sk(BOARD_ID):
            seats[item["playerId"]["S"]] = (int(item["seat"]["N"]), item["cohortId"]["S"])
        elif item["playerId"]["S"] == f"cohorts#{BOARD_ID}":
            placed = int(item["placed"]["N"])
    return placed, seats


def assert_seated_densely(placed: int, seats: dict[str, tuple[int, str]], size: int) -> None:
    """``placed`` seats, each handed out once, none skipped, each in its seat's cohort."""
    assert placed == len(seats)
    assert sorted(seat for seat, _ in seats.values()) == list(range(placed))
    assert all(cohort == str(seat // size + 1) for seat, cohort in seats.values()), seats


def on_the_wire(faults: Faults) -> None:
    """Calls take a few milliseconds more, at random, as on a network: a count read by one
    request is often stale by the time its transaction arrives, as under real load (the embedded
    backend alone answers in order, too fast for a race to open)."""
    faults.delay_s, faults.jitter_s = 0.002, 0.02


def struck(run: Faithful, conflicts: InFlightItems) -> None:
    """The run really met every fault (else it proves nothing)."""
    injected = dict(run.injected)
    throttled = sum(n for kind, n in injected.items() if kind.startswith("transaction T"))
    throttled += injected.get("transaction ProvisionedThroughputExceeded", 0)
    assert throttled > 0, injected  # a placement's transaction cancelled for throughput
    assert injected.get("throttled", 0) > 0, injected  # a read botocore retried
    assert injected.get("lost response", 0) > 0, injected  # a transaction resent, applied once
    assert conflicts.conflicts + injected.get("transaction conflict", 0) > 0, injected


async def test_thirty_joins_for_the_last_ten_seats_under_faults_place_exactly_ten(
    service: Service, runtime: Runtime, dynamo_endpoint: str, unkind: Faithful
) -> None:
    http = service.http
    assert (await define(http, cohortSize=4, maxEntrants=20)).status_code == 200
    with unkind.quietly():
        early = [await join(http, f"early{i}") for i in range(10)]
    assert {r.status_code for r in early} == {201}
    conflicts = InFlightItems()
    on_the_wire(install(service.runtime.client, dynamo_endpoint, in_flight=conflicts))
    players = [f"late{i:02d}" for i in range(30)]
    answers = dict(
        zip(
            players,
            await asyncio.gather(*(retried(functools.partial(join, http, p)) for p in players)),
            strict=True,
        )
    )
    struck(unkind, conflicts)
    last = {p: a[-1] for p, a in answers.items()}
    statuses = Counter(r.status_code for r in last.values())
    assert statuses == {201: 10, 409: 20}, {p: [r.text for r in a] for p, a in answers.items()}
    assert {r.json()["type"] for r in last.values() if r.status_code == 409} == {"/problems/full"}
    # No request was told its player was placed before (200): each 201 is the one that placed.
    assert all(r.status_code != 200 for a in answers.values() for r in a)
    with unkind.quietly():
        placed, seats = await placements(runtime)
        assert_seated_densely(placed, seats, size=4)
        assert placed == 20
        winners = {p for p, r in last.items() if r.status_code == 201}
        assert set(seats) == winners | {f"early{i}" for i in range(10)}
        for player in winners:
            assert last[player].json()["cohortId"] == seats[player][1]
            repeat = await join(http, player)
            assert (repeat.status_code, repeat.json()) == (200, last[player].json())


async def test_thirty_first_submissions_for_the_last_ten_seats_under_faults_place_ten(
    service: Service, runtime: Runtime, dynamo_endpoint: str, unkind: Faithful
) -> None:
    http = service.http
    defined = await define(http, periods=["alltime"], cohortSize=4, maxEntrants=20)
    assert defined.status_code == 200, defined.text
    with unkind.quietly():
        early = [await join(http, f"early{i}") for i in range(10)]
    assert {r.status_code for r in early} == {201}
    conflicts = InFlightItems()
    on_the_wire(install(service.runtime.client, dynamo_endpoint, in_flight=conflicts))
    players = [f"late{i:02d}" for i in range(30)]

    def first_submission(player: str, score: int) -> Callable[[], Awaitable[httpx.Response]]:
        key = f"k-{player}"  # the same key on every retry: a replay is answered, not judged again
        return lambda: submit(http, player=player, score=score, idempotency_key=key)

    answers = dict(
        zip(
            players,
            await asyncio.gather(
                *(retried(first_submission(p, 100 + i)) for i, p in enumerate(players))
            ),
            strict=True,
        )
    )
    struck(unkind, conflicts)
    last = {p: a[-1] for p, a in answers.items()}
    statuses = Counter(r.status_code for r in last.values())
    assert statuses == {200: 10, 409: 20}, {p: [r.text for r in a] for p, a in answers.items()}
    assert {r.json()["type"] for r in last.values() if r.status_code == 409} == {"/problems/full"}
    winners = {p for p, r in last.items() if r.status_code == 200}
    with unkind.quietly():
        placed, seats = await placements(runtime)
        assert_seated_densely(placed, seats, size=4)
        assert placed == 20
        assert set(seats) == winners | {f"early{i}" for i in range(10)}
        # The board holds the ten who got in, once each, and nobody refused.
        page = (await http.get("/v1/leaderboards/trivia/classic/alltime")).json()
        assert {e["playerId"] for e in page["entries"]} == winners
        assert page["playerCount"] == 10
        # Each in their seat's cohort, and only there: seats 10 to 19 are cohorts 3 (two of
        # them: the early joiners in 3 have not played), 4 and 5.
        in_cohorts: dict[str, set[str]] = {}
        for cohort in ("1", "2", "3", "4", "5"):
            shown = await http.get(f"/v1/leaderboards/trivia/classic/alltime/cohorts/{cohort}")
            assert shown.status_code == 200, shown.text
            in_cohorts[cohort] = {e["playerId"] for e in shown.json()["entries"]}
        assert {c: len(p) for c, p in in_cohorts.items()} == {
            "1": 0,
            "2": 0,
            "3": 2,
            "4": 4,
            "5": 4,
        }
        assert all(seats[p][1] == c for c, ps in in_cohorts.items() for p in ps)


def resend_answered(make: Callable[[dict[str, Any]], AioAWSResponse]) -> Any:
    """A rule answering the second TransactWriteItems (botocore's resend) with ``make(body)``."""
    seen = [0]

    def rule(operation: str, body: dict[str, Any]) -> AioAWSResponse | None:
        if operation != "TransactWriteItems":
            return None
        seen[0] += 1
        return make(body) if seen[0] == 2 else None

    return rule


@pytest.mark.parametrize(
    ("lost", "resend"),
    [
        # The resend reads the items the first call wrote, and is throttled doing so.
        (1, lambda body: cancelled_at(body, "ThrottlingError", index=1)),
        # Every one of botocore's attempts applied (once, by its token), every answer lost.
        (10, None),
    ],
    ids=["resend-throttled", "every-answer-lost"],
)
async def test_a_join_applied_whose_answers_were_lost_is_its_201_once(
    service: Service,
    runtime: Runtime,
    dynamo_endpoint: str,
    lost: int,
    resend: Callable[[dict[str, Any]], AioAWSResponse] | None,
) -> None:
    # One answer lost and the resend answered: tests/api/test_entrants.py. Here the resend
    # fails too, so the request cannot know from its own answers whether it placed the player.
    http = service.http
    assert (await define(http, cohortSize=3)).status_code == 200
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.lose_responses = lost
    if resend is not None:
        faults.rules.append(resend_answered(resend))
    first = await join(http, "ann")
    assert (first.status_code, first.json()) == (201, {"playerId": "ann", "cohortId": "1"})
    assert faults.seen["TransactWriteItems"] >= 2  # applied, then resent
    again = await join(http, "ann")
    assert (again.status_code, again.json()) == (200, first.json())
    placed, seats = await placements(runtime)
    assert (placed, seats) == (1, {"ann": (0, "1")})
