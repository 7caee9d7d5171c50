"""Where a player stands: the rank of a key on a board, at a cost that does not grow with the board,
from the counters of the buckets and slots ahead and a capped COUNT (or a crowded slot's tie
counts) inside its own slot, all read in one round trip. The reads, and the simulation that chose
the layout: docs/ranking.md, docs/rank-simulation.md.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from app import telemetry
from app.domain.buckets import BucketLayout
from app.domain.ranks import (
    EstimatedRank,
    Rank,
    RankQuery,
    combine_shards,
    excluded_player,
    fine_spans,
    plan_rank,
    rank_from_reads,
    reads_consistently,
    shard_queries,
    span_of,
)
from app.domain.ties import TieCounts, mark_of
from app.services.memory import SharedLoads
from app.services.policies import RankingPolicy
from app.services.ports import RankReader, StoredTies, Stores
from app.services.ranking.mirror import HotBoardMirrors
from app.services.ranking.pages import player_count
from app.services.ranking.slot_builds import SlotBuilds
from app.services.ranking.summary import HotBoards


async def rank_of(reader: RankReader, layout: BucketLayout, query: RankQuery, *, cap: int) -> Rank:
    (rank,) = await rank_many(reader, layout, [query], cap=cap)
    return rank


async def rank_many(
    reader: RankReader, layout: BucketLayout, queries: Sequence[RankQuery], *, cap: int
) -> list[Rank]:
    """The rank of every query, with each board's coarse counters read once, and each bucket's
    fine counters once over the slots the queries on it need (two reads where those are apart).
    A query on a sharded board reads each of its partitions (``shard_queries``), all in the same
    round trip, and its rank is their sum (``combine_shards``)."""
    asked = [shard_queries(query) for query in queries]
    flat = [_marked(reader, layout, q) for qs in asked for q in qs]
    parts = await _rank_parts(reader, layout, flat, cap=cap)
    parts = await _in_crowded_slots(reader, layout, flat, parts, cap=cap)
    ranks: list[Rank] = []
    found = iter(parts)
    for query, shard_qs in zip(queries, asked, strict=True):
        mine = [next(found) for _ in shard_qs]
        if query.shards == 1:
            rank = mine[0][0]
        else:
            count = sum(counted for _, counted in mine) + (0 if query.on_board else 1)
            rank = combine_shards([r for r, _ in mine], count)
        telemetry.rank_answered(rank.kind)
        ranks.append(rank)
    return ranks


async def _rank_parts(
    reader: RankReader, layout: BucketLayout, queries: Sequence[RankQuery], *, cap: int
) -> list[tuple[Rank, int]]:
    """Each query's rank on its own board (or partition), with the players its coarse counters
    count there."""
    plans = [plan_rank(layout, query) for query in queries]
    boards = sorted({p.query.board_id for p in plans})
    spans = fine_spans(plans)
    consistent = {p.query.board_id for p in plans if reads_consistently(p)}
    # Another shard than every asking player's: a summary of a moment ago will do.
    recent = {p.query.board_id for p in plans} - {
        p.query.board_id for p in plans if not p.query.elsewhere
    }
    coarse_reads = [
        reader.coarse_counts(board, consistent=board in consistent, recent=board in recent)
        for board in boards
    ]
    fine_reads = [
        reader.fine_counts(
            board, bucket, lo, hi, consistent=board in consistent, recent=board in recent
        )
        for board, bucket, lo, hi in spans
    ]
    count_reads = [
        _nothing_between()
        if p.low > p.high  # the player's key starts their chunk (a cut by player id)
        else reader.count_keys(
            p.query.board_id, p.low, p.high, limit=cap, exclude_player=excluded_player(p.query)
        )
        for p in plans
    ]
    tie_reads = [
        _no_ties()
        if p.tie is None
        else reader.tie_counts(
            (p.query.board_id, p.bucket, p.slot),
            p.tie.b_prefix,
            c_prefix=None if p.tie.cut is None else p.tie.c_prefix,
            consistent=p.query.board_id in consistent,
            recent=p.query.board_id in recent,
        )
        for p in plans
    ]
    coarse_found, fine_found, counted, ties = await asyncio.gather(
        asyncio.gather(*coarse_reads),
        asyncio.gather(*fine_reads),
        asyncio.gather(*count_reads),
        asyncio.gather(*tie_reads),
    )
    coarse = dict(zip(boards, coarse_found, strict=True))
    fine = dict(zip(spans, fine_found, strict=True))
    return [
        (
            rank_from_reads(
                layout, p, coarse[p.query.board_id], fine[span_of(p, spans)], count, tie
            ),
            sum(coarse[p.query.board_id].values()),
        )
        for p, count, tie in zip(plans, counted, ties, strict=True)
    ]


def _marked(reader: RankReader, layout: BucketLayout, query: RankQuery) -> RankQuery:
    """A query on another shard than the player's, where the reader's summary holds that shard's
    crowded slot: where its tie counters would count the key (so the COUNT is of the key's chunk
    only)."""
    if not query.elsewhere or query.tie_mark is not None:
        return query
    held = reader.crowded_slot_held((query.board_id, *layout.slot_of(query.key.score)))
    return _counted_in(query, held) or query


def _counted_in(query: RankQuery, ties: StoredTies | None) -> RankQuery | None:
    """``query`` where its shard's slot tie counters ``ties`` count its key, if they have a
    grain."""
    if ties is None or ties.grain is None:
        return None
    return replace(query, tie_mark=mark_of(query.key, ties.grain, ties.cuts))


async def _in_crowded_slots(
    reader: RankReader,
    layout: BucketLayout,
    queries: Sequence[RankQuery],
    parts: list[tuple[Rank, int]],
    *,
    cap: int,
) -> list[tuple[Rank, int]]:
    """Each part on another shard than the player's that is a range for a crowded slot, asked
    again within that shard's tie counters (read into the summary for it), where the slot has
    them: a third round trip, only for those, and only while the summary does not hold them (a
    reader that keeps no summary has none to ask: ``crowded_slot`` is ``None``)."""
    crowded = [
        i
        for i, (query, (rank, _)) in enumerate(zip(queries, parts, strict=True))
        if query.elsewhere and query.tie_mark is None and isinstance(rank, EstimatedRank)
    ]
    if not crowded:
        return parts
    found = await asyncio.gather(
        *(
            reader.crowded_slot((queries[i].board_id, *layout.slot_of(queries[i].key.score)))
            for i in crowded
        )
    )
    again = [
        (i, counted)
        for i, ties in zip(crowded, found, strict=True)
        if (counted := _counted_in(queries[i], ties)) is not None
    ]
    if not again:
        return parts
    settled = await _rank_parts(reader, layout, [query for _, query in again], cap=cap)
    parts = list(parts)
    for (i, _), part in zip(again, settled, strict=True):
        parts[i] = part
    return parts


async def _nothing_between() -> tuple[int, bool]:
    return 0, False


async def _no_ties() -> TieCounts | None:
    return None


MAX_COUNTED_BOARDS = 10_000
"""Boards whose player count a task remembers for their pages."""


class Ranking:
    """A task's ranks: on a hot board from its mirror (``mirrors``), else read through its
    summary of hot boards (``summary``), either at most ``summary_s`` old, exact or an honest
    range; a range in a crowded slot asks ``builds`` for that slot's tie counters."""

    def __init__(self, stores: Stores, policy: RankingPolicy) -> None:
        self._stores = stores
        self.policy = policy
        self.summary = HotBoards(
            stores.ranks, policy.layout, ttl_s=policy.summary_s, ties=stores.counters
        )
        self.mirrors = HotBoardMirrors(stores, policy.layout, max_age_s=policy.summary_s)
        self.builds = SlotBuilds(stores, policy)
        self._counts: SharedLoads[str, int] = SharedLoads(
            max_entries=MAX_COUNTED_BOARDS, ttl_s=policy.player_count_s, clock=time.monotonic
        )

    async def rank_many(self, queries: Sequence[RankQuery]) -> list[Rank]:
        ranks, _ = await self.rank_many_at(queries)
        return ranks

    async def rank_many_at(
        self, queries: Sequence[RankQuery]
    ) -> tuple[list[Rank], datetime | None]:
        """The ranks, each from the task's mirror of its hot board where it holds one fresh (no
        read), else read; with when the reads they stand on began, where all came from mirrors
        (``None``: read now)."""
        mirrored = await asyncio.gather(*(self.mirrors.rank(query) for query in queries))
        asked = [query for query, held in zip(queries, mirrored, strict=True) if held is None]
        read = iter(
            await rank_many(self.summary, self.policy.layout, asked, cap=self.policy.cap)
            if asked
            else []
        )
        ranks: list[Rank] = []
        for held in mirrored:
            if held is None:
                ranks.append(next(read))
            else:
                telemetry.rank_answered(held.rank.kind)
                telemetry.rank_from_mirror()
                ranks.append(held.rank)
        found = [held.read_at for held in mirrored if held is not None]
        return ranks, None if asked or not found else min(found)

    async def rank_of(self, query: RankQuery) -> Rank:
        (rank,) = await self.rank_many([query])
        return rank

    async def rank_at(self, query: RankQuery) -> tuple[Rank, datetime | None]:
        ((rank,), read_at) = await self.rank_many_at([query])
        return rank, read_at

    def build_if_crowded(
        self, partition: str, query: RankQuery, rank: Rank, *, expires_at: int | None
    ) -> None:
        """A range: have the task build (or repair) the slot's tie counters, in the background
        (``SlotBuilds``, which first makes sure there is something to do). ``partition``: where
        the player's row is (a sharded board's partition: its slot is built there)."""
        if isinstance(rank, EstimatedRank):
            self.builds.wanted(partition, query.key, expires_at=expires_at)

    async def player_count(self, board_id: str, shards: int) -> int:
        """A board's players for its pages: a sharded board's from the summary, another's from its
        counters, read at most once every ``player_count_s`` per task (a display figure)."""
        if shards > 1:
            return await self.summary.player_count(board_id, shards)
        return await self._counts.get(
            board_id, lambda: player_count(self._stores.counters, board_id, shards)
        )

    async def close(self) -> None:
        """Stop the tie builds and mirror refreshes under way."""
        await self.mirrors.close()
        await self.builds.close()
