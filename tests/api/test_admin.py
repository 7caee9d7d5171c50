"""Admin endpoints: seeding and reconciling over HTTP, admin keys only."""

from __future__ import annotations

import time

from app.bootstrap import Runtime
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, SUBMIT_KEY, make_settings, serve
from tests.support import counter_total

CSV = "playerId,score,achievedAt\n" + "".join(
    f"p{i},{100 - i},2026-11-01T10:00:00.000Z\n" for i in range(8)
)


async def test_seed_and_reconcile_over_http(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, request_deadline_seconds=1)
    async with serve(settings) as running:
        http = running.http
        url = "/v1/leaderboards/trivia/classic/alltime"
        admin = {"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "text/csv"}
        denied = await http.post(
            f"{url}/seed", content=CSV, headers={**admin, "Authorization": f"Bearer {SUBMIT_KEY}"}
        )
        assert denied.status_code == 403
        wrong_type = await http.post(
            f"{url}/seed", content=CSV, headers={**admin, "Content-Type": "text/plain"}
        )
        assert wrong_type.status_code == 415
        seeded = await http.post(f"{url}/seed", content=CSV, headers=admin)
        assert seeded.status_code == 200, seeded.text
        assert seeded.json()["rowsWritten"] == 8
        board = (await http.get(url)).json()
        assert [e["playerId"] for e in board["entries"]] == [f"p{i}" for i in range(8)]
        assert board["playerCount"] == 8
        bad = await http.post(
            f"{url}/seed", content="playerId,score,achievedAt\nx#y,1,nope\n", headers=admin
        )
        assert bad.status_code == 422
        assert bad.json()["errors"][0]["line"] == 2
        check = await http.post(
            f"{url}/reconcile", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
        )
        assert check.status_code == 200, check.text
        assert check.json()["differences"] == []
        assert check.json()["playerCount"] == 8
    assert await counter_total(runtime, "trivia#classic#alltime") == (8, 8)


async def test_the_seed_s_grace_period_can_be_set_over_http(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    # A deadline (and so a default grace) far longer than this test may take.
    settings = make_settings(dynamo_endpoint, table_names, request_deadline_seconds=60)
    async with serve(settings) as running:
        url = "/v1/leaderboards/trivia/classic/alltime/seed"
        admin = {"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "text/csv"}
        for bad in ("-1", "601", "soon"):
            refused = await running.http.post(
                f"{url}?graceSeconds={bad}", content=CSV, headers=admin
            )
            assert refused.status_code == 422, refused.text
            assert refused.json()["errors"][0]["field"] == "graceSeconds"
        began = time.monotonic()
        seeded = await running.http.post(f"{url}?graceSeconds=0", content=CSV, headers=admin)
        assert seeded.status_code == 200, seeded.text
        assert time.monotonic() - began < 30
    assert await counter_total(runtime, "trivia#classic#alltime") == (8, 8)
