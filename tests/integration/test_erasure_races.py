"""Erasures racing submissions, on a seeded schedule over two app instances (two tasks): after
every round the counters equal a recount of each board, and the erased player is either gone
everywhere or on every board of the submissions that landed after the erasure, never in between.

Seen before a submission was one transaction: six players, each erased while 8 submissions for
them were in flight, left counters off on all three boards and players on the week board only.
"""

from __future__ import annotations

import asyncio
import random
from contextlib import AsyncExitStack

from app.bootstrap import Runtime
from app.domain.clock import from_ms
from app.domain.periods import Board, Period, PeriodKind
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, Service, make_settings, serve
from tests.faults import install
from tests.integration.test_seeding import assert_counters_match_board
from tests.support import now_ms, scores_items, submit

ROUNDS = 6
IN_FLIGHT = 8
SEED = 2026_12_01


async def test_erasures_racing_submissions_leave_counters_true_and_players_whole_or_gone(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names)
    rng = random.Random(SEED)
    achieved = now_ms() - 60_000
    boards = [
        Board("trivia", "classic", Period.containing(kind, from_ms(achieved))).board_id
        for kind in (PeriodKind.ALLTIME, PeriodKind.DAY, PeriodKind.WEEK)
    ]
    async with AsyncExitStack() as stack:
        tasks: list[Service] = [await stack.enter_async_context(serve(settings)) for _ in range(2)]
        for service in tasks:
            install(service.runtime.client, dynamo_endpoint).jitter_s = 0.03
        for player_no in range(ROUNDS):
            player = f"racer{player_no}"
            first = await submit(tasks[0].http, player=player, score=10, achieved_ms=achieved)
            assert first.status_code == 200, first.text

            async def one_submission(i: int, player: str = player) -> int:
                await asyncio.sleep(rng.uniform(0, 0.4))
                score, moment = rng.randrange(1, 10_000), achieved + i
                response = await submit(
                    tasks[i % 2].http, player=player, score=score, achieved_ms=moment
                )
                if response.status_code == 409 and rng.random() < 0.25:
                    # Some clients retry after the erasure, as told: they land afterwards.
                    assert response.json()["type"] == "/problems/player-being-erased"
                    await asyncio.sleep(int(response.headers["Retry-After"]) / 20)
                    response = await submit(
                        tasks[i % 2].http, player=player, score=score, achieved_ms=moment
                    )
                assert response.status_code in {200, 409}, response.text
                return response.status_code

            async def erasure(player: str = player) -> None:
                await asyncio.sleep(rng.uniform(0, 0.4))
                response = await rng.choice(tasks).http.delete(
                    f"/v1/players/{player}", headers={"Authorization": f"Bearer {ADMIN_KEY}"}
                )
                assert response.status_code == 200, response.text

            await asyncio.gather(erasure(), *(one_submission(i) for i in range(IN_FLIGHT)))

            for board_id in boards:
                await assert_counters_match_board(runtime, board_id)
            rows = {
                item["leaderboardId"]["S"]: item
                for item in await scores_items(runtime)
                if item["playerId"]["S"] == player and "rankKey" in item
            }
            assert set(rows) in (set(), set(boards)), (player, sorted(rows))
            # Whole: every board holds what the same submissions made of it.
            assert len({rows[b]["rankKey"]["S"] for b in rows}) <= 1, rows
