"""A change of a variant's order and the submissions in flight under the old one cannot both land
(issue 27): the change holds the boards, waits out the submissions that read the old definition,
and checks the boards strongly; whichever lands, the board holds one order, and its page, its
ranks and its definition agree."""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta

import httpx
import pytest

from app.bootstrap import Runtime
from app.domain.periods import Board, Period, PeriodKind
from app.domain.storage_keys import coarse_pk
from app.services.registry import register_board
from app.store.tables import TableNames
from tests.conftest import ADMIN_KEY, make_settings, serve
from tests.faults import install
from tests.integration.test_reconcile import add_to_counter
from tests.support import lasting, now_ms, submit

VARIANT = "/v1/games/trivia/variants/classic"
BOARD = "/v1/leaderboards/trivia/classic/alltime"
ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
SCORES = {f"p{i}": score for i, score in enumerate((75, 10, 40, 90, 25, 60, 5, 50))}


async def _one_order(http: httpx.AsyncClient) -> str:
    """The board's page in its definition's order, every rank exact and the page's; the order."""
    order = (await http.get(VARIANT)).json()["order"]
    page = (await http.get(BOARD, params={"limit": 100})).json()
    scores = [e["score"] for e in page["entries"]]
    assert scores == sorted(scores, reverse=order == "desc"), (order, page["entries"])
    for place, entry in enumerate(page["entries"], start=1):
        assert entry["rank"] == place
        rank = (await http.get(f"{BOARD}/players/{entry['playerId']}")).json()["rank"]
        assert rank == {**rank, "kind": "exact", "rank": place}, (entry, rank)
    return str(order)


@pytest.mark.parametrize("change_leads_s", [-0.4, 0.0, 0.6])
async def test_a_change_of_order_racing_eight_submissions_leaves_one_order(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime, change_leads_s: float
) -> None:
    settings = make_settings(
        dynamo_endpoint,
        table_names,
        periods=["alltime"],
        definition_change_grace_seconds=1.5,
    )
    async with serve(settings) as service:
        http = service.http
        faults = install(service.runtime.client, dynamo_endpoint)
        faults.delay_s = 0.25  # every call slowed: the submissions are in flight when it comes

        async def change() -> httpx.Response:
            await asyncio.sleep(max(0.0, -change_leads_s))
            return await http.put(
                VARIANT, json={"order": "asc", "periods": ["alltime"]}, headers=ADMIN
            )

        async def submitted(player: str, score: int) -> httpx.Response:
            await asyncio.sleep(max(0.0, change_leads_s))
            return await submit(http, player=player, score=score, achieved_ms=now_ms() - 1_000)

        changed, *answers = await asyncio.gather(
            change(), *(submitted(p, s) for p, s in SCORES.items())
        )
        faults.delay_s = 0.0
        landed = [a for a in answers if a.status_code == 200]
        assert {a.status_code for a in answers} <= {200, 409}, [a.text for a in answers]
        assert changed.status_code in (200, 409), changed.text
        if changed.status_code == 200:
            # Every submission that read the old definition was waited out and found: none
            # landed in the old order; those that landed came after the change, in its order
            # (a change that leads finds no board registered and does not wait).
            assert all(a.json()["boards"][0]["best"] is not None for a in landed)
        else:
            assert "hold entries" in changed.json()["detail"]
            assert landed, "the change was refused with no entry on the board"
        order = await _one_order(http)
        assert order == ("asc" if changed.status_code == 200 else "desc")
        await _later_submissions_follow(http, order)


async def _later_submissions_follow(http: httpx.AsyncClient, order: str) -> None:
    """Submissions after the race land in the order the board now has (a refused one retried)."""
    for _ in range(40):
        response = await submit(http, player="late", score=33, achieved_ms=now_ms() - 500)
        if response.status_code != 409:
            break
        await asyncio.sleep(0.25)
    assert response.status_code == 200, response.text
    assert await _one_order(http) == order


async def test_a_task_holding_the_old_definition_is_refused_until_its_copy_lapses(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    settings = make_settings(
        dynamo_endpoint, table_names, periods=["alltime"], definition_cache_seconds=2
    )
    async with serve(settings) as definer, serve(settings) as other:
        assert (await other.http.get(BOARD)).status_code == 200  # it holds the old definition now
        changed = await definer.http.put(
            VARIANT, json={"order": "asc", "periods": ["alltime"]}, headers=ADMIN
        )
        assert changed.status_code == 200, changed.text
        first = await submit(other.http, player="ann", score=80, achieved_ms=now_ms() - 500)
        assert first.status_code == 409, first.text  # held, not written in the old order
        await _later_submissions_follow(other.http, "asc")


async def test_a_variant_no_one_has_submitted_to_is_defined_and_scored_within_seconds(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    """Nothing can have been written under another definition: the change neither waits out a
    grace nor refuses the first submissions under the definition it puts (issue 40: 11 s, then
    409s for as long again)."""
    settings = make_settings(
        dynamo_endpoint,
        table_names,
        periods=["alltime"],
        definition_change_grace_seconds=60,
        definition_cache_seconds=10,
    )
    async with serve(settings) as service:
        began = time.monotonic()
        changed = await service.http.put(
            VARIANT, json={"order": "asc", "periods": ["alltime"]}, headers=ADMIN
        )
        assert changed.status_code == 200, changed.text
        first = await submit(service.http, player="ann", score=80, achieved_ms=now_ms() - 500)
        assert first.status_code == 200, first.text
        took = time.monotonic() - began
        second = await submit(service.http, player="bob", score=30, achieved_ms=now_ms() - 400)
        assert second.status_code == 200, second.text
        assert await _one_order(service.http) == "asc"
    assert took < 30, f"{took:.1f} s from the definition to the first score"


async def test_a_variant_with_boards_registered_is_still_held_for_its_grace(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    # A board a task has registered may have a submission in flight under the old definition.
    board = Board("trivia", "classic", Period(PeriodKind.ALLTIME))
    await register_board(
        registry=runtime.stores.registry, board=board, definition=lasting(timedelta(30))
    )
    settings = make_settings(
        dynamo_endpoint, table_names, periods=["alltime"], definition_change_grace_seconds=2
    )
    async with serve(settings) as service:
        began = time.monotonic()
        changed = await service.http.put(
            VARIANT, json={"order": "asc", "periods": ["alltime"]}, headers=ADMIN
        )
        assert changed.status_code == 200, changed.text
        assert time.monotonic() - began >= 2


async def test_a_board_past_its_retention_does_not_stop_a_change_of_order(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    old = Board("trivia", "classic", Period(PeriodKind.DAY, "2025-01-06"))
    await register_board(
        registry=runtime.stores.registry, board=old, definition=lasting(timedelta(30))
    )
    await add_to_counter(runtime, coarse_pk(old.board_id, 0), 3, 2)  # rows TTL has not taken yet
    settings = make_settings(dynamo_endpoint, table_names, periods=["alltime", "day"])
    async with serve(settings) as service:
        changed = await service.http.put(
            VARIANT, json={"order": "asc", "periods": ["alltime", "day"]}, headers=ADMIN
        )
        assert changed.status_code == 200, changed.text
