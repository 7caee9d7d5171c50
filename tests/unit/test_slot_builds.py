"""A slot's key range holds exactly the keys of its scores, either way a board ranks; a build
walks the slot until two walks agree."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.bootstrap import build_leaderboard, build_policies
from app.domain.buckets import BucketLayout
from app.domain.clock import to_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import Order, RankKey
from app.domain.periods import PeriodKind
from app.domain.submission import Submission
from app.domain.ties import tie_group
from app.services.leaderboard import Leaderboard
from app.services.policies import RankingPolicy
from app.services.ranking import slot_builds
from app.services.ranking.slot_builds import (
    WALKS,
    SlotStillMoving,
    SlotToBuild,
    build_slot_ties,
    slot_key_range,
)
from app.settings import Settings
from tests.fakes import MemoryStores

LAYOUT = BucketLayout(coarse=8, fine=3)
CAP = 40
ALLTIME = BoardDefinition(periods=(PeriodKind.ALLTIME,))
NOW = datetime.now(UTC)


@settings(max_examples=300, deadline=None)
@given(
    score=st.integers(0, 10**6),
    other=st.integers(0, 10**6),
    at=st.integers(0, 2**40),
    order=st.sampled_from(Order),
)
def test_a_slot_s_range_holds_its_keys_and_no_other(
    score: int, other: int, at: int, order: Order
) -> None:
    bucket, slot = LAYOUT.slot_of(score)
    low, high = slot_key_range(LAYOUT, bucket, slot, order)
    for s in (score, other):
        key = RankKey(s, at, "player-1", order).encode()
        assert (low <= key <= high) == (LAYOUT.slot_of(s) == (bucket, slot)), (s, key, low, high)


async def _round_service() -> tuple[
    Leaderboard, MemoryStores, Callable[[str, int], Awaitable[Any]]
]:
    """The service over fakes with no live builds of its own (the test builds), its one board
    all-time, and a submitter of ``(player, achieved ms)`` on score 500."""
    settings = Settings(rank_count_cap=CAP, tie_builds_on_read=False)
    fakes = MemoryStores()
    leaderboard = build_leaderboard(settings, fakes.stores, build_policies(settings))
    await leaderboard.rules.define("trivia", "classic", ALLTIME, now=NOW, hold=False)

    async def submit(player: str, at: int) -> Any:
        return await leaderboard.submissions.submit(
            Submission(player, 500, "trivia", "classic", at, rank_delta=False),
            client="game-server",
            idempotency_key=player,
            fields={"playerId": player},
            now_ms=to_ms(NOW),
        )

    return leaderboard, fakes, submit


@pytest.mark.parametrize(("landing", "built"), [(WALKS - 2, True), (WALKS - 1, False)])
async def test_a_round_landing_during_a_build_has_it_walk_again_not_give_up(
    landing: int, built: bool
) -> None:
    """Submissions landing between the walks: the build waits twice as long and walks again,
    comparing each walk with the one before, and builds once two agree; past ``WALKS`` walks
    (a slot that never stops moving) it leaves the slot for later."""
    _, fakes, submit = await _round_service()
    base = to_ms(NOW) - 3_000_000
    players = [(f"p{i:03d}", base + 7_919 * i) for i in range(30)]
    for player, at in players[:25]:
        await submit(player, at)
    late = iter(players[25 : 25 + landing])
    waits: list[float] = []

    async def wait(seconds: float) -> None:  # a submission lands in each of the first waits
        waits.append(seconds)
        for player, at in itertools.islice(late, 1):
            await submit(player, at)

    layout = BucketLayout()
    policy = RankingPolicy(layout, cap=CAP, build_group=tie_group(CAP), pass_gap_s=1)
    slot = ("trivia#classic#alltime", *layout.slot_of(500))
    fakes.table.calls.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(slot_builds, "asyncio", SimpleNamespace(sleep=wait))
        try:
            report = await build_slot_ties(
                fakes.stores, policy, SlotToBuild(slot, Order.DESC, None)
            )
        except SlotStillMoving:
            report = None
            assert not built
    walks = landing + 2 if built else WALKS
    assert fakes.table.calls["board_keys"] == walks
    assert waits == [2**i for i in range(walks - 1)]
    if built:
        assert report is not None
        assert report.entries == 25 + landing
    else:
        assert report is None
        assert not fakes.table.grains
