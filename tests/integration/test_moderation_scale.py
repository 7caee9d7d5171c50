"""Hiding players on a sharded board leaves every other player's rank exact, and the counters of
every shard count exactly its visible rows: on a 16-shard board of 400 entries written straight
into the table; and ``bench/moderation_scale.py``'s check (whose run at issue 43's size, 10,000
entries, is docs/benchmarks/runs/2026-12-06-moderation-scale.md) at a few hundred entries, the
ranks read live and from a task's mirror, a crowded slot's from its tie counters."""

from __future__ import annotations

import asyncio

from app.bootstrap import Runtime
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.models import Entry, Standing, StandingWrite
from app.domain.periods import Board
from app.domain.shards import player_partition
from app.store.client import Dynamo
from app.store.standings import row_put
from bench.moderation_scale import Figures, Scale, Step, check_scale, render
from tests.api.test_moderation import ADMIN, moderate, restore
from tests.conftest import Service
from tests.support import assert_counts_agree, operations

SHARDS = 16
PLAYERS = 400
BOARD = Board.from_id("trivia#hot#alltime")
AT_MS = 1_800_000_000_000


async def _fill(runtime: Runtime) -> list[str]:
    """The rows, straight into the table; their counters by the reconciler, as after a seed."""
    players = [f"p{i:04d}" for i in range(PLAYERS)]
    items = []
    for i, player in enumerate(players):
        partition = player_partition(BOARD.board_id, player, SHARDS)
        key = RankKey(100_000 - 7 * i, AT_MS + i, player)
        write = StandingWrite(partition, Standing(partition, Entry(key), version=1), None)
        items.append({"PutRequest": {"Item": row_put(runtime.tables.scores, write)["Put"]["Item"]}})
    await Dynamo(runtime.client, in_flight=asyncio.Semaphore(4)).batch_write(
        "filling a hot board", table=runtime.tables.scores, requests=items
    )
    report = await operations(runtime).reconcile(
        BOARD, BoardDefinition(shards=SHARDS, periods=BoardDefinition().periods), apply=True
    )
    assert report.player_count == PLAYERS
    return players


async def test_hiding_on_a_16_shard_board_keeps_every_other_rank_exact(service: Service) -> None:
    http = service.http
    defined = await http.put(
        "/v1/games/trivia/variants/hot", json={"shards": SHARDS}, headers=ADMIN
    )
    assert defined.status_code == 200, defined.text
    players = await _fill(service.runtime)
    hidden = [players[0], players[PLAYERS // 2], players[-3]]
    for player in hidden:
        assert (await moderate(http, player, "hide")).status_code == 200
    shown = [p for p in players if p not in hidden]
    for place in [*range(0, len(shown), 23), len(shown) - 1]:
        player = shown[place]
        found = await http.get(f"/v1/leaderboards/trivia/hot/alltime/players/{player}")
        assert found.status_code == 200, found.text
        assert found.json()["rank"] == {
            "kind": "exact",
            "rank": place + 1,
            "topPercent": found.json()["rank"]["topPercent"],
        }, player
    page = (await http.get("/v1/leaderboards/trivia/hot/alltime", params={"limit": 100})).json()
    assert [e["playerId"] for e in page["entries"]] == shown[:100]
    assert page["playerCount"] == PLAYERS - len(hidden)
    await assert_counts_agree(service.runtime, BOARD.board_id)
    for player in hidden:
        assert (await restore(http, player)).status_code == 200
    back = await http.get(f"/v1/leaderboards/trivia/hot/alltime/players/{players[-1]}")
    assert back.json()["rank"]["rank"] == PLAYERS
    await assert_counts_agree(service.runtime, BOARD.board_id)


SMALL = Scale(players=200, shards=4, sample=12, crowd=48, rank_count_cap=4)
"""A few hundred entries (200 on each of two boards) on 4 shards: about 12 of the 48 crowded
ones on each shard, so that the ranks in the slot's middle count past the cap of 4 and come from
its tie counters."""


async def test_the_scale_check_finds_every_rank_exact_on_a_few_hundred_entries(
    dynamo_endpoint: str,
) -> None:
    figures = await check_scale(dynamo_endpoint, SMALL)
    assert figures.wrong == []
    assert len(figures.hidden) == 3
    assert [s.name for s in figures.steps] == ["seeded", "hidden", "restored"]
    for step in figures.steps:
        # Two boards, the sample and (hidden) a player just below each hidden one, both tasks.
        below = 3 if step.name == "hidden" else 0
        assert step.ranks_live == 2 * (SMALL.sample + below), step
        assert step.ranks_mirror + step.ranks_mirror_live == step.ranks_live, step
    assert sum(s.ranks_mirror for s in figures.steps) > 0  # the mirror answered, checked
    assert "Verdict: PASS" in render(figures, "python -m bench.moderation_scale")


def test_the_scale_check_says_fail_for_a_wrong_answer() -> None:
    figures = Figures(SMALL, steps=[Step("hidden", 1.0, ranks_live=1)])
    figures.wrong.append("hidden /v1/leaderboards/trivia/hot/alltime (live): p00001: ...")
    shown = render(figures, "python -m bench.moderation_scale")
    assert "Wrong answers: 1." in shown
    assert "Verdict: FAIL" in shown
