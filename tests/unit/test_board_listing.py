"""The board list's use case over a fake registry: its grouping and order, what it leaves out, and
the per-process memory of the registry's rows."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import cast

import pytest

from app.domain.buckets import BucketLayout
from app.domain.definitions import BoardDefinition
from app.errors import InvalidCursor
from app.services import registry as registry_module
from app.services.policies import ReadPolicy
from app.services.ports import BoardRegistry, RegisteredBoard, RegistryPage, StoredDefinition
from app.services.reads._asks import PageAsk
from app.services.reads._listing import BoardListing, live_boards
from app.services.registry import RegisteredBoards
from app.services.rules.held import Definitions
from tests.fakes import MemoryStores

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)
SECRET = b"a cursor key for the listing tests"


class FakeDefinitions:
    """The definition store: ``trivia/long`` keeps its boards 90 days; the rest follow the
    default (30)."""

    async def get_definition(self, game: str, variant: str) -> StoredDefinition | None:
        if (game, variant) != ("trivia", "long"):
            return None
        return StoredDefinition(game, variant, BoardDefinition(retention_days=90), "2026-11-01")

    async def definitions_of(self, game: str) -> list[StoredDefinition]:
        raise NotImplementedError

    async def put_definition(
        self, game: str, variant: str, definition: BoardDefinition
    ) -> StoredDefinition:
        raise NotImplementedError


DEFINITIONS = Definitions(FakeDefinitions(), default=BoardDefinition(retention_days=30), ttl_s=0)


class FakeRegistry:
    def __init__(self, *board_ids: str) -> None:
        self.board_ids = list(board_ids)
        self.reads = 0
        self.fail_next = False
        self.gate: asyncio.Event | None = None

    async def register_board(self, board_id: str, *, expires_at: int | None) -> bool:
        self.board_ids.append(board_id)
        return True

    async def registered_boards(self, *, prefix: str = "") -> list[RegisteredBoard]:
        self.reads += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise RuntimeError("the registry did not answer")
        return [RegisteredBoard(b, None, None) for b in self.board_ids]

    async def registered_page(self, *, after: str, limit: int) -> RegistryPage:
        """As DynamoDB's Query pages it: in id order, ``limit`` rows at most."""
        self.reads += 1
        if self.gate is not None:
            await self.gate.wait()
        ids = sorted(b for b in self.board_ids if b > after)
        return RegistryPage(
            [RegisteredBoard(b, None, None) for b in ids[:limit]],
            ids[limit - 1] if len(ids) > limit else None,
        )


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _listed(listing: BoardListing) -> list[tuple[str, str, list[str]]]:
    return [
        (g.game, v.variant, [p.display for p in v.periods])
        for g in listing.games
        for v in g.variants
    ]


async def _listing(
    registry: FakeRegistry,
    *,
    cache: RegisteredBoards,
    now: datetime,
    limit: int = 100,
    cursor: str | None = None,
) -> BoardListing:
    stores = replace(MemoryStores().stores, registry=cast("BoardRegistry", registry))
    policy = ReadPolicy(BucketLayout(), 2000, cursor_secret=SECRET)
    return await live_boards(stores, policy, DEFINITIONS, cache, PageAsk(limit, cursor, now))


async def test_boards_group_by_game_and_variant_alltime_first_then_newest_first() -> None:
    registry = FakeRegistry(
        "trivia#b#week#2026-W48",
        "trivia#b#day#2026-11-29",
        "trivia#b#alltime",
        "trivia#b#day#2026-12-01",
        "trivia#b#week#2026-W49",
        "trivia#a#day#2026-12-01",
        "chess#blitz#alltime",
        "trivia#b#day#2026-10-01",  # closed 2026-10-02, expired 30 days later: left out
        "trivia#b#week#2026-W30",  # likewise
        "trivia#long#day#2026-10-01",  # its variant keeps boards 90 days: listed
        "not a board id",  # a row this version cannot read: left out
        "trivia#b#month#2026-12",
        "trivia#b#year#2026",  # a kind this version does not know: left out
    )
    listing = await _listing(registry, cache=RegisteredBoards(ttl_s=0), now=NOW)
    assert _listed(listing) == [
        ("chess", "blitz", ["alltime"]),
        ("trivia", "a", ["day:2026-12-01"]),
        (
            "trivia",
            "b",
            [
                "alltime",
                "day:2026-12-01",
                "day:2026-11-29",
                "week:2026-W49",
                "week:2026-W48",
                "month:2026-12",
            ],
        ),
        ("trivia", "long", ["day:2026-10-01"]),
    ]
    assert [p.display for p in listing.current] == [
        "day:2026-12-01",
        "week:2026-W49",
        "month:2026-12",
    ]


