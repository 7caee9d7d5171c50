"""Small helpers for the API and integration tests."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from app.bootstrap import Runtime
from app.domain.buckets import BucketLayout
from app.domain.calendar import UTC_CALENDAR
from app.domain.clock import iso_ms, to_ms
from app.domain.definitions import BoardDefinition
from app.domain.keys import RankKey
from app.domain.models import Entry, Standing, StandingWrite
from app.domain.periods import Board
from app.domain.storage_keys import REGISTRY_PK
from app.services.operations import Operations, ReconcileReport
from app.services.operations._reconcile import recount_board
from app.services.policies import CountPolicy
from app.services.ports import BoardIndex, CounterStore, StandingStore, Stores
from app.store.client import Dynamo
from app.store.counters import CounterItems
from app.store.item_locks import ItemLocks
from app.store.standings import row_put
from tests.conftest import ADMIN_KEY, SUBMIT_KEY


def now_ms() -> int:
    return to_ms(datetime.now(UTC))


async def submit(
    http: httpx.AsyncClient,
    *,
    player: str,
    score: int,
    achieved_ms: int | None = None,
    key: str | None = SUBMIT_KEY,
    idempotency_key: str | None = None,
    game: str = "trivia",
    variant: str = "classic",
    **extra: Any,
) -> httpx.Response:
    body: dict[str, Any] = {"playerId": player, "score": score, "game": game, "variant": variant}
    if achieved_ms is not None:
        body["achievedAt"] = iso_ms(achieved_ms)
    body.update(extra)
    headers = {"Idempotency-Key": idempotency_key or uuid.uuid4().hex}
    if key is not None:
        headers["Authorization"] = f"Bearer {key}"
    return await http.post("/v1/scores", json=body, headers=headers)


async def seed_csv(
    http: httpx.AsyncClient, board_path: str, rows: list[tuple[str, int, int]]
) -> dict[str, Any]:
    """Seed ``board_path`` (``/v1/leaderboards/...``) with ``(playerId, score, achievedAt ms)``
    rows as CSV, with no grace period; the report."""
    text = "playerId,score,achievedAt\n" + "".join(f"{p},{s},{iso_ms(t)}\n" for p, s, t in rows)
    response = await http.post(
        f"{board_path}/seed",
        params={"graceSeconds": 0},
        content=text,
        headers={"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "text/csv"},
    )
    assert response.status_code == 200, response.text
    report: dict[str, Any] = response.json()
    return report


async def scores_items(runtime: Runtime) -> list[dict[str, Any]]:
    """Every item of the Scores table (small tables only)."""
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": runtime.tables.scores, "ConsistentRead": True}
    while True:
        page = await runtime.client.scan(**kwargs)
        items.extend(page.get("Items", []))
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def written_items(runtime: Runtime) -> list[dict[str, Any]]:
    """Every item of the Scores table but the board registry's: a task registers a board before it
    first reads the board's lease (decision 0031), so a submission refused after that has left
    the board registered, and nothing else."""
    return [i for i in await scores_items(runtime) if i["playerId"]["S"] != REGISTRY_PK]


async def counter_total(runtime: Runtime, board_id: str) -> tuple[int, int]:
    """(sum of coarse counters, sum of fine counters) of a board, from a scan."""
    coarse = fine = 0
    for item in await scores_items(runtime):
        pk = item["playerId"]["S"]
        if "n" not in item:
            continue  # not a counter: a grain, or the mark of counters part-written
        if pk.startswith(f"hist#{board_id}#c"):
            coarse += int(item["n"]["N"])
        elif pk.startswith(f"hist#{board_id}#f"):
            fine += int(item["n"]["N"])
    return coarse, fine


async def put_row(runtime: Runtime, write: StandingWrite) -> None:
    """A row and its counters in one transaction, shaped as a submission writes them (without the
    idempotency record a submission also writes): for tests that set a board up directly."""
    counters = CounterItems(
        Dynamo(runtime.client, in_flight=asyncio.Semaphore(4)),
        table=runtime.tables.scores,
        shards=runtime.stores.counters.coarse_shards(write.board_id),
        locks=ItemLocks(),
    )
    planned = counters.changes(write.board_id, write.counters, expires_at=write.expires_at)
    await runtime.client.transact_write_items(
        TransactItems=[row_put(runtime.tables.scores, write), *planned.updates]  # type: ignore[list-item]
    )


def operations(runtime: Runtime, *, stores: Stores | None = None, **policies: Any) -> Operations:
    """The runtime's ``Operations`` over other ``stores`` (a fault's), or with some of its
    ``Policies`` replaced (``seed=``, ``settle=``, ...)."""
    return Operations(
        stores or runtime.stores, replace(runtime.policies, **policies), runtime.definitions
    )


WIDEST_NAME = "\U00020000" * 64
"""The widest display name allowed: 64 characters (the schema's bound), each 4 bytes in UTF-8."""


def wide_player(place: int) -> str:
    """A 64-character player id (the longest allowed), for the board's ``place`` (0-based)."""
    return f"player-{place:04d}-".ljust(64, "x")


async def put_wide_rows(
    runtime: Runtime, board_id: str, count: int, *, achieved_ms: int = 1_700_000_000_000
) -> None:
    """``count`` rows as wide as a snapshot entry gets (a 64-character player id, ``WIDEST_NAME``,
    a country, a 12-digit score), ``wide_player(0)`` first, with BatchWriteItem: no counters, so
    the board's player count reads 0 (for tests that do not look at it)."""
    rows = [
        row_put(
            runtime.tables.scores,
            StandingWrite(
                board_id=board_id,
                standing=Standing(
                    board_id,
                    Entry(
                        RankKey(999_999_999_999 - place, achieved_ms, wide_player(place)),
                        WIDEST_NAME,
                        "NZ",
                    ),
                    version=1,
                ),
                expected_version=None,
            ),
        )["Put"]["Item"]
        for place in range(count)
    ]
    await Dynamo(runtime.client, in_flight=asyncio.Semaphore(4)).batch_write(
        "filling a wide board",
        table=runtime.tables.scores,
        requests=[{"PutRequest": {"Item": row}} for row in rows],
    )


async def reconciled(
    runtime: Runtime,
    board: Board,
    retention: timedelta,
    *,
    apply: bool = True,
    pass_gap_s: float = 0.0,
    index: BoardIndex | None = None,
    counters: CounterStore | None = None,
    tie_group: int | None = None,
    standings: StandingStore | None = None,
    shards: int = 1,
) -> ReconcileReport:
    """The reconciler's recount (``recount_board``) on the runtime's own stores (or the
    ``index``/``counters``/``standings`` given), with no gap between its passes unless one is
    asked for, and tie counters only with a ``tie_group``; ``shards``: the board's definition's.
    """
    s = runtime.stores
    stores = replace(
        s,
        index=index or s.index,
        counters=counters or s.counters,
        standings=standings or s.standings,
    )
    policy = CountPolicy(BucketLayout(), tie_group=tie_group, pass_gap_s=pass_gap_s)
    # A definition keeps whole days: a retention under one is only given for all-time boards.
    definition = BoardDefinition(retention_days=max(1, retention.days), shards=shards)
    return await recount_board(stores, policy, board, definition, apply=apply)


async def counts_by_partition(runtime: Runtime, board_id: str) -> dict[str, tuple[int, int, int]]:
    """For each partition of the board (the board, or each shard of a sharded one): (rows on
    RankIndex, the sum of its coarse counters, the sum of its fine counters), from a scan. Where
    the counters agree with the visible rows, the three are equal."""
    rows: dict[str, int] = {}
    coarse: dict[str, int] = {}
    fine: dict[str, int] = {}
    for item in await scores_items(runtime):
        pk, sk = item["playerId"]["S"], item["leaderboardId"]["S"]
        if "rankKey" in item and (sk == board_id or sk.startswith(f"{board_id}#")):
            rows[sk] = rows.get(sk, 0) + 1
        elif pk.startswith(f"hist#{board_id}") and "n" in item:
            partition, _, kind = pk.removeprefix("hist#").rpartition("#")
            if kind.startswith("c"):
                coarse[partition] = coarse.get(partition, 0) + int(item["n"]["N"])
            elif kind.startswith("f"):
                fine[partition] = fine.get(partition, 0) + int(item["n"]["N"])
    partitions = set(rows) | set(coarse) | set(fine)
    return {p: (rows.get(p, 0), coarse.get(p, 0), fine.get(p, 0)) for p in sorted(partitions)}


async def assert_counts_agree(runtime: Runtime, *board_ids: str) -> None:
    """Every partition's counters count exactly its rows on RankIndex (its visible rows)."""
    for board_id in board_ids:
        for partition, (rows, coarse, fine) in (
            await counts_by_partition(runtime, board_id)
        ).items():
            assert rows == coarse == fine, f"{partition}: {rows} rows, counters {coarse}/{fine}"


def lasting(retention: timedelta) -> BoardDefinition:
    """A definition (UTC, the default's periods) whose boards are kept ``retention`` after
    their period ends: what a registration or an expiry is reckoned by."""
    return BoardDefinition(retention_days=retention.days)


def utc_board(text: str, *, now: datetime) -> Board:
    """A board as an operator names it, its current period the UTC one."""
    game, variant, period = Board.named(text)
    return Board(game, variant, UTC_CALENDAR.parse(period, now=now))


def utc_start(board: Board) -> datetime:
    """When a dated board's period starts, in a UTC variant."""
    starts = UTC_CALENDAR.span(board.period).starts_at
    if starts is None:
        raise ValueError(f"{board.board_id} has no start")
    return starts
