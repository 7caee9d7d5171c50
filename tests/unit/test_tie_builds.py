"""A live tie build overtaken at every point of its work, against a board held in memory: whatever
submission lands wherever, no rank read afterwards is a wrong exact one, a sealed slot's counts are
the truth, and a second build makes every rank exact again (cuts included).

The board: rows (rank key, tie mark, version), fine counters and a crowded slot's tie items, changed
by submissions exactly as the service's transactions change them (``plan_board_write``), read by
the real ``rank_of`` and built by the real ``build_slot_ties``. Only the parts of the ports a build
and a rank use are here (``cast`` below says so)."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.buckets import BucketLayout
from app.domain.definitions import BoardDefinition, move
from app.domain.keys import Order, RankKey
from app.domain.models import Standing
from app.domain.periods import Board
from app.domain.ranks import ExactRank, RankQuery
from app.domain.submission import Submission, plan_board_write
from app.domain.ties import LEVEL_A, LEVEL_B, LEVEL_C, SlotTies, TieCounts
from app.errors import ConditionFailed
from app.services.policies import RankingPolicy
from app.services.ports import (
    BoardIndex,
    CounterItem,
    CounterStore,
    IndexedKey,
    SlotAddress,
    StandingStore,
    StoredCounters,
    StoredTies,
    TieItem,
)
from app.services.ranking.ranks import rank_of
from app.services.ranking.slot_builds import SlotToBuild, build_slot_ties
from tests.fakes import MemoryStores

LAYOUT = BucketLayout(coarse=8, fine=3)
BOARD = Board.from_id("trivia#classic#alltime")
CAP = 4
GROUP = CAP // 2
NOW = 1_800_000_000_000

Point = str
POINTS = ["walk", "tie read", "count write", "mark", "grain", "seal"]


class _Crashed(Exception):
    """The task building a slot died here."""


class MemoryBoard:
    """One board in memory, with a submission landing at ``point`` of a build (once)."""

    def __init__(self) -> None:
        self.rows: dict[str, Standing] = {}
        self.fine: Counter[tuple[int, int]] = Counter()
        self.ties: dict[tuple[int, int], dict[str, int]] = {}
        self.grains: dict[tuple[int, int], SlotTies] = {}
        self.sealed: set[tuple[int, int]] = set()
        self.point: Point | None = None
        self.land: Callable[[], Awaitable[None]] | None = None
        self.crash = False
        """The build's task dies right after the submission lands."""

    async def _at(self, point: Point) -> None:
        if point == self.point and self.land is not None:
            land, self.land = self.land, None
            await land()
            if self.crash:
                raise _Crashed(point)

    # ---- submissions, as the service's transaction writes them --------------------------------

    async def submit(
        self, player: str, score: int, at: int, *, seen: Mapping[Any, SlotTies] | None = None
    ) -> None:
        """``seen``: the grain items as the submission read them, where that was before the
        build now under way gave or changed any (a new player's: nothing else it read changed)."""
        held = self.rows.get(player)
        moved = move(
            BoardDefinition(),
            None if held is None else held.entry.key,
            score=score,
            achieved_at_ms=at,
            player_id=player,
        )
        slot = LAYOUT.slot_of(moved.key.score)
        planned = plan_board_write(
            BOARD,
            held,
            moved,
            (self.grains if seen is None else seen).get(slot),
            submission=Submission(player, score, "trivia", "classic", at),
            layout=LAYOUT,
            now_ms=NOW,
            definition=BoardDefinition(),
        )
        for delta in planned.write.counters:
            self.fine[(delta.bucket, delta.slot)] += delta.delta
            if delta.tie is not None:
                items = self.ties.setdefault((delta.bucket, delta.slot), {})
                for sk in delta.tie.sort_keys:
                    items[sk] = items.get(sk, 0) + delta.delta
        self.rows[player] = planned.write.standing

    # ---- BoardIndex: the walk ------------------------------------------------------------------

    async def board_keys(
        self, board_id: str, *, page_size: int, between: tuple[str, str] | None = None
    ) -> AsyncIterator[list[IndexedKey]]:
        await self._at("walk")
        found = sorted(
            (IndexedKey(r.entry.key, r.tie_mark) for r in self.rows.values()),
            key=lambda e: e.key.encode(),
        )
        if between is not None:
            found = [e for e in found if between[0] <= e.key.encode() <= between[1]]
        yield found

    # ---- CounterStore: what a build reads and writes -------------------------------------------

    async def read_ties(self, board_id: str, bucket: int, slot: int) -> StoredTies:
        await self._at("tie read")
        given = self.grains.get((bucket, slot))
        return StoredTies(
            None if given is None else given.grain,
            dict(self.ties.get((bucket, slot), {})),
            (bucket, slot) in self.sealed,
            cuts={} if given is None else dict(given.cuts),
        )

    async def read_counters(self, board_id: str, *, buckets: Any) -> StoredCounters:
        return StoredCounters(coarse={}, fine=dict(self.fine))

    async def set_counter(
        self, board_id: str, item: CounterItem, *, n: int, expected: int | None, expires_at: Any
    ) -> None:
        assert isinstance(item, TieItem)
        await self._at("count write")
        items = self.ties.setdefault((item.bucket, item.slot), {})
        if items.get(item.sort_key) != expected:
            raise ConditionFailed("changed since read")
        if n:
            items[item.sort_key] = n
        else:
            items.pop(item.sort_key, None)

    async def set_grain(
        self,
        board_id: str,
        bucket: int,
        slot: int,
        grain: int,
        *,
        cuts: Mapping[str, int] | None = None,
        expires_at: Any,
    ) -> bool:
        await self._at("grain")
        held = self.grains.get((bucket, slot))
        if held is not None and held.grain != grain:
            return False
        merged = dict(held.cuts) if held is not None else {}
        for chunk, length in (cuts or {}).items():
            if merged.get(chunk, length) != length:
                return False
            merged[chunk] = length
        self.grains[(bucket, slot)] = SlotTies(grain, merged)
        return True

    async def seal_ties(self, board_id: str, bucket: int, slot: int, *, expires_at: Any) -> None:
        await self._at("seal")
        self.sealed.add((bucket, slot))

    async def unseal_ties(self, board_id: str, bucket: int, slot: int) -> None:
        self.sealed.discard((bucket, slot))

    # ---- StandingStore: the marks ---------------------------------------------------------------

    async def mark_tie(self, board_id: str, key: RankKey, mark: int) -> bool:
        await self._at("mark")
        row = self.rows.get(key.player_id)
        if row is None or row.entry.key != key:
            return False
        self.rows[key.player_id] = Standing(
            row.board_id, row.entry, row.version + 1, row.expires_at, mark
        )
        return True

    # ---- RankReader: what a rank reads ----------------------------------------------------------

    async def coarse_counts(
        self, board_id: str, *, consistent: bool = False, recent: bool = False
    ) -> Mapping[int, int]:
        totals: Counter[int] = Counter()
        for (bucket, _), n in self.fine.items():
            totals[bucket] += n
        return dict(totals)

    async def fine_counts(
        self,
        board_id: str,
        bucket: int,
        first: int,
        last: int,
        *,
        consistent: bool = False,
        recent: bool = False,
    ) -> Mapping[int, int]:
        return {s: n for (b, s), n in self.fine.items() if b == bucket and first <= s <= last}

    async def count_keys(
        self, board_id: str, low: str, high: str, *, limit: int, exclude_player: str | None = None
    ) -> tuple[int, bool]:
        n = sum(
            1
            for r in self.rows.values()
            if low <= r.entry.key.encode() <= high and r.entry.key.player_id != exclude_player
        )
        return min(n, limit), n >= limit

    async def tie_counts(
        self,
        slot: SlotAddress,
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        consistent: bool = False,
        recent: bool = False,
    ) -> TieCounts:
        items = self.ties.get(slot[1:], {})

        def under(prefix: str) -> dict[str, int]:
            return {k: n for k, n in items.items() if k.startswith(prefix)}

        assert b_prefix.startswith(LEVEL_B)
        assert c_prefix is None or c_prefix.startswith(LEVEL_C)
        return TieCounts(
            under(LEVEL_A),
            under(b_prefix),
            slot[1:] in self.sealed,
            c={} if c_prefix is None else under(c_prefix),
        )

    async def crowded_slot(self, slot: SlotAddress) -> StoredTies | None:
        return None

    def crowded_slot_held(self, slot: SlotAddress) -> StoredTies | None:
        return None


