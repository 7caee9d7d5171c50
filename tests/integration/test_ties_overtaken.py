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
from app.domain.keys import RankKey
from app.domain.periods import Board
from app.services.ports import CounterItem, StoredTies, TieItem
from tests.conftest import ADMIN_KEY, Service
from tests.integration.test_ties import BOARD, _check, _ranks, _rounds, _truth, crowded
from tests.support import now_ms, reconciled, scores_items, submit

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
        if i["playerId"]["S"] == tie_pk and i["leaderboardId"]["S"].startswith("A#") and "n" in i
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
    in_slot = [p for p, s, _ in rows if BucketLayout().slot_of(s) == (slot["bucket"], slot["slot"])]
    last = max(in_slot, key=lambda p: (current[p][1], p))
    earliest = min(current[p][1] for p in in_slot) - 1

    async def land() -> None:
        response = await submit(
            http, player=last, score=current[last][0], achieved_ms=earliest, rankDelta=False
        )
        assert response.status_code == 200, response.text
        current[last] = (current[last][0], earliest)

    counters = _Overtaken(runtime.stores.counters, point, land)
    report = await reconciled(
        runtime,
        Board.from_id(BOARD_ID),
        runtime.policies.settle,  # any retention: the board is all-time
        counters=counters,
        tie_group=runtime.policies.tie_group,
        standings=runtime.stores.standings,
    )
    assert counters.landed, report
    truth = _truth([(p, s, t) for p, (s, t) in current.items()])
    _check(await _ranks(crowded, truth), truth)  # no exact rank is wrong

    again = await http.post(f"{BOARD}/reconcile", params={"apply": "true"}, headers=ADMIN)
    assert again.status_code == 200, again.text
    assert _check(await _ranks(crowded, truth), truth) >= len(truth) - 2


class _MovedBeforeTheMarks:
    """The runtime's standings, with a submission landing just before a build's first mark."""

    def __init__(self, standings: Any, land: Callable[[], Awaitable[None]]) -> None:
        self._standings = standings
        self._land = land
        self.landed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._standings, name)

    async def mark_tie(self, board_id: str, key: RankKey, grain: int) -> bool:
        if not self.landed:
            self.landed = True
            await self._land()
        marked: bool = await self._standings.mark_tie(board_id, key, grain)
        return marked


async def test_a_first_build_overtaken_before_its_marks_stays_a_range_after_more_play(
    crowded: Service,
) -> None:
    """A first build whose counted row leaves the slot before it is marked gives no grain; that
    row's departure took nothing from the tie counts the build wrote, so a player who then joins
    the slot (counted in none, there being no grain) makes them add up again, wrong: the slot must
    stay a range until it is rebuilt, never count the one who left instead of the one who came."""
    http, runtime = crowded.http, crowded.runtime
    rows = _rounds(30, seed=5)
    for player, score, at in rows:
        response = await submit(http, player=player, score=score, achieved_ms=at, rankDelta=False)
        assert response.status_code == 200, response.text
    current = {p: (s, t) for p, s, t in rows}
    layout = BucketLayout()
    slot = layout.slot_of(max(s for _, s, _ in rows))
    in_slot = [p for p, (s, _) in current.items() if layout.slot_of(s) == slot]
    truth = _truth([(p, s, t) for p, (s, t) in current.items()])
    last = max(in_slot, key=truth.index)  # the slot's last player, by the board's order

    async def leave() -> None:  # the slot's last player leaves it, far up the board
        response = await submit(http, player=last, score=10_000, rankDelta=False)
        assert response.status_code == 200, response.text
        current[last] = (10_000, now_ms())

    standings = _MovedBeforeTheMarks(runtime.stores.standings, leave)
    report = await reconciled(
        runtime,
        Board.from_id(BOARD_ID),
        runtime.policies.settle,
        tie_group=runtime.policies.tie_group,
        standings=standings,
    )
    assert standings.landed
    assert any(t.skipped for t in report.ties), report.ties  # the departed row's mark

    # A newcomer joins the slot at its front: the best score in it, earliest of all.
    staying = [p for p in in_slot if p != last]
    best = max(current[p][0] for p in staying)
    first = min(current[p][1] for p in staying if current[p][0] == best) - 1
    response = await submit(http, player="newcomer", score=best, achieved_ms=first, rankDelta=False)
    assert response.status_code == 200, response.text
    current["newcomer"] = (best, first)

    truth = _truth([(p, s, t) for p, (s, t) in current.items()])
    _check(await _ranks(crowded, truth), truth)  # no exact rank is wrong
    again = await http.post(f"{BOARD}/reconcile", params={"apply": "true"}, headers=ADMIN)
    assert again.status_code == 200, again.text
    assert _check(await _ranks(crowded, truth), truth) >= len(truth) - 2
