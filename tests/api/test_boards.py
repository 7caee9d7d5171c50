"""Scores in, boards out: order, ties, pages, counts, on all three period boards."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta

import structlog.testing

from app.bootstrap import Runtime
from app.domain.clock import from_ms, iso_ms, to_ms
from app.domain.periods import Period, PeriodKind
from app.store.tables import TableNames
from tests.conftest import Service, make_settings, serve
from tests.support import counter_total, now_ms, submit


def _achievement_window() -> tuple[int, int]:
    """Times inside the current UTC day and within the lateness allowed."""
    now = datetime.now(UTC)
    start = max(now - timedelta(minutes=30), now.replace(hour=0, minute=0, second=0, microsecond=0))
    return to_ms(start), to_ms(now) - 1000


async def test_sixty_players_read_back_in_rule_order_across_pages(service: Service) -> None:
    rng = random.Random(7)
    lo, hi = _achievement_window()
    tied_time = rng.randint(lo, hi)
    players = []
    for i in range(60):
        score = rng.choice([100, 250, 250, 400, 999, 5000, rng.randint(0, 10_000)])
        # A third share one instant, so exact ties of score and time fall to the player id.
        achieved = tied_time if i % 3 == 0 else rng.randint(lo, hi)
        players.append((f"player-{rng.randint(0, 10**6):07d}-{i}", score, achieved))

    semaphore = asyncio.Semaphore(6)

    async def post(player: str, score: int, achieved: int) -> None:
        async with semaphore:
            response = await submit(
                service.http, player=player, score=score, achieved_ms=achieved, rankDelta=False
            )
            assert response.status_code == 200, response.text

    await asyncio.gather(*(post(*p) for p in players))
    expected = [p for p, _, _ in sorted(players, key=lambda p: (-p[1], p[2], p[0]))]
    moment = from_ms(tied_time)
    for period in ("alltime", "day", "week", f"day:{moment.date().isoformat()}"):
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            params: dict[str, str | int] = {"limit": 25}
            if cursor:
                params["cursor"] = cursor
            response = await service.http.get(
                f"/v1/leaderboards/trivia/classic/{period}", params=params
            )
            assert response.status_code == 200, response.text
            page = response.json()
            assert page["playerCount"] == 60
            for offset, entry in enumerate(page["entries"]):
                assert entry["rank"] == len(seen) + offset + 1
            seen += [e["playerId"] for e in page["entries"]]
            pages += 1
            cursor = page["nextCursor"]
            if cursor is None:
                break
        assert seen == expected, period
        assert pages == 3
    day = Period.containing(PeriodKind.DAY, moment)
    assert await counter_total(service.runtime, f"trivia#classic#{day.suffix}") == (60, 60)


async def test_entries_carry_decoded_score_time_and_profile(service: Service) -> None:
    achieved = now_ms() - 5000
    response = await submit(
        service.http,
        player="ada",
        score=8750,
        achieved_ms=achieved,
        displayName="Ada L.",
        country="GB",
    )
    assert response.status_code == 200
    page = (await service.http.get("/v1/leaderboards/trivia/classic/alltime")).json()
    assert page["leaderboardId"] == "trivia#classic#alltime"
    assert page["entries"] == [
        {
            "rank": 1,
            "playerId": "ada",
            "displayName": "Ada L.",
            "country": "GB",
            "score": 8750,
            "achievedAt": iso_ms(achieved),
            "metadata": None,
        }
    ]
    assert page["nextCursor"] is None


async def test_better_score_replaces_worse_changes_only_last_played(service: Service) -> None:
    t0 = now_ms() - 60_000
    first = await submit(service.http, player="bo", score=500, achieved_ms=t0)
    assert first.json()["boards"][0] | {"rankAfter": None} == {
        "leaderboardId": "trivia#classic#alltime",
        "period": "alltime",
        "best": 500,
        "previousBest": None,
        "improved": True,
        "rankAfter": None,
    }
    worse = await submit(service.http, player="bo", score=400, achieved_ms=t0 + 1000)
    assert [b["improved"] for b in worse.json()["boards"]] == [False, False, False]
    assert [b["best"] for b in worse.json()["boards"]] == [500, 500, 500]
    same_later = await submit(service.http, player="bo", score=500, achieved_ms=t0 + 2000)
    assert same_later.json()["boards"][0]["improved"] is False
    same_earlier = await submit(service.http, player="bo", score=500, achieved_ms=t0 - 1000)
    assert same_earlier.json()["boards"][0]["improved"] is True
    better = await submit(service.http, player="bo", score=900, achieved_ms=t0 + 3000)
    board = better.json()["boards"][0]
    assert (board["best"], board["previousBest"], board["improved"]) == (900, 500, True)
    page = (await service.http.get("/v1/leaderboards/trivia/classic/alltime")).json()
    assert [(e["playerId"], e["score"]) for e in page["entries"]] == [("bo", 900)]
    assert page["playerCount"] == 1
    assert await counter_total(service.runtime, "trivia#classic#alltime") == (1, 1)
    standing = await service.runtime.stores.standings.read_standing("trivia#classic#alltime", "bo")
    assert standing is not None
    assert standing.last_played_at_ms is not None
    assert standing.version == 5


async def test_rank_delta_reports_exact_ranks_before_and_after(service: Service) -> None:
    t0 = now_ms() - 60_000
    for i, score in enumerate([900, 800, 700, 600]):
        await submit(service.http, player=f"p{i}", score=score, achieved_ms=t0, rankDelta=False)
    climb = await submit(service.http, player="p3", score=850, achieved_ms=t0 + 10)
    board = climb.json()["boards"][0]
    assert (board["rankBefore"], board["rankAfter"]) == (4, 2)
    newcomer = await submit(service.http, player="p9", score=1, achieved_ms=t0)
    board = newcomer.json()["boards"][0]
    assert "rankBefore" not in board
    assert board["rankAfter"] == 5
    stay = await submit(service.http, player="p0", score=5, achieved_ms=t0)
    board = stay.json()["boards"][0]
    assert (board["rankBefore"], board["rankAfter"]) == (1, 1)


async def test_rows_of_an_expired_period_are_not_shown(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """moto never deletes TTL rows (and DynamoDB deletes late): reads must hide them anyway."""
    settings = make_settings(
        dynamo_endpoint, table_names, retention_days=1, max_lateness_seconds=5 * 86400
    )
    three_days_ago = now_ms() - 3 * 86_400_000
    async with serve(settings) as running:
        http = running.http
        response = await submit(http, player="old", score=10, achieved_ms=three_days_ago)
        assert response.status_code == 200
        day = response.json()["boards"][1]["period"]
        assert day.startswith("day:")
        expired = (await http.get(f"/v1/leaderboards/trivia/classic/{day}")).json()
        alltime = (await http.get("/v1/leaderboards/trivia/classic/alltime")).json()
    assert (expired["entries"], expired["playerCount"]) == ([], 0)
    assert [e["playerId"] for e in alltime["entries"]] == ["old"]
    standing = await runtime.stores.standings.read_standing(expired["leaderboardId"], "old")
    assert standing is not None  # the row is there; only the read hides it
    assert standing.expires_at is not None


async def test_readyz_is_503_until_the_tables_answer(
    dynamo_endpoint: str, table_names: TableNames
) -> None:
    settings = make_settings(dynamo_endpoint, TableNames("no-such-scores", "no-such-snapshots"))
    async with serve(settings) as running:
        response = await running.http.get("/readyz")
        assert response.status_code == 503
        assert response.headers["content-type"].startswith("application/problem+json")
        assert "Retry-After" in response.headers
        assert (await running.http.get("/healthz")).status_code == 200


async def test_a_busy_boards_pages_read_its_player_count_once_a_while(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """The page's playerCount comes from every coarse counter shard; within the cache's time a
    task reads it once, so a busy board's pages cost one Query each."""
    settings = make_settings(
        dynamo_endpoint, table_names, player_count_cache_seconds=30, definition_cache_seconds=10
    )
    async with serve(settings) as running:
        assert (await submit(running.http, player="a", score=5)).status_code == 200
        with structlog.testing.capture_logs() as logs:
            first = (await running.http.get("/v1/leaderboards/trivia/classic/alltime")).json()
            second = (await running.http.get("/v1/leaderboards/trivia/classic/alltime")).json()
        calls = [e["dynamodb_calls"] for e in logs if e["event"] == "request"]
        assert first["playerCount"] == second["playerCount"] == 1
        assert calls == [1 + settings.counter_shards, 1]
