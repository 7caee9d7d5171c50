"""``POST /v1/leaderboards/{game}/{variant}/{period}/claims/{playerId}`` on the embedded backend:
one 201 and then 200s with the same body, however many claims race; 409 ``period-open`` before
the close; 404 for a player not on the board, hidden, or erased (whose claims go with them); the
first claim stays the request's own through DynamoDB's lost answers and throttling."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import httpx

from app.bootstrap import claim_policy
from app.domain.calendar import UTC_CALENDAR
from app.domain.clock import to_ms
from app.domain.periods import Board, Period, PeriodKind
from app.services.seasons import ClaimAsk, Claims
from tests.conftest import ADMIN_KEY, OTHER_GAME_KEY, SUBMIT_KEY, Service
from tests.faults import fail_first, install, on_item, throttled
from tests.support import scores_items, seed_csv

SUBMITTER = {"Authorization": f"Bearer {SUBMIT_KEY}"}
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
CLOSED = Period.containing(PeriodKind.DAY, datetime.now(UTC) - timedelta(days=2))
"""A day long closed, whatever the time of day (its end plus the hour of lateness is past)."""
BOARD = f"/v1/leaderboards/trivia/classic/{CLOSED.display}"
SCORES = {"ann": 900, "bob": 800, "cat": 700, "dan": 600, "eve": 500}


def _start(period: Period) -> datetime:
    starts_at = UTC_CALENDAR.span(period).starts_at
    assert starts_at is not None
    return starts_at


async def _seeded(http: httpx.AsyncClient, board: str = BOARD) -> None:
    at = to_ms(_start(CLOSED)) + 3_600_000
    await seed_csv(http, board, [(p, s, at) for p, s in SCORES.items()])


async def _claim(
    http: httpx.AsyncClient, player: str, *, board: str = BOARD, key: str | None = None
) -> httpx.Response:
    headers = dict(SUBMITTER)
    if key is not None:
        headers["Idempotency-Key"] = key
    return await http.post(f"{board}/claims/{player}", headers=headers)


async def test_fifty_claims_at_once_give_one_201_and_49_200s_with_its_body(
    service: Service,
) -> None:
    await _seeded(service.http)
    answers = await asyncio.gather(*(_claim(service.http, "cat") for _ in range(50)))
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] * 49 + [201], [a.text for a in answers if a.status_code >= 300]
    bodies = {a.text for a in answers}
    assert len(bodies) == 1
    body = answers[0].json()
    assert body["playerId"] == "cat"
    assert body["leaderboardId"] == f"trivia#classic#{CLOSED.suffix}"
    assert (body["rank"], body["playerCount"]) == (3, len(SCORES))
    assert body["claimedAt"].endswith("Z")
    # One item in the player's partition, and it survives the task (read by another request).
    claims = [i for i in await scores_items(service.runtime) if i["playerId"]["S"] == "cat"]
    assert [i["leaderboardId"]["S"] for i in claims if "claimToken" in i] == [
        f"claim#trivia#classic#{CLOSED.suffix}"
    ]
    later = await _claim(service.http, "cat")
    assert (later.status_code, later.json()) == (200, body)


async def test_a_claim_before_the_close_is_409_period_open(service: Service) -> None:
    for period in ("day", "week", "alltime"):
        refused = await _claim(
            service.http, "ann", board=f"/v1/leaderboards/trivia/classic/{period}"
        )
        assert refused.status_code == 409, refused.text
        assert refused.json()["type"].endswith("/period-open")
        assert int(refused.headers["Retry-After"]) >= 1


async def test_a_player_not_on_the_board_hidden_or_erased_is_404(service: Service) -> None:
    http = service.http
    await _seeded(http)
    assert (await _claim(http, "zed")).status_code == 404
    hidden = await http.put(
        "/v1/games/trivia/moderation/players/bob",
        json={"action": "hide", "reason": "cheat"},
        headers=ADMIN,
    )
    assert hidden.status_code == 200, hidden.text
    assert (await _claim(http, "bob")).status_code == 404
    # Ranks close the hidden player's gap.
    assert (await _claim(http, "cat")).json()["rank"] == 2
    assert (await _claim(http, "ann")).status_code == 201
    erased = await http.delete("/v1/players/ann", headers=ADMIN)
    assert erased.status_code == 200, erased.text
    assert erased.json()["removed"] == {"boards": 1, "snapshots": 0, "idempotencyRecords": 1}
    assert not [i for i in await scores_items(service.runtime) if i["playerId"]["S"] == "ann"]
    assert (await _claim(http, "ann")).status_code == 404


async def test_only_a_key_for_the_game_claims(service: Service) -> None:
    await _seeded(service.http)
    url = f"{BOARD}/claims/ann"
    assert (await service.http.post(url)).status_code == 401
    other = {"Authorization": f"Bearer {OTHER_GAME_KEY}"}
    assert (await service.http.post(url, headers=other)).status_code == 403
    assert (await service.http.post(url, headers=ADMIN)).status_code == 403


async def test_the_first_claim_stays_the_requests_own_through_lost_answers_and_throttling(
    service: Service, dynamo_endpoint: str
) -> None:
    http = service.http
    await _seeded(http)
    faults = install(service.runtime.client, dynamo_endpoint)
    faults.lose["PutItem"] = 1  # applied, its answer lost: botocore sends it again
    first = await _claim(http, "ann")
    assert first.status_code == 201, first.text
    assert faults.lose["PutItem"] == 0
    faults.rules.append(fail_first("PutItem", 2, lambda _: throttled(), matching=on_item("bob")))
    assert (await _claim(http, "bob")).status_code == 201
    assert (await _claim(http, "ann")).status_code == 200


async def test_a_retry_with_its_idempotency_key_answers_as_the_first_did(
    service: Service,
) -> None:
    await _seeded(service.http)
    first = await _claim(service.http, "dan", key="claim-dan-1")
    again = await _claim(service.http, "dan", key="claim-dan-1")
    other = await _claim(service.http, "dan", key="claim-dan-2")
    assert [first.status_code, again.status_code, other.status_code] == [201, 201, 200]
    assert first.json() == again.json() == other.json()


async def test_the_rank_is_exact_on_a_sharded_board_where_a_rank_read_is_a_range(
    service: Service,
) -> None:
    """The real adapter's whole count of the entries ahead, on every partition, where a COUNT
    capped at 1 makes every rank read below a slot's top a range."""
    http = service.http
    defined = await http.put(
        "/v1/games/trivia/variants/sharded",
        json={"periods": ["day"], "shards": 4},
        headers=ADMIN,
    )
    assert defined.status_code == 200, defined.text
    board = f"/v1/leaderboards/trivia/sharded/{CLOSED.display}"
    scores = {f"p{i:02d}": 1_000 + 3 * (i % 5) for i in range(16)}
    at = to_ms(_start(CLOSED)) + 3_600_000
    await seed_csv(http, board, [(p, s, at + i) for i, (p, s) in enumerate(scores.items())])
    runtime = service.runtime
    claims = Claims(
        runtime.stores, runtime.stores.claims, replace(claim_policy(runtime.policies), cap=1)
    )
    order = sorted(scores, key=lambda p: (-scores[p], int(p[1:])))
    definition = await runtime.leaderboard.rules.for_reading("trivia", "sharded")
    sharded = Board("trivia", "sharded", CLOSED)
    now = datetime.now(UTC)
    for rank, player in enumerate(order, start=1):
        outcome = await claims.claim(ClaimAsk(sharded, definition, player, now, "r"))
        assert (outcome.claim.rank, outcome.claim.player_count) == (rank, len(scores)), player