async def test_a_board_leaves_the_list_when_it_expires_even_while_remembered() -> None:
    registry = FakeRegistry("trivia#b#day#2026-11-01")
    cache = RegisteredBoards(ttl_s=300, clock=Clock())
    expires = datetime(2026, 12, 2, tzinfo=UTC)  # the day's end plus 30 days
    before = await _listing(registry, cache=cache, now=expires - timedelta(seconds=1))
    after = await _listing(registry, cache=cache, now=expires)
    assert _listed(before) == [("trivia", "b", ["day:2026-11-01"])]
    assert _listed(after) == []
    assert registry.reads == 1


async def test_the_registry_is_read_once_per_cache_time_and_shared_by_concurrent_requests() -> None:
    registry = FakeRegistry("trivia#a#alltime")
    clock = Clock()
    cache = RegisteredBoards(ttl_s=10, clock=clock)
    registry.gate = asyncio.Event()
    waiting = [asyncio.ensure_future(cache.of(registry)) for _ in range(5)]
    await asyncio.sleep(0)
    registry.gate.set()
    assert all(len(boards) == 1 for boards in await asyncio.gather(*waiting))
    assert registry.reads == 1

    await registry.register_board("trivia#b#alltime", expires_at=None)
    clock.now = 9.9
    assert len(await cache.of(registry)) == 1  # remembered
    clock.now = 10.0
    assert len(await cache.of(registry)) == 2  # read again
    assert registry.reads == 2


async def test_a_failed_read_is_not_remembered() -> None:
    registry = FakeRegistry("trivia#a#alltime")
    cache = RegisteredBoards(ttl_s=10, clock=Clock())
    registry.fail_next = True
    with pytest.raises(RuntimeError):
        await cache.of(registry)
    assert len(await cache.of(registry)) == 1
    assert registry.reads == 2


async def test_a_cache_time_of_zero_reads_every_time() -> None:
    registry = FakeRegistry("trivia#a#alltime")
    cache = RegisteredBoards(ttl_s=0)
    for _ in range(3):
        await cache.of(registry)
    assert registry.reads == 3


async def _all_pages(registry: FakeRegistry, *, limit: int) -> list[list[str]]:
    """The variants of each page, following ``nextCursor`` to the end."""
    pages: list[list[str]] = []
    cursor = None
    while True:
        listing = await _listing(
            registry, cache=RegisteredBoards(ttl_s=0), now=NOW, limit=limit, cursor=cursor
        )
        pages.append([f"{g}/{v}" for g, v, _ in _listed(listing)])
        if listing.next_cursor is None:
            return pages
        cursor = listing.next_cursor


async def test_pages_of_variants_follow_one_another_each_variant_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Three rows a Query: the Queries stop inside a variant, which then starts the next page.
    monkeypatch.setattr(registry_module, "REGISTRY_ROWS_PER_QUERY", 3)
    monkeypatch.setattr(registry_module, "REGISTRY_QUERIES_PER_PAGE", 2)
    registry = FakeRegistry(
        "a#x#alltime",
        "a#x#day#2026-12-01",
        "a#y#alltime",
        "a#y#day#2026-12-01",
        "a#y#day#2026-11-30",
        "a#y#week#2026-W49",
        "a-b#z#alltime",  # "a-b" sorts after every "a#" id: '#' is below every id character
        "b#w#alltime",
    )
    assert await _all_pages(registry, limit=2) == [["a/x"], ["a/y", "a-b/z"], ["b/w"]]
    assert await _all_pages(registry, limit=1) == [["a/x"], ["a/y"], ["a-b/z"], ["b/w"]]
    # The second page's Queries read to the registry's end: nothing left to start a third.
    assert await _all_pages(registry, limit=100) == [["a/x"], ["a/y", "a-b/z", "b/w"]]


async def test_a_page_reads_at_most_its_queries_and_a_listing_ends_with_no_cursor() -> None:
    registry = FakeRegistry(*(f"g#v{i:03d}#alltime" for i in range(250)))
    pages = await _all_pages(registry, limit=100)
    assert [len(page) for page in pages] == [100, 100, 50]
    assert registry.reads == 3  # a thousand rows a Query: one each


async def test_a_cursor_not_issued_for_the_listing_is_refused() -> None:
    registry = FakeRegistry("g#v#alltime")
    for cursor in ("nonsense", "e30.AAAA"):
        with pytest.raises(InvalidCursor):
            await _listing(registry, cache=RegisteredBoards(ttl_s=0), now=NOW, cursor=cursor)
