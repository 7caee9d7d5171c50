"""The per-task memory of board definitions: a change is seen within ``ttl_s``, and a variant in
steady use never has a request wait for the read that refreshes it."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest
from structlog.testing import capture_logs

from app.domain.definitions import BoardDefinition
from app.errors import Unavailable
from app.services.ports import StoredDefinition
from app.services.rules.held import (
    BACKGROUND_EVERY,
    GAMES_AT_ONCE,
    KEEP_S,
    Definitions,
)

TTL = 10.0


class SlowStore:
    """A definition store whose reads wait until released, counting them."""

    def __init__(self) -> None:
        self.retention = 30
        self.reads = 0
        self.game_reads: list[str] = []
        self.fail = False
        self.failing_games: set[str] = set()
        self.at_once = self.most_at_once = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def get_definition(self, game: str, variant: str) -> StoredDefinition | None:
        self.reads += 1
        retention = self.retention  # what the store holds when the read is made
        await self.gate.wait()
        if self.fail:
            raise Unavailable("the store is down")
        if game == "nothing":
            return None
        return StoredDefinition(
            game, variant, BoardDefinition(retention_days=retention), "2026-12-01"
        )

    async def definitions_of(self, game: str) -> list[StoredDefinition]:
        """One defined variant, ``classic``, in every game but ``nothing``, which has none."""
        self.game_reads.append(game)
        retention = self.retention
        self.at_once += 1
        self.most_at_once = max(self.most_at_once, self.at_once)
        try:
            await self.gate.wait()
        finally:
            self.at_once -= 1
        if self.fail:
            raise Unavailable("the store is down")
        if game in self.failing_games:
            raise ValueError("an item this version cannot read")
        if game == "nothing":
            return []
        return [
            StoredDefinition(game, "classic", BoardDefinition(retention_days=retention), "2026")
        ]

    async def put_definition(
        self, game: str, variant: str, definition: BoardDefinition
    ) -> StoredDefinition:
        raise NotImplementedError


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _cache(store: SlowStore, clock: Clock) -> Definitions:
    return Definitions(store, default=BoardDefinition(), ttl_s=TTL, clock=clock)


async def _retention(definitions: Definitions) -> int:
    return (await definitions.of("trivia", "classic")).definition.retention_days


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_requests_for_a_variant_not_held_share_one_read() -> None:
    store, clock = SlowStore(), Clock()
    definitions = _cache(store, clock)
    store.gate = asyncio.Event()
    waiting = [asyncio.ensure_future(_retention(definitions)) for _ in range(5)]
    await _settle()
    assert store.reads == 1
    store.gate.set()
    assert await asyncio.gather(*waiting) == [30] * 5
    clock.now += TTL * 0.9
    assert await _retention(definitions) == 30  # held until its ttl, with no read
    assert store.reads == 1


async def test_a_definition_past_its_ttl_is_read_before_answering() -> None:
    store, clock = SlowStore(), Clock()
    definitions = _cache(store, clock)
    assert await _retention(definitions) == 30
    store.retention = 90
    clock.now += TTL
    assert await _retention(definitions) == 90  # never older than ttl_s
    assert store.reads == 2


async def test_a_failed_background_pass_keeps_what_is_held_until_its_ttl() -> None:
    store, clock = SlowStore(), Clock()
    definitions = _cache(store, clock)
    await definitions.preload([("trivia", "classic")])
    store.fail = True
    clock.now += TTL * BACKGROUND_EVERY
    await definitions.refresh_games()
    assert await _retention(definitions) == 30  # the failure is not served
    clock.now += TTL
    with pytest.raises(Unavailable):
        await _retention(definitions)


async def test_a_read_under_way_when_the_process_changes_the_definition_is_dropped() -> None:
    store, clock = SlowStore(), Clock()
    definitions = _cache(store, clock)
    store.gate = asyncio.Event()
    reading = asyncio.ensure_future(_retention(definitions))
    await _settle()  # the request's read is made: it will see 30
    clock.now += 0.1
    # This process defined the variant anew meanwhile.
    definitions.learn(
        StoredDefinition("trivia", "classic", BoardDefinition(retention_days=90), "2026-12-02")
    )
    store.gate.set()
    assert await reading == 30  # the request that began before the change
    assert await _retention(definitions) == 90  # the change, not the older read
    assert store.reads == 1


async def test_preloaded_games_are_kept_fresh_without_a_request_waiting_for_a_read() -> None:
    store, clock = SlowStore(), Clock()
    definitions = _cache(store, clock)
    assert await definitions.preload([("trivia", "classic"), ("nothing", "classic")]) == 1
    for _ in range(5):  # background passes: the held definitions never go stale
        clock.now += TTL * BACKGROUND_EVERY
        await definitions.refresh_games()
    assert await _retention(definitions) == 30
    assert (await definitions.of("nothing", "classic")).defined is False
    assert store.reads == 0  # no GetItem: every answer came from the game's Query
    assert store.game_reads == ["nothing", "trivia"] * 6

    store.retention = 90  # changed on another task
    clock.now += TTL * BACKGROUND_EVERY
    await definitions.refresh_games()
    assert await _retention(definitions) == 90
    assert store.reads == 0


async def test_a_request_just_before_a_late_background_pass_reads_nothing_itself() -> None:
    store, clock = SlowStore(), Clock()
    definitions = _cache(store, clock)
    await definitions.preload([("trivia", "classic")])
    for _ in range(5):
        # The loop's sleep, then a pass that takes half a second to come round.
        clock.now += TTL * BACKGROUND_EVERY + 0.5
        assert await _retention(definitions) == 30
        await _settle()
        await definitions.refresh_games()
    assert store.reads == 0  # no request started a GetItem of its own
    assert BACKGROUND_EVERY * TTL + 0.5 < TTL


async def test_games_nobody_asks_for_are_let_go_and_undefined_names_are_never_kept() -> None:
    store, clock = SlowStore(), Clock()
    definitions = _cache(store, clock)
    await definitions.preload([("trivia", "classic")])
    # Anyone can name a game on a read: an undefined one is read on use, never in the background.
    assert (await definitions.of("nothing", "typo")).defined is False
    clock.now += KEEP_S
    await definitions.refresh_games()
    assert store.game_reads == ["trivia"]  # trivia let go after an hour unasked, nothing never kept
    assert store.reads == 1  # the typo's own GetItem
    assert await _retention(definitions) == 30  # read again on use, with a GetItem
    assert store.reads == 2


async def test_a_background_pass_begun_before_this_process_defines_the_variant_is_dropped() -> None:
    store, clock = SlowStore(), Clock()
    definitions = _cache(store, clock)
    await definitions.preload([("trivia", "classic")])
    store.gate = asyncio.Event()
    clock.now += TTL * BACKGROUND_EVERY
    passing = asyncio.ensure_future(definitions.refresh_games())
    await _settle()  # its Query is made: it will see 30
    clock.now += 0.1
    definitions.learn(
        StoredDefinition("trivia", "classic", BoardDefinition(retention_days=90), "2026-12-02")
    )
    store.gate.set()
    await passing
    assert await _retention(definitions) == 90


async def test_keep_fresh_survives_a_failed_pass() -> None:
    store, clock = SlowStore(), Clock()
    definitions = Definitions(store, default=BoardDefinition(), ttl_s=0.05, clock=clock)
    await definitions.preload([("trivia", "classic")])
    store.fail = True
    keeping = asyncio.ensure_future(definitions.keep_fresh())
    await asyncio.sleep(0.1)
    store.fail = False
    await asyncio.sleep(0.1)
    assert not keeping.done()  # the failed pass did not end it
    keeping.cancel()
    assert len(store.game_reads) >= 3  # the passes went on after the failure


async def _many_games_held(store: SlowStore, clock: Clock) -> tuple[Definitions, list[str]]:
    """Three passes' worth of games held, the store's reads counted afresh, its gate shut, and
    the next background pass due."""
    definitions = _cache(store, clock)
    games = [f"game{i:02d}" for i in range(3 * GAMES_AT_ONCE)]
    await definitions.preload([(game, "classic") for game in games])
    store.game_reads.clear()
    store.gate = asyncio.Event()
    clock.now += TTL * BACKGROUND_EVERY
    return definitions, games


async def _pass_warnings(
    definitions: Definitions, store: SlowStore
) -> list[MutableMapping[str, Any]]:
    """One background pass, its gate opened once the first reads are under way; its warnings."""
    with capture_logs() as logs:
        passing = asyncio.ensure_future(definitions.refresh_games())
        await _settle()
        assert len(store.game_reads) == GAMES_AT_ONCE  # the first few under way, the rest wait
        store.gate.set()
        await passing
    return [e for e in logs if e["event"] == "definitions_refresh_failed"]


async def test_a_pass_reads_games_a_few_at_a_time_and_a_failed_one_leaves_the_rest_read() -> None:
    store, clock = SlowStore(), Clock()
    definitions, games = await _many_games_held(store, clock)
    store.retention = 90  # changed on another task
    store.failing_games = {"game00"}
    (warning,) = await _pass_warnings(definitions, store)
    assert (warning["games_failed"], warning["first_game"]) == (1, "game00")
    assert sorted(store.game_reads) == games  # every game read once, however they finished
    assert store.most_at_once == GAMES_AT_ONCE
    held = [(await definitions.of(game, "classic")).definition.retention_days for game in games]
    assert held == [30] + [90] * (len(games) - 1)  # game00 keeps what it held, until its ttl
    assert store.reads == 0


async def test_a_pass_stops_beginning_reads_once_the_store_is_unavailable() -> None:
    store, clock = SlowStore(), Clock()
    definitions, games = await _many_games_held(store, clock)
    store.fail = True
    (warning,) = await _pass_warnings(definitions, store)
    # The reads already under way fail; none is begun after: no flood of calls or of warnings.
    assert len(store.game_reads) == GAMES_AT_ONCE
    assert (warning["games_failed"], warning["games"]) == (GAMES_AT_ONCE, len(games))
    held = await definitions.of("game00", "classic")
    assert held.definition.retention_days == 30  # what is held still serves, until its ttl
