"""Snapshots and erasure over HTTP."""

from __future__ import annotations

from tests.conftest import ADMIN_KEY, SUBMIT_KEY, Service
from tests.support import counter_total, now_ms, submit

URL = "/v1/leaderboards/trivia/classic/alltime"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}


async def test_snapshots_are_taken_listed_and_read(service: Service) -> None:
    t = now_ms() - 5000
    for i, score in enumerate([30, 20, 10]):
        await submit(service.http, player=f"p{i}", score=score, achieved_ms=t, rankDelta=False)
    denied = await service.http.post(
        f"{URL}/snapshots", headers={"Authorization": f"Bearer {SUBMIT_KEY}"}
    )
    assert denied.status_code == 403
    taken = await service.http.post(f"{URL}/snapshots", headers=ADMIN)
    assert taken.status_code == 201, taken.text
    snapshot = taken.json()
    assert snapshot["playerCount"] == 3
    assert [e["playerId"] for e in snapshot["entries"]] == ["p0", "p1", "p2"]
    second = (await service.http.post(f"{URL}/snapshots?top=2", headers=ADMIN)).json()
    listed = (await service.http.get(f"{URL}/snapshots")).json()["snapshots"]
    assert [s["snapshotTakenAt"] for s in listed] == [
        second["snapshotTakenAt"],
        snapshot["snapshotTakenAt"],
    ]
    assert listed[0]["reason"] == "manual"
    one = await service.http.get(f"{URL}/snapshots/{snapshot['snapshotTakenAt']}")
    assert one.json() == snapshot
    missing = await service.http.get(f"{URL}/snapshots/2020-01-01T00:00:00.000Z")
    assert missing.status_code == 404


async def test_erasure_removes_a_player_everywhere_once(service: Service) -> None:
    t = now_ms() - 5000
    for i, score in enumerate([30, 20, 10]):
        await submit(service.http, player=f"p{i}", score=score, achieved_ms=t, rankDelta=False)
    await service.http.post(f"{URL}/snapshots", headers=ADMIN)
    denied = await service.http.delete(
        "/v1/players/p1", headers={"Authorization": f"Bearer {SUBMIT_KEY}"}
    )
    assert denied.status_code == 403
    erased = await service.http.delete("/v1/players/p1", headers=ADMIN)
    assert erased.status_code == 200, erased.text
    assert erased.json() == {
        "playerId": "p1",
        "removed": {"boards": 3, "snapshots": 1, "idempotencyRecords": 1},
    }
    board = (await service.http.get(URL)).json()
    assert [e["playerId"] for e in board["entries"]] == ["p0", "p2"]
    assert board["playerCount"] == 2
    assert await counter_total(service.runtime, "trivia#classic#alltime") == (2, 2)
    snapshot_at = (await service.http.get(f"{URL}/snapshots")).json()["snapshots"][0]
    entries = (await service.http.get(f"{URL}/snapshots/{snapshot_at['snapshotTakenAt']}")).json()[
        "entries"
    ]
    assert [e["playerId"] for e in entries] == ["p0", None, "p2"]
    assert [e["rank"] for e in entries] == [1, 2, 3]
    again = await service.http.delete("/v1/players/p1", headers=ADMIN)
    assert again.json()["removed"] == {"boards": 0, "snapshots": 0, "idempotencyRecords": 0}
    standings = (await service.http.get("/v1/players/p1/standings")).json()
    assert standings["boards"] == []
