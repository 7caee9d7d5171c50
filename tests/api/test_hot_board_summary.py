"""A hot board's summary end to end, over the embedded backend through the real adapter: a
sharded board's first page and player count come from what the task read a moment ago and say
when; a rank comes from the task's mirror of the board, the player's own row read live."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from datetime import datetime
from typing import Any

import structlog.testing

from app.bootstrap import Runtime
from app.services.ranking.summary import TOP
from app.store.tables import TableNames
from tests.api.test_sharded_boards import ADMIN, URL
from tests.conftest import make_settings, serve
from tests.support import now_ms, submit

SHARDS = 16
DEFINITION = 1
"""The variant's definition, read on every request by the tests' settings."""


def calls_of(logs: list[MutableMapping[str, Any]]) -> list[object]:
    return [e["dynamodb_calls"] for e in logs if e["event"] == "request"]


async def test_a_sharded_board_s_reads_come_from_the_task_s_summary_and_say_when(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(
        dynamo_endpoint,
        table_names,
        hot_board_summary_seconds=10,  # longer than the test: nothing it reads expires
    )
    async with serve(settings) as running:
        http = running.http
        put = await http.put(
            "/v1/games/trivia/variants/live",
            json={"periods": ["alltime"], "shards": SHARDS},
            headers=ADMIN,
        )
        assert put.status_code == 200, put.text
        t0 = now_ms() - 60_000
        for i in range(20):
            sent = await submit(
                http,
                player=f"p{i:02d}",
                score=100 + i,
                achieved_ms=t0,
                variant="live",
                rankDelta=False,
            )
            assert sent.status_code == 200, sent.text
        assert (await submit(http, player="c1", score=5, variant="classic")).status_code == 200

        with structlog.testing.capture_logs() as logs:
            first = await http.get(URL, params={"limit": 10})
            second = await http.get(URL, params={"limit": 5})
        assert first.status_code == second.status_code == 200
        read_at = first.headers["Leaderboard-Read-At"]
        assert datetime.fromisoformat(read_at).timestamp() * 1000 > t0
        assert second.headers["Leaderboard-Read-At"] == read_at
        assert [e["playerId"] for e in first.json()["entries"]] == [
            f"p{i:02d}" for i in range(19, 9, -1)
        ]
        assert second.json()["entries"] == first.json()["entries"][:5]
        assert first.json()["playerCount"] == second.json()["playerCount"] == 20
        # The first page read every shard's top and coarse counters; the second, nothing (but
        # the variant's definition, which these tests' settings read on every request).
        first_calls, second_calls = calls_of(logs)
        assert first_calls == DEFINITION + SHARDS * (1 + settings.counter_shards)
        assert second_calls == DEFINITION

        # A page that continues, or one past the summary's size, is read live and says nothing.
        more = await http.get(URL, params={"cursor": first.json()["nextCursor"], "limit": 10})
        assert [e["rank"] for e in more.json()["entries"]] == list(range(11, 21))
        assert "Leaderboard-Read-At" not in more.headers
        assert TOP == 100  # the API's largest page: every first page is the summary's
        unsharded = await http.get("/v1/leaderboards/trivia/classic/alltime")
        assert unsharded.status_code == 200
        assert "Leaderboard-Read-At" not in unsharded.headers

        # The task's mirror of the board: the first rank read starts it (and is read live).
        for _ in range(100):
            probe = await http.get(f"{URL}/players/p05")
            if "Leaderboard-Read-At" in probe.headers:
                break
            await asyncio.sleep(0.1)
        mirrored_at = probe.headers["Leaderboard-Read-At"]
        assert probe.json()["rank"]["rank"] == 15

        # A new best score: the page, as of its moment, does not show it yet; the player's own
        # rank does, exactly (their own last write is in every answer of theirs).
        assert (
            await submit(http, player="star", score=10_000, variant="live", rankDelta=False)
        ).status_code == 200
        page = await http.get(URL, params={"limit": 10})
        assert page.headers["Leaderboard-Read-At"] == read_at
        assert "star" not in [e["playerId"] for e in page.json()["entries"]]
        with structlog.testing.capture_logs() as logs:
            ranked = await http.get(f"{URL}/players/star")
            again = await http.get(f"{URL}/players/star")
            other = await http.get(f"{URL}/players/p05")
        assert (
            ranked.json()["rank"]
            == again.json()["rank"]
            == {
                "kind": "exact",
                "rank": 1,
                "topPercent": round(100 / 21, 2),
            }
        )
        # Another player's rank is the mirror's, as of its moment: without the newcomer yet,
        # whichever shard they share.
        assert other.json()["rank"]["rank"] == 15
        assert {r.headers["Leaderboard-Read-At"] for r in (ranked, again, other)} == {mirrored_at}
        # A rank from the mirror reads the player's row, and nothing else.
        assert calls_of(logs) == [DEFINITION + 1] * 3


async def test_ranks_in_a_slot_crowded_on_every_shard_become_exact(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """One score for everyone, a COUNT cap far below each shard's share of the slot: a rank
    read answers a range at first and has its own shard's slot built (tie counters); once
    every shard's is, each rank is exact, the other shards' counted through their tie counters
    (read into the task's summary), not a capped COUNT."""
    settings = make_settings(dynamo_endpoint, table_names, rank_count_cap=4)
    async with serve(settings) as running:
        http = running.http
        put = await http.put(
            "/v1/games/trivia/variants/live",
            json={"periods": ["alltime"], "shards": 4},
            headers=ADMIN,
        )
        assert put.status_code == 200, put.text
        t0 = now_ms() - 60_000
        players = [f"q{i:02d}" for i in range(32)]
        for i, player in enumerate(players):
            sent = await submit(
                http, player=player, score=700, achieved_ms=t0 + i, variant="live", rankDelta=False
            )
            assert sent.status_code == 200, sent.text
        ranks: dict[str, object] = {}
        for _ in range(60):  # until every shard's slot is built: a few seconds
            for player in players:
                ranks[player] = (await http.get(f"{URL}/players/{player}")).json()["rank"]
            if all(r["kind"] == "exact" for r in ranks.values()):  # type: ignore[index]
                break
            await asyncio.sleep(0.5)
        assert [ranks[p] for p in players] == [
            {"kind": "exact", "rank": i + 1, "topPercent": round(100 * (i + 1) / 32, 2)}
            for i in range(32)
        ]
