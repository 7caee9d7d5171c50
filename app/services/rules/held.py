"""Board definitions as the process remembers them: knowing, on every request, how a board ranks,
without reading its definition each time (``Definitions``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import structlog

from app.domain.definitions import BoardDefinition
from app.errors import (
    InvalidInput,
    LeaderboardError,
    NotFound,
    Throttled,
    Unavailable,
)
from app.services.memory import Recent, SharedLoads
from app.services.ports import (
    DefinitionStore,
    StoredDefinition,
)

log = structlog.get_logger(__name__)

UndefinedBoards = Literal["allow", "refuse"]

BACKGROUND_EVERY = 0.5
"""The period, as a share of ``ttl_s``, of the background reads of the games in use: well short of
``ttl_s``, so that what they hold never lapses before the next pass, even one that is late."""

GAMES_AT_ONCE = 8
"""Games a background pass reads at once: one at a time, a pass over hundreds of games in use would
take long enough (a Query each) for the last games' copies to lapse before it reached them."""

KEEP_S = 3600.0
"""A game stays in the background reads this long after its last request."""

MAX_KEPT_GAMES = 1_000
"""At most this many games are read in the background (those asked for most lately)."""


@dataclass(frozen=True)
class Resolved:
    """A variant's definition as requests use it: ``defined_at`` is ``None`` where the variant
    has none and follows the default."""

    definition: BoardDefinition
    defined_at: str | None

    @property
    def defined(self) -> bool:
        return self.defined_at is not None


