"""``GET /v1/boards``: the games and variants that have boards, from the board registry, with each
one's live periods in the path's form; expired day and week boards left out, as reads hide them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.bootstrap import Runtime
from app.domain.periods import Period, PeriodKind
from app.store.tables import TableNames
from tests.conftest import OTHER_GAME_KEY, SUBMIT_KEY, Service, make_settings, serve
from tests.support import now_ms, submit


async def test_an_empty_registry_lists_no_games(service: Service) -> None:
    response = await service.http.get("/v1/boards")
    assert response.status_code == 200, response.text
    today = Period.containing(PeriodKind.DAY, datetime.now(UTC)).display
    week = Period.containing(PeriodKind.WEEK, datetime.now(UTC)).display
    month = Period.containing(PeriodKind.MONTH, datetime.now(UTC)).display
    assert response.json() == {
        "games": [],
        "currentPeriods": [today, week, month],
        "nextCursor": None,
    }


async def test_submitted_boards_are_listed_by_game_and_variant_in_order(service: Service) -> None:
    for game, variant in (("trivia", "sports"), ("trivia", "alltopics"), ("chess", "blitz")):
        key = OTHER_GAME_KEY if game == "chess" else SUBMIT_KEY
        response = await submit(
            service.http, player="p1", score=10, game=game, variant=variant, key=key
        )
        assert response.status_code == 200, response.text
    now = datetime.now(UTC)
    day = Period.containing(PeriodKind.DAY, now).display
    week = Period.containing(PeriodKind.WEEK, now).display
    # Earlier periods, registered as a seed or an older submission would have.
    registry = service.runtime.stores.registry
    retention = service.runtime.definitions.default.retention
    for period in ("day:2020-01-01", _days_ago(now, 1), _days_ago(now, 3), _weeks_ago(now, 1)):
        board = f"trivia#alltopics#{period.replace(':', '#')}"
        await registry.register_board(board, expires_at=None)

    listing = (await service.http.get("/v1/boards")).json()

    assert [g["game"] for g in listing["games"]] == ["chess", "trivia"]
    chess, trivia = listing["games"]
    assert chess["variants"] == [{"variant": "blitz", "periods": ["alltime", day, week]}]
    assert [v["variant"] for v in trivia["variants"]] == ["alltopics", "sports"]
    alltopics = trivia["variants"][0]["periods"]
    # All-time, then each kind newest first; day:2020-01-01 is past its retention: gone, as a
    # read of it would show an empty board.
    assert alltopics == [
        "alltime",
        day,
        _days_ago(now, 1),
        _days_ago(now, 3),
        week,
        _weeks_ago(now, 1),
    ]
    assert retention < now - datetime(2020, 1, 2, tzinfo=UTC)
    assert (await service.http.get("/v1/leaderboards/trivia/alltopics/day:2020-01-01")).json()[
        "entries"
    ] == []


async def test_a_listed_period_is_a_board_the_api_serves(service: Service) -> None:
    achieved = now_ms() - 2000
    await submit(service.http, player="ada", score=70, achieved_ms=achieved)
    listing = (await service.http.get("/v1/boards")).json()
    (variant,) = listing["games"][0]["variants"]
    for period in variant["periods"]:
        page = await service.http.get(f"/v1/leaderboards/trivia/{variant['variant']}/{period}")
        assert page.status_code == 200, page.text
        assert [e["playerId"] for e in page.json()["entries"]] == ["ada"], period
    # The default definition fans out to the day and the week, not the month.
    current = [p for p in listing["currentPeriods"] if not p.startswith("month:")]
    assert set(current) <= set(variant["periods"])


async def test_the_list_is_remembered_for_its_cache_time(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, board_list_cache_seconds=300)
    async with serve(settings) as running:
        assert (await running.http.get("/v1/boards")).json()["games"] == []
        await submit(running.http, player="p1", score=1)
        # Within the cache's time a new board is not listed yet: one registry read per task.
        assert (await running.http.get("/v1/boards")).json()["games"] == []
    async with serve(settings) as restarted:
        assert [g["game"] for g in (await restarted.http.get("/v1/boards")).json()["games"]] == [
            "trivia"
        ]


async def test_the_list_is_a_rate_limited_read(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, read_rate_per_second=0.001, read_burst=2)
    async with serve(settings) as running:
        first = await running.http.get("/v1/boards")
        assert first.headers["RateLimit"].startswith('"burst";r=1;')
        statuses = [(await running.http.get("/v1/boards")).status_code for _ in range(2)]
        assert statuses == [200, 429]


async def test_an_unknown_query_parameter_is_refused(service: Service) -> None:
    response = await service.http.get("/v1/boards", params={"game": "trivia"})
    assert response.status_code == 422
    assert "unknown query parameters: game" in response.json()["detail"]


def _days_ago(now: datetime, days: int) -> str:
    return Period.containing(PeriodKind.DAY, now - timedelta(days=days)).display


def _weeks_ago(now: datetime, weeks: int) -> str:
    return Period.containing(PeriodKind.WEEK, now - timedelta(weeks=weeks)).display
