"""A task's mirror of its hot boards: every key of a sharded board, sorted per shard, so that a
rank is a bisection in memory and a show's readers cost no read but their own row. A mirror is
kept fresh by reading each shard's coarse counters with their versions (a row that arrives in a
bucket moves its version: ``CounterStore.coarse_versions``) and reading again, from RankIndex,
only the buckets whose pair moved, for ``settle_s`` after they did and until the index shows as
many keys as the counters (the index lags the table). Why, and what it costs: decision 0033,
docs/scale.md.
"""

from __future__ import annotations

import asyncio
import time
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import structlog

from app import telemetry
from app.domain.buckets import BucketLayout
from app.domain.keys import Order, score_prefix
from app.domain.ranks import ExactRank, RankQuery, top_percent
from app.domain.shards import partition_ids, player_partition
from app.errors import LeaderboardError
from app.services.ports import BoardIndex, Stores

log = structlog.get_logger(__name__)

MAX_BOARDS = 16
"""Hot boards a task mirrors at once; the least recently read is let go first."""
IDLE_S = 600.0
"""A mirror no one has read for this long is let go (a day board past its day, a show over)."""
MAX_KEYS = 2_000_000
"""Most keys a task's mirrors hold in all (about 200 bytes each, so about 400 MB): the least
recently read mirror is let go first, and a board larger than that alone is read live."""
PAGE_SIZE = 1_000


def _utc_now() -> datetime:
    return datetime.now(UTC)


def bucket_key_range(layout: BucketLayout, bucket: int, order: Order) -> tuple[str, str] | None:
    """The first and last possible rank keys of a coarse bucket's scores, best first; ``None``
    for a bucket no integer score maps to."""
    low, high = layout.coarse_bounds(bucket)
    if low >= high:
        return None
    best, worst = (low, high - 1) if order is Order.ASC else (high - 1, low)
    last = score_prefix(worst, order)
    return score_prefix(best, order), last[:-1] + chr(ord(last[-1]) + 1)


def _player_of(key: str) -> str:
    """The player of an encoded rank key (its last field: ids never hold ``#``)."""
    return key.rsplit("#", 1)[1]


@dataclass(frozen=True)
class MirroredRank:
    rank: ExactRank
    read_at: datetime
    """When the reads the rank stands on began (the mirror is as of then, and the index lag)."""


@dataclass
class _Shard:
    """One partition's keys in board order, who holds which, and each bucket's pair as read."""

    keys: list[str] = field(default_factory=list)
    owner: dict[str, str] = field(default_factory=dict)
    doubled: set[str] = field(default_factory=set)
    """Players seen at two places (a move between two buckets read apart): asked live."""
    pairs: dict[int, tuple[int, int]] = field(default_factory=dict)
    moved_at: dict[int, float] = field(default_factory=dict)
    """Buckets whose pair moved, and when: read again until ``settle_s`` after."""

    def replace(self, between: tuple[str, str], found: list[str]) -> None:
        low, high = between
        start, stop = bisect_left(self.keys, low), bisect_right(self.keys, high)
        for key in self.keys[start:stop]:
            player = _player_of(key)
            if self.owner.get(player) == key:
                del self.owner[player]
        self.keys[start:stop] = found
        for key in found:
            player = _player_of(key)
            if player in self.owner and self.owner[player] != key:
                self.doubled.add(player)
            self.owner[player] = key

    def settle_doubles(self) -> None:
        """Forget a double once the player is held at one place again."""
        if not self.doubled:
            return
        places: dict[str, int] = {}
        for key in self.keys:
            player = _player_of(key)
            if player in self.doubled:
                places[player] = places.get(player, 0) + 1
        self.doubled = {player for player, n in places.items() if n > 1}


