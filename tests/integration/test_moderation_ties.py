"""Hiding and restoring players in crowded slots (decision 0036): a hidden row leaves its slot's
tie counters at its tie mark, a restored one comes back at the mark the slot's grain gives it,
and every other player's rank stays exact; the reconciler's recount (of the index, which holds
visible rows only) agrees with the counters and the tie counters after each."""

from __future__ import annotations

from tests.conftest import ADMIN_KEY, Service
from tests.integration.test_ties import BOARD, _check, _ranks, _rounds, _truth, crowded
from tests.support import submit

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
__all__ = ["crowded"]


async def _agrees(service: Service) -> None:
    dry = await service.http.post(f"{BOARD}/reconcile", headers=ADMIN)
    assert dry.status_code == 200, dry.text
    body = dry.json()
    assert body["differences"] == [], body
    assert all(s["differences"] == s["unmarked"] == 0 for s in body["tieSlots"]), body


async def test_hidden_players_leave_crowded_slots_exactly(crowded: Service) -> None:
    http = crowded.http
    rows = _rounds(30, seed=5)
    for player, score, at in rows:
        response = await submit(http, player=player, score=score, achieved_ms=at, rankDelta=False)
        assert response.status_code == 200, response.text
    applied = await http.post(f"{BOARD}/reconcile", params={"apply": "true"}, headers=ADMIN)
    assert applied.status_code == 200, applied.text
    assert applied.json()["tieSlots"], "the board has crowded slots"
    truth = _truth(rows)
    everyone = _check(await _ranks(crowded, truth), truth)
    assert everyone >= len(truth) - 2
    # Three players of the crowd: the first, one in the middle, the last.
    hidden = [truth[0], truth[len(truth) // 2], truth[-1]]
    for player in hidden:
        response = await http.put(
            f"/v1/games/trivia/moderation/players/{player}",
            json={"action": "hide", "reason": "crowd"},
            headers=ADMIN,
        )
        assert response.status_code == 200, response.text
    shown = [p for p in truth if p not in hidden]
    assert _check(await _ranks(crowded, shown), shown) >= len(shown) - 2
    await _agrees(crowded)
    for player in hidden:
        response = await http.delete(f"/v1/games/trivia/moderation/players/{player}", headers=ADMIN)
        assert response.status_code == 200, response.text
    assert _check(await _ranks(crowded, truth), truth) >= len(truth) - 2
    await _agrees(crowded)