class Definitions:
    """Answers "how does this board rank" for every request from a per-process memory; a change
    reaches every task within ``ttl_s`` (10 s by default). The games in use (preloaded, defined
    here, submitted to, or holding a defined variant, each until ``KEEP_S`` without a request) are
    read again in the background every ``BACKGROUND_EVERY`` of ``ttl_s``, one Query a game, so no
    request waits in the common case; any other variant is read when a request asks (one GetItem,
    shared by those asking meanwhile). A variant with no definition follows the default; with
    ``refuse``, an undefined variant is a 404 for reads and a 422 for submissions."""

    def __init__(
        self,
        store: DefinitionStore,
        *,
        default: BoardDefinition,
        undefined: UndefinedBoards = "allow",
        ttl_s: float = 10.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self.default = default
        self._undefined = undefined
        self._ttl_s = ttl_s
        self._clock = clock
        self._held: SharedLoads[tuple[str, str], Resolved] = SharedLoads(
            max_entries=max_entries, ttl_s=ttl_s, clock=clock
        )
        # The games the background reads keep fresh, each until ``KEEP_S`` after a request last
        # asked for it. Only games that have boards or definitions, or were submitted to, enter:
        # a read of an undefined game anyone can name is not read again in the background.
        self._kept: Recent[str, None] = Recent(
            max_entries=MAX_KEPT_GAMES, ttl_s=KEEP_S if ttl_s > 0 else 0, clock=clock
        )

    async def of(self, game: str, variant: str) -> Resolved:
        """The variant's definition (or the default), remembered for ``ttl_s``; concurrent
        requests for one variant share one read."""
        found = await self._held.get((game, variant), lambda: self._read(game, variant))
        if found.defined or game in self._kept:
            self._kept.put(game, None)
        return found

    def _resolved(self, stored: StoredDefinition | None) -> Resolved:
        return (
            Resolved(self.default, None)
            if stored is None
            else Resolved(stored.definition, stored.defined_at)
        )

    async def preload(self, variants: Iterable[tuple[str, str]]) -> int:
        """Hold the definition of every ``(game, variant)`` (the default where it has none), one
        Query a game, and keep the games fresh; how many definitions were found."""
        by_game: dict[str, list[str]] = {}
        for game, variant in variants:
            by_game.setdefault(game, []).append(variant)
        found = 0
        for game, held in sorted(by_game.items()):
            self._kept.put(game, None)
            found += await self._read_game(game, held=held)
        return found

    async def refresh_games(self) -> None:
        """Read again every game asked for within ``KEEP_S``, one Query a game, ``GAMES_AT_ONCE``
        at a time; games not asked for since are let go (their variants are read again on use).
        A game whose read fails keeps what it holds (until ``ttl_s``) and the others are read all
        the same, unless the store is throttled or unavailable: then the games not yet begun wait
        for the next pass. One warning a pass says how many failed."""
        held: dict[str, list[str]] = {}
        for game, variant in self._held.keys_held():
            held.setdefault(game, []).append(variant)
        games = [game for game in self._kept.keys_held() if game in self._kept]
        gate = asyncio.Semaphore(GAMES_AT_ONCE)
        failed: list[tuple[str, Exception]] = []

        async def read(game: str) -> None:
            async with gate:
                if any(isinstance(exc, Throttled | Unavailable) for _, exc in failed):
                    return  # the store is throttled or down: the rest wait for the next pass
                try:
                    await self._read_game(game, held=held.get(game, ()))
                except Exception as exc:  # one game's bad item ends nothing
                    failed.append((game, exc))

        await asyncio.gather(*(read(game) for game in games))
        if failed:
            game, first = failed[0]
            log.warning(
                "definitions_refresh_failed",
                games_failed=len(failed),
                games=len(games),
                first_game=game,
                error=str(first) if isinstance(first, LeaderboardError) else repr(first),
            )

    async def keep_fresh(self) -> None:
        """``refresh_games`` every ``BACKGROUND_EVERY`` of ``ttl_s``, until cancelled."""
        if self._ttl_s <= 0:
            return
        while True:
            await asyncio.sleep(self._ttl_s * BACKGROUND_EVERY)
            await self.refresh_games()

    async def _read_game(self, game: str, *, held: Iterable[str]) -> int:
        """Hold what one Query of the game finds, and the default for its ``held`` variants that
        it does not (they have no definition, or it was removed)."""
        read_at = self._clock()
        stored = {d.variant: d for d in await self._store.definitions_of(game)}
        for variant in {*stored, *held}:
            self._held.put((game, variant), self._resolved(stored.get(variant)), at=read_at)
        return len(stored)

    async def _read(self, game: str, variant: str) -> Resolved:
        return self._resolved(await self._store.get_definition(game, variant))

    @property
    def allows_undefined(self) -> bool:
        return self._undefined == "allow"

    async def for_reading(self, game: str, variant: str) -> BoardDefinition:
        """The definition a read of the variant's boards uses: ``NotFound`` for an undefined
        variant where undefined boards are refused."""
        return (await self.shown(game, variant)).definition

    async def shown(self, game: str, variant: str) -> Resolved:
        """The variant's definition, or the default it follows: ``NotFound`` for an undefined
        variant where undefined boards are refused."""
        found = await self.of(game, variant)
        if not found.defined and not self.allows_undefined:
            raise NotFound(
                f"no boards are defined for game {game!r}, variant {variant!r}: define them with "
                f"PUT /v1/games/{game}/variants/{variant}"
            )
        return found

    def holds(self, game: str, variant: str) -> bool:
        """Whether the variant's definition is held, read and younger than ``ttl_s``: asking for
        it then waits for no read."""
        return self._held.holds((game, variant))

    async def for_submitting(self, game: str, variant: str) -> BoardDefinition:
        """The definition a submission follows: ``InvalidInput`` (422) for an undefined variant
        where undefined boards are refused."""
        found = await self.of(game, variant)
        if not found.defined and not self.allows_undefined:
            raise InvalidInput(
                f"no boards are defined for game {game!r}, variant {variant!r}",
                errors=[{"field": "variant", "message": "not a defined variant of the game"}],
            )
        if self._ttl_s > 0:
            self._kept.put(game, None)  # a game submitted to is kept fresh
        return found.definition

    def learn(self, stored: StoredDefinition) -> None:
        """This process stored the definition: its own requests use it from now on."""
        if self._ttl_s <= 0:
            return
        self._held.put((stored.game, stored.variant), self._resolved(stored), at=self._clock())
        self._kept.put(stored.game, None)