class BoardMirror:
    """Every key of one sharded board, per shard, as of ``read_at``."""

    def __init__(self, board_id: str, shards: int, order: Order) -> None:
        self.board_id = board_id
        self.shards = shards
        self.order = order
        self._shards = {pid: _Shard() for pid in partition_ids(board_id, shards)}
        self.read_at: datetime | None = None
        self.checked_at: float | None = None
        self.too_large = False
        self.asked_at = 0.0
        """When a rank was last asked of it (the task's clock)."""

    @property
    def size(self) -> int:
        return sum(len(shard.keys) for shard in self._shards.values())

    def rank(self, query: RankQuery) -> ExactRank | None:
        """``query.key``'s rank among every other player held, the asking player counted at it
        (whatever the mirror holds of them); ``None`` where the mirror cannot say it exactly."""
        key, player = query.key.encode(), query.key.player_id
        own = self._shards[player_partition(self.board_id, player, self.shards)]
        if player in own.doubled:
            return None
        ahead = sum(bisect_left(shard.keys, key) for shard in self._shards.values())
        count = self.size + 1
        held = own.owner.get(player)
        if held is not None:
            count -= 1
            if held < key:
                ahead -= 1
        return ExactRank(ahead + 1, top_percent(ahead + 1, count))

    async def refresh(
        self,
        stores: Stores,
        layout: BucketLayout,
        *,
        settle_s: float,
        clock: Callable[[], float],
        wall: Callable[[], datetime],
    ) -> int:
        """Read every shard's coarse pairs, then again the buckets whose pair moved (or moved
        within ``settle_s``); ``read_at`` and ``checked_at`` move only when every shard was read.
        The buckets read again."""
        started, read_at = clock(), wall()
        pairs = await asyncio.gather(
            *(stores.counters.coarse_versions(pid) for pid in self._shards)
        )
        if sum(n for found in pairs for n, _ in found.values()) > MAX_KEYS:
            self.too_large = True  # read live from now on, and nothing of it read or kept
            self._shards = {pid: _Shard() for pid in self._shards}
            return 0
        now = clock()
        reads: list[tuple[int, int, tuple[str, str], int]] = []  # shard, bucket, keys, players
        moved_at: list[dict[int, float]] = []
        for i, (shard, found) in enumerate(zip(self._shards.values(), pairs, strict=True)):
            moved = dict(shard.moved_at)
            for bucket in set(found) | set(shard.pairs):
                if found.get(bucket, (0, 0)) != shard.pairs.get(bucket, (0, 0)):
                    moved[bucket] = now
            for bucket in moved:
                between = bucket_key_range(layout, bucket, self.order)
                if between is not None:
                    reads.append((i, bucket, between, found.get(bucket, (0, 0))[0]))
            moved_at.append({b: at for b, at in moved.items() if now - at < settle_s})
        pids, shards = list(self._shards), list(self._shards.values())
        keys = await asyncio.gather(
            *(self._keys(stores.index, pids[i], between, n) for i, _, between, n in reads)
        )
        # Every read answered: only now is what they found the mirror's (a refresh cut short
        # leaves it as it was, and the next reads the same buckets again).
        for (i, bucket, between, players), found_keys in zip(reads, keys, strict=True):
            shards[i].replace(between, found_keys)
            if len(found_keys) != players:
                moved_at[i][bucket] = now  # the index still lags the counters: read it again
        for shard, found, moved in zip(shards, pairs, moved_at, strict=True):
            shard.pairs, shard.moved_at = dict(found), moved
            shard.settle_doubles()
        self.read_at, self.checked_at = read_at, started
        return len(reads)

    @staticmethod
    async def _keys(index: BoardIndex, pid: str, between: tuple[str, str], count: int) -> list[str]:
        if count <= 0:
            return []  # the table says the bucket is empty: the index may lag it, not lead it
        found: list[str] = []
        async for page in index.board_keys(pid, page_size=PAGE_SIZE, between=between):
            found.extend(indexed.key.encode() for indexed in page)
        return found


