"""A reconcile of tie counters overtaken by a submission (issue 27, item 4), landed at each point
of its walk: before the tie counters are read, right after, and just before their repair is
written. Whatever lands where, no rank is a wrong exact one, and the next run makes them true.

Before, the tie counters were read after the second pass and set back to the walk's values on
condition of that read: a submission landing in between was overwritten, the counts still added
up, and every player between the old and the new chunk got an exact rank one off."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from app.domain.buckets import BucketLayout
from app.domain.periods import Board
from app.services.ports import CounterItem, StoredTies, TieItem
from tests.conftest import ADMIN_KEY, Service
from tests.integration.test_ties import BOARD, _check, _ranks, _rounds, _truth, crowded
from tests.support import reconciled, scores_items, submit

__all__ = ["crowded"]  # the fixture, used here by name

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
BOARD_ID = "trivia#classic#alltime"


class _Overtaken:
    """The runtime's counters, with a submission landing at ``point`` of the reconcile."""

    def __init__(self, counters: Any, point: str, land: Callable[[], Awaitable[None]]) -> None:
        self._counters = counters
        self._point = point
        self._land = land
        self.landed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._counters, name)

    async def _maybe(self, point: str) -> None:
        if point == self._point and not self.landed:
            self.landed = True
            await self._land()

    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        await self._maybe("before the tie read")
        read: StoredTies = await self._counters.read_ties(board_id, bucket, slot)
        await self._maybe("after the tie read")
        return read

    async def set_counter(self, board_id: str, item: CounterItem, **kwargs: Any) -> None:
        if isinstance(item, TieItem):
            await self._maybe("before the tie writes")
        await self._counters.set_counter(board_id, item, **kwargs)


@pytest.mark.parametrize(
    "point", ["before the tie read", "after the tie read", "before the tie writes"]
)
async def test_a_submission_overtaking_a_tie_rebuild_leaves_no_wrong_exact_rank(
    crowded: Service, point: str
) -> None:
    http, runtime = crowded.http, crowded.runtime
    rows = _rounds(30, seed=5)
    for player, score, at in rows:
        response = await submit(http, player=player, score=score, achieved_ms=at, rankDelta=False)
        assert response.status_code == 200, response.text
    built = await http.post(f"{BOARD}/reconcile", params={"apply": "true"}, headers=ADMIN)
    assert built.status_code == 200, built.text
    slot = max(built.json()["tieSlots"], key=lambda s: s["entries"])

    # Drift on one level-A count of the biggest crowded slot: the next run rewrites it.
    tie_pk = f"hist#{BOARD_ID}#t{slot['bucket']:04d}#{slot['slot']:04d}"
    (item,) = [
        i
        for i in await scores_items(runtime)
        if i["playerId"]["S"] == tie_pk and i["leaderboardId"]["S"].startswith("A#")
    ][:1]
    await runtime.client.update_item(
        TableName=runtime.tables.scores,
        Key={"playerId": item["playerId"], "leaderboardId": item["leaderboardId"]},
        UpdateExpression="ADD n :d",
        ExpressionAttributeValues={":d": {"N": "1"}},
    )

    # The submission: the slot's last player reaches the same score earlier, moving to its front
    # (out of their chunk, into the first).
    current = {p: (s, t) for p, s, t in rows}
    in_slot = [p for p, s, _ in rows if BucketLayout().fine_of(s) == (slot["bucket"], slot["slot"])]
    last = max(in_slot, key=lambda p: (current[p][1], p))
    earliest = min(current[p][1] for p in in_slot) - 1

    async def land() -> None:
        response = await submit(
            http, player=last, score=current[last][0], achieved_ms=earliest, rankDelta=False
        )
        assert response.status_code == 200, response.text
        current[last] = (current[last][0], earliest)

    counters = _Overtaken(runtime.stores.counters, point, land)
    await reconciled(
        runtime,
        Board.from_id(BOARD_ID),
        runtime.policies.settle,  # any retention: the board is all-time
        counters=counters,
        tie_group=runtime.policies.tie_group,
        standings=runtime.stores.standings,
    )
    assert counters.landed
    truth = _truth([(p, s, t) for p, (s, t) in current.items()])
    _check(await _ranks(crowded, truth), truth)  # no exact rank is wrong

    again = await http.post(f"{BOARD}/reconcile", params={"apply": "true"}, headers=ADMIN)
    assert again.status_code == 200, again.text
    assert _check(await _ranks(crowded, truth), truth) >= len(truth) - 2
