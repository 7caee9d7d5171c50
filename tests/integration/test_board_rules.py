"""Every operator and order through the operator's tools, end to end on the embedded backend:
a seed row sets the value (by the board's rule), then submissions go on from the seeded values;
the reconciler finds the counters right; a snapshot keeps the board order; an erasure takes the
player off; a closed month is snapshotted by the closed-periods job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.domain.clock import iso_ms, to_ms
from tests.conftest import ADMIN_KEY, Service
from tests.support import counter_total, now_ms, operations, seed_csv, submit

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
BOARD = "/v1/leaderboards/trivia/classic/alltime"
BOARD_ID = "trivia#classic#alltime"


async def _define(service: Service, order: str, operator: str, periods: list[str]) -> None:
    response = await service.http.put(
        "/v1/games/trivia/variants/classic",
        json={"order": order, "operator": operator, "periods": periods},
        headers=ADMIN,
    )
    assert response.status_code == 200, response.text


async def _board(service: Service) -> list[tuple[str, int]]:
    response = await service.http.get(BOARD, params={"limit": 100})
    assert response.status_code == 200, response.text
    return [(e["playerId"], e["score"]) for e in response.json()["entries"]]


# Before the seed: ann 50 (t), bob 30 (t+1). The seed: ann 40 at t+2, bob 35 at t-5 and bob 20
# at t+3 (two rows of one player), cat 45 at t+4. Then ann submits 5 at t+6.
CASES = {
    # best, higher first: ann keeps 50 (the seed's 40 is worse); bob's better row 35 beats 30.
    ("desc", "best"): ([("ann", 50), ("cat", 45), ("bob", 35)], [("ann", 50), ("cat", 45)]),
    # best, lower first: ann's 40 beats 50; bob's 20 is his best row and beats 30.
    ("asc", "best"): ([("bob", 20), ("ann", 40), ("cat", 45)], [("ann", 5), ("bob", 20)]),
    # latest: the later row of the file (bob 20 at t+3) and later than the board's; ann's 40 at
    # t+2 is later than her 50 at t.
    ("desc", "latest"): ([("cat", 45), ("ann", 40), ("bob", 20)], [("cat", 45), ("bob", 20)]),
    # sum: a seed row sets the total (the file's latest row for bob); ann's 5 adds to 40, and
    # her 45 was reached after cat's (t+6 against t+4): cat goes first on the tie.
    ("desc", "sum"): ([("cat", 45), ("ann", 40), ("bob", 20)], [("cat", 45), ("ann", 45)]),
    ("asc", "sum"): ([("bob", 20), ("ann", 40), ("cat", 45)], [("bob", 20), ("cat", 45)]),
}


@pytest.mark.parametrize("rules", list(CASES), ids=["/".join(r) for r in CASES])
async def test_seed_reconcile_snapshot_and_erase_follow_the_board_s_rule(
    service: Service, rules: tuple[str, str]
) -> None:
    order, operator = rules
    seeded, after = CASES[rules]
    await _define(service, order, operator, ["alltime"])
    t = now_ms() - 600_000
    for player, score, at in (("ann", 50, t), ("bob", 30, t + 1)):
        response = await submit(service.http, player=player, score=score, achieved_ms=at)
        assert response.status_code == 200, response.text
    report = await seed_csv(
        service.http,
        BOARD,
        [("ann", 40, t + 2), ("bob", 35, t - 5), ("bob", 20, t + 3), ("cat", 45, t + 4)],
    )
    assert report["duplicates"] == 1
    assert await _board(service) == seeded
    assert await counter_total(service.runtime, BOARD_ID) == (3, 3)

    response = await submit(service.http, player="ann", score=5, achieved_ms=t + 6)
    assert response.status_code == 200, response.text
    board = await _board(service)
    assert board[:2] == after

    reconciled = await service.http.post(f"{BOARD}/reconcile", headers=ADMIN)
    assert reconciled.status_code == 200, reconciled.text
    assert reconciled.json()["differences"] == []
    assert reconciled.json()["playerCount"] == 3

    snapshot = await service.http.post(f"{BOARD}/snapshots", headers=ADMIN)
    assert snapshot.status_code == 201, snapshot.text
    kept = [(e["playerId"], e["score"]) for e in snapshot.json()["entries"]]
    assert kept == board

    first = board[0][0]
    erased = await service.http.delete(f"/v1/players/{first}", headers=ADMIN)
    assert erased.status_code == 200, erased.text
    assert await _board(service) == board[1:]
    rank = (await service.http.get(f"{BOARD}/players/{board[1][0]}")).json()["rank"]
    assert (rank["kind"], rank["rank"]) == ("exact", 1)
    assert await counter_total(service.runtime, BOARD_ID) == (2, 2)


async def test_a_closed_month_gets_its_snapshot_by_the_closed_periods_job(
    service: Service,
) -> None:
    await _define(service, "asc", "best", ["alltime", "month"])
    now = datetime.now(UTC)
    last_month = (now.replace(day=1) - timedelta(days=1)).replace(hour=12)
    label = f"{last_month.year:04d}-{last_month.month:02d}"
    month_board = f"/v1/leaderboards/trivia/classic/month:{label}"
    text = "playerId,score,achievedAt\n" + "".join(
        f"{p},{s},{iso_ms(to_ms(last_month))}\n" for p, s in (("ann", 70), ("bob", 60))
    )
    seeded = await service.http.post(
        f"{month_board}/seed",
        params={"graceSeconds": 0},
        content=text,
        headers={**ADMIN, "Content-Type": "text/csv"},
    )
    assert seeded.status_code == 200, seeded.text
    closed_at_end = operations(service.runtime, settle=timedelta(0))
    report = await closed_at_end.snapshot_closed_periods(now=now, top=100)
    assert [snap.board_id for snap in report.taken] == [f"trivia#classic#month#{label}"]
    assert [e.player_id for e in report.taken[0].entries] == ["bob", "ann"]  # lower first
