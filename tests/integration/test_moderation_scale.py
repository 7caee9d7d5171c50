"""Hiding players on a 16-shard board of 1,600 entries (the issue's target is 10,000: the
embedded backend walks its whole table on every query, so this checks the same exactness at a
size a test run affords): every other player's rank stays exact, each one behind a hidden player
a place higher, and the counters of every shard count exactly its visible rows."""

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
from tests.api.test_moderation import ADMIN, moderate, restore
from tests.conftest import Service
from tests.support import assert_counts_agree, operations

SHARDS = 16
PLAYERS = 1_600
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
    for place in [*range(0, len(shown), 97), len(shown) - 1]:
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
