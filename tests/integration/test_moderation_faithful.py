"""Moderation under the faithful run's faults (``tests.faults.MODERATE``: throttling, lost
responses botocore resends, transactions holding their items, a lagging index): players hidden,
banned and restored while submissions for them and for others are in flight, each request
retried after ``Retry-After`` as a client would. Afterwards, read quietly: every board's counters
count exactly its visible rows, the board shows exactly the visible players in order, and the
hidden ones' rows are kept."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import Awaitable, Callable

import httpx

from app.bootstrap import Runtime
from tests.api.test_moderation import ADMIN, board_ids
from tests.conftest import Service
from tests.faults import Faithful
from tests.integration.test_faithful_run import _faults_struck, service, submitted
from tests.support import assert_counts_agree, now_ms, scores_items

__all__ = ["service"]
PAGE = "/v1/leaderboards/trivia/classic/alltime"


async def _retried(call: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
    for _ in range(20):
        response = await call()
        if response.status_code not in (409, 503):
            return response
        await asyncio.sleep(min(1.0, float(response.headers.get("Retry-After", "1"))))
    return response


async def test_moderation_racing_submissions_under_faults(
    service: Service, runtime: Runtime, faithful_run: Faithful
) -> None:
    http, at = service.http, now_ms() - 60_000
    best = {f"p{i:02d}": random.Random(i).randrange(1, 10_000) for i in range(24)}
    first = await asyncio.gather(
        *(submitted(http, player=p, score=s, key=f"a-{p}", achieved_ms=at) for p, s in best.items())
    )
    assert [a.status_code for a in first] == [200] * len(best)
    hidden, banned, restored = ["p01", "p05", "p09"], ["p13"], ["p05"]

    async def moderate(player: str, action: str) -> httpx.Response:
        return await _retried(
            lambda: http.put(
                f"/v1/games/trivia/moderation/players/{player}",
                json={"action": action, "reason": "faithful"},
                headers=ADMIN,
            )
        )

    async def improve(player: str) -> httpx.Response:
        best[player] += 20_000
        return await submitted(
            http, player=player, score=best[player], key=f"b-{player}", achieved_ms=at + 1
        )

    answers = await asyncio.gather(
        *(moderate(p, "hide") for p in hidden),
        *(moderate(p, "ban") for p in banned),
        *(improve(p) for p in [*hidden, "p02", "p03"]),
    )
    assert all(a.status_code == 200 for a in answers[: len(hidden) + len(banned)]), [
        a.text for a in answers
    ]

    # The ban may have landed before or after its player's submission: not one in this race.
    async def restore(player: str) -> httpx.Response:
        return await http.delete(f"/v1/games/trivia/moderation/players/{player}", headers=ADMIN)

    for p in restored:
        response = await _retried(functools.partial(restore, p))
        assert response.status_code == 200, response.text
    _faults_struck(faithful_run, "throttled")
    with faithful_run.quietly():
        await assert_counts_agree(runtime, *board_ids(at))
        gone = {p for p in [*hidden, *banned] if p not in restored}
        shown = sorted((p for p in best if p not in gone), key=lambda p: (-best[p], p))
        page = (await http.get(PAGE, params={"limit": 100})).json()
        assert [e["playerId"] for e in page["entries"]] == shown
        assert page["playerCount"] == len(shown)
        assert [e["rank"] for e in page["entries"]] == list(range(1, len(shown) + 1))
        kept = {
            i["playerId"]["S"]
            for i in await scores_items(runtime)
            if "hiddenKey" in i and i["leaderboardId"]["S"].endswith("alltime")
        }
        assert kept == gone
