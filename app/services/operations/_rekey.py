"""Giving every row of a board the board's order: the repair of a board that holds rows of two
orders, which lists some rows out of place and ranks two players first. Each row of the other
order is given the key of the same score, time and player under the board's order (decision 0021).
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass

import structlog

from app.domain.buckets import BucketLayout
from app.domain.definitions import BoardDefinition
from app.domain.keys import Order, RankKey
from app.domain.periods import Board
from app.domain.shards import partition_ids
from app.services.ports import BoardIndex, Stores
from app.services.work import all_or_none, each_partition, persist

log = structlog.get_logger(__name__)

PAGE_SIZE = 1_000
WRITE_CONCURRENCY = 16


@dataclass(frozen=True)
class RekeyReport:
    board_id: str
    order: Order
    found: int
    """Rows of the other order the walk found."""
    rekeyed: int = 0
    skipped: int = 0
    """Rows that moved since the walk (written under the board's order since)."""


async def rekey_board(
    stores: Stores, layout: BucketLayout, board: Board, definition: BoardDefinition, *, apply: bool
) -> RekeyReport:
    """Find (and, with ``apply``, rekey) every row of the board not in the definition's order: on
    each of its partitions, for a sharded board (``app.domain.shards``)."""
    board_id, order = board.board_id, definition.order
    partitions = partition_ids(board_id, definition.shards)
    found = await each_partition(partitions, lambda _, pid: _strays(stores.index, pid, order))
    strays = [(pid, key) for pid, keys in zip(partitions, found, strict=True) for key in keys]
    if not apply or not strays:
        return RekeyReport(board_id, order, len(strays))
    for pid, bucket, slot in sorted({(pid, *layout.slot_of(k.score)) for pid, k in strays}):
        await persist(functools.partial(stores.counters.unseal_ties, pid, bucket, slot))
    gate = asyncio.Semaphore(WRITE_CONCURRENCY)

    async def rekey(pid: str, key: RankKey) -> bool:
        new = RankKey(key.score, key.achieved_at_ms, key.player_id, order)
        async with gate:
            return await persist(lambda: stores.standings.rekey(pid, key, new))

    done = await all_or_none(*(rekey(pid, k) for pid, k in strays))
    report = RekeyReport(board_id, order, len(strays), sum(done), len(done) - sum(done))
    log.info("board_rekeyed", board=board_id, order=order.value, rekeyed=report.rekeyed)
    return report


async def _strays(index: BoardIndex, partition: str, order: Order) -> list[RankKey]:
    """The keys of one partition's rows not in ``order``."""
    strays: list[RankKey] = []
    async for page in index.board_keys(partition, page_size=PAGE_SIZE):
        strays += [e.key for e in page if e.key.order_by is not order]
    return strays
