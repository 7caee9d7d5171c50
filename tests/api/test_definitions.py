"""Board definitions through the HTTP API (docs/boards.md): defining, reading and listing a
variant's definition, each order and operator end to end (submit, top, rank, around, standings,
rankDelta), month boards, the 409 for reordering history, refused undefined variants, and the bad
input that must change nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from app.bootstrap import Runtime
from app.domain.clock import from_ms
from app.domain.keys import SCORE_CEILING
from app.domain.periods import Period, PeriodKind
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, SUBMIT_KEY, Service, make_settings, serve
from tests.support import counter_total, now_ms, submit

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
VARIANT = "/v1/games/trivia/variants/classic"
BOARD = "/v1/leaderboards/trivia/classic/alltime"


async def define(http: httpx.AsyncClient, path: str = VARIANT, **fields: Any) -> httpx.Response:
    return await http.put(path, json=fields, headers=ADMIN)


async def top(http: httpx.AsyncClient, board: str = BOARD) -> list[tuple[str, int, int | None]]:
    response = await http.get(board, params={"limit": 100})
    assert response.status_code == 200, response.text
    return [(e["playerId"], e["score"], e["rank"]) for e in response.json()["entries"]]


async def post(http: httpx.AsyncClient, player: str, score: int, t: int, **extra: Any) -> Any:
    response = await submit(http, player=player, score=score, achieved_ms=t, **extra)
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_definition_is_put_read_and_listed(service: Service) -> None:
    http = service.http
    shown = await http.get(VARIANT)
    assert shown.status_code == 200
    assert shown.json() == {
        "game": "trivia",
        "variant": "classic",
        "order": "desc",
        "operator": "best",
        "periods": ["alltime", "day", "week"],
        "retentionDays": 30,
        "scoreFormat": "integer",
        "shards": 1,
        "timeZone": "UTC",
        "seasons": [],
        "scoreMin": None,
        "scoreMax": None,
        "cohortSize": None,
        "joinRequired": False,
        "maxEntrants": None,
        "maxAttempts": None,
        "tiers": [],
        "defined": False,
        "definedAt": None,
    }
    put = await define(http, order="asc", periods=["alltime", "month"], retentionDays=90)
    assert put.status_code == 200, put.text
    body = put.json()
    assert (body["order"], body["operator"], body["periods"], body["retentionDays"]) == (
        "asc",
        "best",
        ["alltime", "month"],
        90,
    )
    assert body["defined"] is True
    assert body["definedAt"].endswith("Z")
    assert (await http.get(VARIANT)).json() == body
    await define(http, "/v1/games/trivia/variants/weekly", operator="sum")
    listed = (await http.get("/v1/games/trivia/variants")).json()
    assert [v["variant"] for v in listed["variants"]] == ["classic", "weekly"]
    assert listed["default"]["order"] == "desc"
    assert (await http.get("/v1/games/chess/variants")).json()["variants"] == []


@pytest.mark.parametrize(
    ("headers", "status"),
    [({}, 401), ({"Authorization": f"Bearer {SUBMIT_KEY}"}, 403)],
)
async def test_defining_needs_the_admin_scope(
    service: Service, headers: dict[str, str], status: int
) -> None:
    response = await service.http.put(VARIANT, json={"order": "asc"}, headers=headers)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/problem+json")
    assert (await service.http.get(VARIANT)).json()["defined"] is False


@pytest.mark.parametrize(
    "body",
    [
        {"order": "up"},
        {"operator": "max"},
        {"periods": ["year"]},
        {"periods": []},
        {"periods": ["day", "day"]},
        {"retentionDays": 0},
        {"retentionDays": 3651},
        {"retentionDays": 1.5},
        {"retentionDays": "30"},
        {"ranking": "asc"},
        ["asc"],
    ],
)
async def test_a_bad_definition_is_a_422_that_changes_nothing(service: Service, body: Any) -> None:
    response = await service.http.put(VARIANT, json=body, headers=ADMIN)
    assert response.status_code == 422, response.text
    problem = response.json()
    assert problem["status"] == 422
    assert problem["detail"]
    assert (await service.http.get(VARIANT)).json()["defined"] is False


@pytest.mark.parametrize(
    "path", ["/v1/games/tri%23via/variants/x", "/v1/games/idem/variants/x", VARIANT + "%20x"]
)
async def test_a_malformed_or_reserved_name_is_a_422(service: Service, path: str) -> None:
    response = await service.http.put(path, json={}, headers=ADMIN)
    assert response.status_code == 422, response.text


async def test_asc_boards_rank_the_lowest_first_and_the_earlier_on_a_tie(service: Service) -> None:
    http = service.http
    await define(http, order="asc", periods=["alltime"])
    t = now_ms() - 60_000
    first = await post(http, "ann", 61_500, t)
    assert first["boards"][0]["rankAfter"] == 1
    await post(http, "bob", 59_900, t + 1)
    await post(http, "cat", 61_500, t + 2)  # ties ann, later: behind her
    slower = await post(http, "bob", 70_000, t + 3)  # slower than his best: kept
    assert slower["boards"][0]["improved"] is False
    assert slower["boards"][0]["best"] == 59_900
    faster = await post(http, "ann", 59_000, t + 4)
    assert faster["boards"][0]["improved"] is True
    assert (faster["boards"][0]["rankBefore"], faster["boards"][0]["rankAfter"]) == (2, 1)
    assert await top(http) == [("ann", 59_000, 1), ("bob", 59_900, 2), ("cat", 61_500, 3)]
    rank = (await http.get(f"{BOARD}/players/cat")).json()["rank"]
    assert (rank["kind"], rank["rank"]) == ("exact", 3)
    around = (await http.get(f"{BOARD}/players/bob/around", params={"before": 1})).json()
    assert [e["playerId"] for e in around["entries"]] == ["ann", "bob", "cat"]
    standings = (await http.get("/v1/players/cat/standings")).json()["boards"]
    assert [(b["best"], b["rank"]["rank"]) for b in standings] == [(61_500, 3)]


async def test_latest_boards_take_the_latest_achieved_value_up_or_down(service: Service) -> None:
    http = service.http
    await define(http, operator="latest", periods=["alltime"])
    t = now_ms() - 60_000
    await post(http, "ann", 1500, t)
    await post(http, "bob", 1400, t)
    fell = await post(http, "ann", 1300, t + 10)
    assert fell["boards"][0]["improved"] is True  # "changed": the value is this submission's
    assert (fell["boards"][0]["best"], fell["boards"][0]["previousBest"]) == (1300, 1500)
    assert await top(http) == [("bob", 1400, 1), ("ann", 1300, 2)]
    older = await post(http, "ann", 2000, t + 5)  # achieved before the stored one: no change
    assert older["boards"][0]["improved"] is False
    assert older["boards"][0]["best"] == 1300
    assert await top(http) == [("bob", 1400, 1), ("ann", 1300, 2)]
    entry = (await http.get(f"{BOARD}/players/ann")).json()["entry"]
    assert entry["score"] == 1300


async def test_sum_boards_add_each_accepted_submission_once(service: Service) -> None:
    http = service.http
    await define(http, operator="sum", periods=["alltime"])
    t = now_ms() - 60_000
    await post(http, "ann", 10, t, idempotency_key="round-1")
    replay = await submit(http, player="ann", score=10, achieved_ms=t, idempotency_key="round-1")
    assert replay.headers.get("Idempotent-Replayed") == "true"
    added = await post(http, "ann", 5, t + 1, idempotency_key="round-2")
    assert (added["boards"][0]["best"], added["boards"][0]["previousBest"]) == (15, 10)
    await post(http, "bob", 15, t + 5)  # reaches 15 after ann did: behind her
    assert await top(http) == [("ann", 15, 1), ("bob", 15, 2)]
    late = await post(http, "bob", 0, t + 9)  # adds nothing, changes nothing
    assert late["boards"][0]["improved"] is False
    assert await counter_total(service.runtime, "trivia#classic#alltime") == (2, 2)


async def test_a_total_past_the_ceiling_is_a_422_that_changes_nothing(service: Service) -> None:
    http = service.http
    await define(http, operator="sum", periods=["alltime"])
    t = now_ms() - 60_000
    await post(http, "ann", SCORE_CEILING - 10, t)
    over = await submit(http, player="ann", score=10, achieved_ms=t + 1)
    assert over.status_code == 422, over.text
    assert "total" in over.json()["detail"]
    assert await top(http) == [("ann", SCORE_CEILING - 10, 1)]
    assert (await post(http, "ann", 9, t + 2))["boards"][0]["best"] == SCORE_CEILING - 1


async def test_month_boards_are_fanned_out_to_and_read(service: Service) -> None:
    http = service.http
    await define(http, periods=["alltime", "month"])
    t = now_ms() - 60_000
    document = await post(http, "ann", 10, t)
    month = Period.containing(PeriodKind.MONTH, from_ms(t))
    assert sorted(b["period"] for b in document["boards"]) == sorted(["alltime", month.display])
    assert await top(http, f"/v1/leaderboards/trivia/classic/{month.display}") == [("ann", 10, 1)]
    assert await top(http, "/v1/leaderboards/trivia/classic/month") == [("ann", 10, 1)]
    day = await http.get("/v1/leaderboards/trivia/classic/day")
    assert day.status_code == 404, day.text  # not a period of it


async def test_order_and_operator_are_fixed_once_boards_hold_entries(service: Service) -> None:
    http = service.http
    assert (await define(http, order="asc")).status_code == 200  # empty: free to change
    assert (await define(http, order="desc")).status_code == 200
    await post(http, "ann", 10, now_ms() - 60_000)
    for change in ({"order": "asc"}, {"operator": "sum"}):
        refused = await define(http, **change)
        assert refused.status_code == 409, refused.text
        assert "hold entries" in refused.json()["detail"]
    assert (await http.get(VARIANT)).json()["order"] == "desc"
    widened = await define(http, periods=["alltime", "day", "week", "month"], retentionDays=60)
    assert widened.status_code == 200, widened.text
    assert await top(http, "/v1/leaderboards/trivia/classic/month") == []  # starts empty
    await post(http, "bob", 20, now_ms() - 1000)
    assert [p for p, _, _ in await top(http, "/v1/leaderboards/trivia/classic/month")] == ["bob"]


@pytest.fixture
async def refusing(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> AsyncIterator[Service]:
    settings = make_settings(dynamo_endpoint, table_names, undefined_boards="refuse")
    async with serve(settings) as running:
        yield running


async def test_refused_undefined_variants_are_404_to_read_and_422_to_submit(
    refusing: Service,
) -> None:
    http = refusing.http
    for path in (BOARD, f"{BOARD}/players/ann", f"{BOARD}/players?ids=ann", VARIANT):
        response = await http.get(path)
        assert response.status_code == 404, (path, response.text)
        assert "PUT /v1/games/trivia/variants/classic" in response.json()["detail"]
    typo = await submit(http, player="ann", score=10, achieved_ms=now_ms() - 1000)
    assert typo.status_code == 422
    assert typo.json()["errors"][0]["field"] == "variant"
    assert (await http.get("/v1/games/trivia/variants")).json() == {
        "game": "trivia",
        "variants": [],
        "default": None,
    }
    assert (await define(http, periods=["alltime"])).status_code == 200
    await post(http, "ann", 10, now_ms() - 1000)
    assert await top(http) == [("ann", 10, 1)]


async def test_a_new_task_holds_the_definitions_before_it_is_ready_and_never_reads_one_on_a_request(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    # One task defines the variant and fills its boards (holding no definition, it lets the
    # boards go at once); another, holding definitions, starts afterwards.
    async with serve(make_settings(dynamo_endpoint, table_names)) as first:
        assert (await define(first.http, order="asc")).status_code == 200
        await post(first.http, "ann", 50, now_ms() - 2000)
    settings = make_settings(dynamo_endpoint, table_names, definition_cache_seconds=10)
    async with serve(settings) as task:
        operations: list[str] = []

        def count(model: Any, **_: Any) -> None:
            operations.append(model.name)

        task.runtime.client.meta.events.register("before-call.dynamodb", count)
        for _ in range(100):
            if (await task.http.get("/readyz")).status_code == 200:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the new task did not become ready")
        operations.clear()
        await post(task.http, "bob", 40, now_ms() - 1000)
        await post(task.http, "cy", 60, now_ms() - 1000)
        assert await top(task.http) == [("bob", 40, 1), ("ann", 50, 2), ("cy", 60, 3)]  # asc
        assert "GetItem" not in operations, operations
        assert operations.count("BatchGetItem") == 2  # each submission's one read


async def test_a_task_that_guessed_a_new_variant_s_rules_wrong_writes_by_the_definition(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """A task that has never seen a variant submits under the default while its definition is read
    beside the first read; here the definition (asc, defined on another task) says otherwise, and
    the submission is made again under it before anything is written."""
    holding = make_settings(dynamo_endpoint, table_names, definition_cache_seconds=10)
    async with (
        serve(make_settings(dynamo_endpoint, table_names)) as definer,
        serve(holding) as other,
    ):
        assert (await define(definer.http, order="asc", periods=["alltime"])).status_code == 200
        assert not other.runtime.definitions.holds("trivia", "classic")
        await post(other.http, "ann", 50, now_ms() - 2000)
        await post(other.http, "bob", 40, now_ms() - 1000)
        assert await top(other.http) == [("bob", 40, 1), ("ann", 50, 2)]
        day = f"/v1/leaderboards/trivia/classic/day:{from_ms(now_ms()).date().isoformat()}"
        # The default's day board: not a period of the variant, and never registered.
        assert (await other.http.get(day)).status_code == 404


async def test_a_first_submission_to_a_variant_reads_its_definition_then_registers_its_boards(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(dynamo_endpoint, table_names, definition_cache_seconds=10)
    async with serve(settings) as service:
        await _reads_beside(service)


async def _reads_beside(service: Service) -> None:
    names: list[str] = []

    def started(model: Any, **_: Any) -> None:
        names.append(model.name)

    service.runtime.client.meta.events.register("before-call.dynamodb", started)
    await post(service.http, "ann", 50, now_ms() - 1000, rankDelta=False)
    # The definition first, so that only the boards it names are registered; the registry before
    # the state read, so that a ranking change finding no board registered knows none is being
    # written (decision 0031); then the transaction.
    assert names == ["GetItem", *["PutItem"] * 3, "BatchGetItem", "TransactWriteItems"], names
    await post(service.http, "bob", 40, now_ms() - 1000, rankDelta=False)
    # Held and registered from then on: the state read and the transaction alone.
    assert names[6:] == ["BatchGetItem", "TransactWriteItems"], names


async def test_a_definition_says_how_its_scores_read_and_every_board_read_repeats_it(
    service: Service,
) -> None:
    assert (await service.http.get(VARIANT)).json()["scoreFormat"] == "integer"  # the default
    laps = await define(service.http, order="asc", scoreFormat="duration_ms")
    assert laps.status_code == 200, laps.text
    assert laps.json()["scoreFormat"] == "duration_ms"
    await post(service.http, "ann", 54_610, now_ms() - 2000)
    await post(service.http, "bob", 61_002, now_ms() - 1000)
    reads = [
        BOARD,
        f"{BOARD}/players/ann",
        f"{BOARD}/players/ann/around",
        f"{BOARD}/players?ids=ann,bob",
    ]
    for read in reads:
        answer = await service.http.get(read)
        assert answer.status_code == 200, (read, answer.text)
        assert answer.json()["scoreFormat"] == "duration_ms", read
    # Display only: it changes at once on a board that holds entries, and reorders nothing.
    back = await define(service.http, order="asc", scoreFormat="integer")
    assert back.status_code == 200, back.text
    assert await top(service.http) == [("ann", 54_610, 1), ("bob", 61_002, 2)]
    refused = await define(service.http, order="asc", scoreFormat="minutes")
    assert refused.status_code == 422
    assert refused.json()["errors"][0]["field"] == "scoreFormat"
