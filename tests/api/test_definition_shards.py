"""A definition's ``shards`` through the HTTP API (docs/boards.md, docs/openapi.json): put, shown
and listed; anything but 1, 2, 4, ..., 64 a 422 naming the field that stores nothing; and, as for
the order, a 409 that changes nothing where the variant's boards hold entries, on any of their
shards."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.keys import RankKey
from app.domain.models import CounterDelta, Entry, Standing, StandingWrite
from app.domain.periods import Board
from app.domain.shards import SHARD_COUNTS, partition_ids, player_partition
from app.services.registry import register_board
from app.store.client import Dynamo
from app.store.counters import CounterItems
from app.store.item_locks import ItemLocks
from tests.conftest import ADMIN_KEY, Service
from tests.support import lasting, now_ms, put_row, submit

ADMIN = {"Authorization": f"Bearer {ADMIN_KEY}"}
VARIANT = "/v1/games/trivia/variants/classic"
ALLTIME = Board.from_id("trivia#classic#alltime")
LAYOUT = BucketLayout()
REFUSED = "Input should be 1, 2, 4, 8, 16, 32 or 64"


async def define(http: httpx.AsyncClient, **fields: Any) -> httpx.Response:
    return await http.put(VARIANT, json={"periods": ["alltime"], **fields}, headers=ADMIN)


async def shown(http: httpx.AsyncClient) -> dict[str, Any]:
    response = await http.get(VARIANT)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


@pytest.mark.parametrize("shards", SHARD_COUNTS)
async def test_shards_are_put_shown_and_listed(service: Service, shards: int) -> None:
    http = service.http
    assert (await shown(http))["shards"] == 1  # the default, undefined
    put = await define(http, shards=shards)
    assert put.status_code == 200, put.text
    assert put.json()["shards"] == shards
    assert await shown(http) == put.json()
    listed = (await http.get("/v1/games/trivia/variants")).json()
    assert [(v["variant"], v["shards"]) for v in listed["variants"]] == [("classic", shards)]
    assert listed["default"]["shards"] == 1
    stored = await service.runtime.stores.definitions.get_definition("trivia", "classic")
    assert stored is not None
    assert stored.definition.shards == shards


async def test_shards_left_out_of_a_put_take_the_default(service: Service) -> None:
    assert (await define(service.http, shards=8)).json()["shards"] == 8
    again = await define(service.http)  # the body is the whole definition
    assert again.status_code == 200, again.text
    assert again.json()["shards"] == 1


@pytest.mark.parametrize("shards", [3, 0, 128, -4, 6, 4.5, True, "4", None, [4]])
async def test_shards_other_than_a_power_of_two_to_64_are_a_422_that_stores_nothing(
    service: Service, shards: Any
) -> None:
    http = service.http
    before = await define(http, shards=4)
    assert before.status_code == 200, before.text
    refused = await define(http, shards=shards, order="asc")
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["errors"] == [{"field": "shards", "message": REFUSED}]
    assert problem["detail"] == f"shards: {REFUSED}"
    assert await shown(http) == before.json()  # neither the shards nor the order changed


async def test_integral_shards_written_as_a_float_are_taken(service: Service) -> None:
    put = await define(service.http, shards=16.0)
    assert put.status_code == 200, put.text
    assert put.json()["shards"] == 16


async def test_shards_change_freely_while_the_boards_are_empty(service: Service) -> None:
    http = service.http
    for shards in (4, 64, 1, 2):
        changed = await define(http, shards=shards)
        assert changed.status_code == 200, changed.text
        assert (await shown(http))["shards"] == shards


async def test_shards_cannot_change_once_a_board_holds_an_entry(service: Service) -> None:
    http = service.http
    before = await define(http)
    assert before.status_code == 200, before.text
    posted = await submit(http, player="ann", score=10, achieved_ms=now_ms() - 1000)
    assert posted.status_code == 200, posted.text
    for shards in (2, 16):
        refused = await define(http, shards=shards)
        assert refused.status_code == 409, refused.text
        detail = refused.json()["detail"]
        assert ALLTIME.board_id in detail
        assert "their shards cannot change while they hold entries" in detail
    both = await define(http, order="asc", shards=4)
    assert both.status_code == 409, both.text
    assert "their order and shards cannot change" in both.json()["detail"]
    assert await shown(http) == before.json()
    # What may change still does: here the score format, the shards as they were.
    kept = await define(http, shards=1, scoreFormat="duration_ms")
    assert kept.status_code == 200, kept.text


async def _register(runtime: Runtime) -> None:
    definition = (await runtime.definitions.of("trivia", "classic")).definition
    await register_board(
        registry=runtime.stores.registry, board=ALLTIME, definition=lasting(definition.retention)
    )


async def test_an_entry_on_any_shard_of_a_sharded_board_holds_its_definition(
    service: Service,
) -> None:
    """The check asks every partition of the board under the shards in force: here the one entry
    is on the shard the player's id picks, none on the board's own id. It has no counters, so only
    the index can say it is there (the quick check; the next test holds the strong one)."""
    http = service.http
    sharded = await define(http, shards=8)
    assert sharded.status_code == 200, sharded.text
    partition = player_partition(ALLTIME.board_id, "ann", 8)
    assert partition != partition_ids(ALLTIME.board_id, 8)[0]  # not the first asked
    key = RankKey(10, now_ms() - 1000, "ann")
    await put_row(
        service.runtime,
        StandingWrite(
            board_id=partition,
            standing=Standing(partition, Entry(key), version=1),
            expected_version=None,
        ),
    )
    await _register(service.runtime)
    for change in ({"shards": 1}, {"shards": 16}, {"order": "asc", "shards": 8}):
        refused = await define(http, **change)
        assert refused.status_code == 409, (change, refused.text)
        assert ALLTIME.board_id in refused.json()["detail"]
    assert await shown(http) == sharded.json()


async def test_counters_on_a_shard_hold_the_definition_before_the_index_shows_the_entry(
    service: Service,
) -> None:
    """A submission's counters land with its row, but the index shows the entry a moment later:
    the strong check reads each shard's counters, so a change in that moment is refused too."""
    http = service.http
    sharded = await define(http, shards=4)
    assert sharded.status_code == 200, sharded.text
    partition = player_partition(ALLTIME.board_id, "ann", 4)
    runtime = service.runtime
    counters = CounterItems(
        Dynamo(runtime.client, in_flight=asyncio.Semaphore(4)),
        table=runtime.tables.scores,
        shards=runtime.stores.counters.coarse_shards(partition),
        locks=ItemLocks(),
    )
    planned = counters.changes(partition, (CounterDelta(*LAYOUT.slot_of(10), 1),), expires_at=None)
    await runtime.client.transact_write_items(TransactItems=planned.updates)  # type: ignore[arg-type]
    refused = await define(http, shards=1)
    assert refused.status_code == 409, refused.text
    assert "their shards cannot change" in refused.json()["detail"]
    assert await shown(http) == sharded.json()