class HotBoardMirrors:
    """A task's mirrors of the sharded boards it is asked to rank on: an answer from a mirror at
    most ``max_age_s`` old, refreshed in the background once it is half that old (one refresh a
    board at a time); ``None`` from ``rank`` where there is none fresh (a task just started,
    a refresh that failed, a board too large), and the caller reads live. ``max_age_s`` of 0
    keeps none."""

    def __init__(
        self,
        stores: Stores,
        layout: BucketLayout,
        *,
        max_age_s: float,
        settle_s: float = 3.0,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._stores = stores
        self._layout = layout
        self._max_age_s = max_age_s
        self._settle_s = settle_s
        self._clock = clock
        self._wall = wall
        self._mirrors: OrderedDict[tuple[str, int, Order], BoardMirror] = OrderedDict()
        self._refreshing: dict[tuple[str, int, Order], asyncio.Task[None]] = {}

    async def rank(self, query: RankQuery) -> MirroredRank | None:
        if self._max_age_s <= 0 or query.shards <= 1:
            return None
        at = (query.board_id, query.shards, query.key.order_by)
        mirror = self._mirror(at)
        if mirror.too_large:
            return None
        age = self._age(mirror)
        if age is None or age >= self._max_age_s / 2:
            refresh = self._refresh(at, mirror)
            if age is not None and age >= self._max_age_s:
                # Too old to answer from: wait for the refresh, at most as long as it may be old.
                done, _ = await asyncio.wait({refresh}, timeout=self._max_age_s)
                if not done:
                    return None
        age = self._age(mirror)
        if age is None or age >= self._max_age_s or mirror.read_at is None:
            return None
        rank = mirror.rank(query)
        return None if rank is None else MirroredRank(rank, mirror.read_at)

    def _age(self, mirror: BoardMirror) -> float | None:
        return None if mirror.checked_at is None else self._clock() - mirror.checked_at

    def _mirror(self, at: tuple[str, int, Order]) -> BoardMirror:
        now = self._clock()
        while self._mirrors:  # least recently read first
            oldest, held = next(iter(self._mirrors.items()))
            if len(self._mirrors) <= MAX_BOARDS and now - held.asked_at < IDLE_S:
                break
            del self._mirrors[oldest]
        mirror = self._mirrors.get(at)
        if mirror is None:
            mirror = self._mirrors[at] = BoardMirror(*at)
        mirror.asked_at = now
        self._mirrors.move_to_end(at)
        return mirror

    def _refresh(self, at: tuple[str, int, Order], mirror: BoardMirror) -> asyncio.Task[None]:
        running = self._refreshing.get(at)
        if running is not None and not running.done():
            return running
        task = asyncio.ensure_future(self._run_refresh(mirror))
        self._refreshing[at] = task
        return task

    async def _run_refresh(self, mirror: BoardMirror) -> None:
        try:
            buckets = await mirror.refresh(
                self._stores,
                self._layout,
                settle_s=self._settle_s,
                clock=self._clock,
                wall=self._wall,
            )
        except LeaderboardError as exc:  # throttled, counts incomplete: read live meanwhile
            log.info("mirror_refresh_failed", board=mirror.board_id, error=exc.detail)
            telemetry.mirror_refreshed(ok=False, buckets_read=0, keys_held=self._keys_held())
            return
        self._fit(mirror)
        telemetry.mirror_refreshed(ok=True, buckets_read=buckets, keys_held=self._keys_held())

    def _fit(self, kept: BoardMirror) -> None:
        """Let the least recently read mirrors go while all hold more than ``MAX_KEYS``."""
        for at, mirror in list(self._mirrors.items()):
            if self._keys_held() <= MAX_KEYS:
                return
            if mirror is not kept:
                del self._mirrors[at]

    def _keys_held(self) -> int:
        return sum(mirror.size for mirror in self._mirrors.values())

    def held(self) -> list[BoardMirror]:
        """The mirrors held, least recently read first."""
        return list(self._mirrors.values())

    async def settled(self) -> None:
        """Until every refresh under way has finished (tests)."""
        await asyncio.gather(*self._refreshing.values(), return_exceptions=True)

    async def close(self) -> None:
        for task in self._refreshing.values():
            task.cancel()
        await asyncio.gather(*self._refreshing.values(), return_exceptions=True)
        self._refreshing.clear()