def _truth(board: MemoryBoard) -> list[str]:
    return sorted(board.rows, key=lambda p: board.rows[p].entry.key.encode())


async def _checked(board: MemoryBoard) -> int:
    """Every exact rank true, every range holding the truth; how many are exact."""
    exact = 0
    for place, player in enumerate(_truth(board), start=1):
        row = board.rows[player]
        query = RankQuery(BOARD.board_id, row.entry.key, tie_mark=row.tie_mark)
        rank = await rank_of(board, LAYOUT, query, cap=CAP)
        if isinstance(rank, ExactRank):
            assert rank.rank == place, (player, rank, place)
            exact += 1
        else:
            assert rank.rank_range[0] <= place <= rank.rank_range[1], (player, rank, place)
    return exact


async def _build(board: MemoryBoard) -> None:
    stores = replace(
        MemoryStores().stores,
        index=cast("BoardIndex", board),
        counters=cast("CounterStore", board),
        standings=cast("StandingStore", board),
    )
    policy = RankingPolicy(LAYOUT, cap=CAP, build_group=GROUP, pass_gap_s=0)
    slot = (BOARD.board_id, *LAYOUT.slot_of(500))
    await build_slot_ties(stores, policy, SlotToBuild(slot, Order.DESC, expires_at=None))


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    point=st.sampled_from(POINTS),
    built=st.booleans(),
    crash=st.booleans(),
)
async def test_a_build_overtaken_or_cut_short_anywhere_leaves_no_wrong_exact_rank(
    seed: int, point: Point, built: bool, crash: bool
) -> None:
    rng = random.Random(seed)
    board = MemoryBoard()
    moment = NOW - 500_000
    players = [f"p{i:02d}" for i in range(rng.randrange(8, 20))]
    for player in players:  # one score, a third of them on one millisecond
        at = moment if rng.random() < 0.35 else NOW - rng.randrange(1_000_000)
        await board.submit(player, 500, at)
    if built:  # a rebuild: the slot was built before, then play went on
        await _build(board)
        for _ in range(3):
            await board.submit(f"n{rng.randrange(99):02d}", 500, moment)

    seen = dict(board.grains)  # what a submission read just before the build began

    async def land() -> None:
        # An improvement out of the slot, and a newcomer into it whose read of the slot's grain
        # item came before the build (so it counts itself as the slot stood then), or after.
        if rng.random() < 0.7:
            await board.submit(rng.choice(players), 900, NOW - 10)
        late = f"late{rng.randrange(99)}"
        at = moment - rng.randrange(3)
        await board.submit(late, 500, at, seen=seen if rng.random() < 0.5 else None)

    board.point, board.land, board.crash = point, land, crash
    try:
        await _build(board)
    except _Crashed:
        board.crash = False
    await _checked(board)
    await board.submit(f"stale{rng.randrange(99)}", 500, moment, seen=seen)  # read before it
    await _checked(board)
    await board.submit(f"after{rng.randrange(99)}", 500, moment)  # more play, no grain news
    await _checked(board)

    await _build(board)  # the next build makes every rank exact (all chunks cut to the group)
    if (LAYOUT.slot_of(500)) in board.sealed:
        slot = board.ties[LAYOUT.slot_of(500)]
        assert (
            sum(n for k, n in slot.items() if k.startswith(LEVEL_A))
            == board.fine[LAYOUT.slot_of(500)]
        )
    assert await _checked(board) == len(board.rows)
