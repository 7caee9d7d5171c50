"""The board list's use case over a fake registry: its grouping and order, what it leaves out, and
the per-process memory of the registry's rows."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from app.domain.definitions import BoardDefinition
from app.services.definitions import Definitions
from app.services.ports import RegisteredBoard, StoredDefinition
from app.services.registry import BoardListing, RegisteredBoards, live_boards

NOW = datetime(2026, 12, 1, 12, tzinfo=UTC)


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
    listing = await live_boards(
        registry=registry, cache=RegisteredBoards(ttl_s=0), now=NOW, definitions=DEFINITIONS
    )
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
    before = await live_boards(
        registry=registry, cache=cache, now=expires - timedelta(seconds=1), definitions=DEFINITIONS
    )
    after = await live_boards(registry=registry, cache=cache, now=expires, definitions=DEFINITIONS)
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
