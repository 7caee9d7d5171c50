"""Board definitions as the process remembers them: knowing, on every request, how a board ranks.

``Definitions`` answers "how does this board rank" for every request from a per-process memory,
so a board's requests do not read its definition each time; a change reaches every task within
``ttl_s`` (10 s by default). The memory is kept fresh ahead of use, so that no request waits for a
definition in the common case:

- at start-up the service holds the definition of every variant that has boards (``preload``: the
  registry's variants, one Query a game), before it says it is ready;
- while it runs, the games in use (preloaded, defined on this task, submitted to, or holding a
  defined variant, each until ``KEEP_S`` without a request) are read again every
  ``BACKGROUND_EVERY`` of ``ttl_s`` in the background (``refresh_games``, one Query a game);
- a variant read on a request and held past ``REFRESH_AHEAD`` of ``ttl_s`` is read again beside
  the request that finds it so.

Only a variant this task has not seen (a game with no boards when the task started, defined on
another task) or not seen for ``ttl_s`` needs its read: one GetItem, which a read waits for and a
submission sends beside its own first read (``app.services.submit``). A variant with no
definition follows the service's default definition; with ``refuse``, an undefined variant is a
404 for reads and a 422 for submissions, so a typo in a game name is not an empty board.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
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
from app.services.memory import failed
from app.services.ports import (
    DefinitionStore,
    StoredDefinition,
)

log = structlog.get_logger(__name__)

UndefinedBoards = Literal["allow", "refuse"]

REFRESH_AHEAD = 0.8
"""The share of ``ttl_s`` after which a request still uses what is held but starts a new read."""

BACKGROUND_EVERY = 0.5
"""The period, as a share of ``ttl_s``, of the background reads of the games in use: well short of
``REFRESH_AHEAD``, so that what they hold is never old enough for a request to read it again,
even just before a pass that is late (at the same period, a request just before each pass did)."""

GAMES_AT_ONCE = 8
"""Games a background pass reads at once: one at a time, a pass over hundreds of games in use took
long enough (a Query each) for the last games' copies to age past ``REFRESH_AHEAD``."""

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
        self._max = max_entries
        self._clock = clock
        self._known: OrderedDict[tuple[str, str], tuple[float, asyncio.Future[Resolved]]] = (
            OrderedDict()
        )
        self._refreshing: dict[tuple[str, str], asyncio.Future[Resolved]] = {}
        # Game -> when a request last asked for it: the games the background reads keep fresh.
        # Only games that have boards or definitions, or were submitted to, enter: a read of an
        # undefined game anyone can name is not read again in the background.
        self._kept: OrderedDict[str, float] = OrderedDict()

    async def of(self, game: str, variant: str) -> Resolved:
        """The variant's definition (or the default), remembered for ``ttl_s``; concurrent
        requests for one variant share one read, and one held past ``REFRESH_AHEAD`` of it is
        read again beside the request that finds it so."""
        at = (game, variant)
        now = self._clock()
        held = self._known.get(at)
        if held is None or not self._usable(held, now):
            held = (now, asyncio.ensure_future(self._read(game, variant)))
            self._remember(at, held)
        elif now - held[0] >= self._ttl_s * REFRESH_AHEAD and held[1].done():
            self._refresh(at, now)
        found = await asyncio.shield(held[1])
        if found.defined or game in self._kept:
            self._keep(game, now)
        return found

    def _usable(self, held: tuple[float, asyncio.Future[Resolved]], now: float) -> bool:
        """Younger than ``ttl_s`` and not failed (it may still be being read)."""
        return now - held[0] < self._ttl_s and not failed(held[1])

    def _resolved(self, stored: StoredDefinition | None) -> Resolved:
        return (
            Resolved(self.default, None)
            if stored is None
            else Resolved(stored.definition, stored.defined_at)
        )

    def _keep(self, game: str, now: float) -> None:
        if self._ttl_s <= 0:
            return
        self._kept[game] = now
        self._kept.move_to_end(game)
        while len(self._kept) > MAX_KEPT_GAMES:
            self._kept.popitem(last=False)

    def _hold(self, at: tuple[str, str], resolved: Resolved, read_at: float) -> None:
        """Hold what a read that began at ``read_at`` found, unless something newer is held."""
        held = self._known.get(at)
        if held is not None and held[0] > read_at:
            return
        answered: asyncio.Future[Resolved] = asyncio.get_running_loop().create_future()
        answered.set_result(resolved)
        self._refreshing.pop(at, None)
        self._remember(at, (read_at, answered))

    async def preload(self, variants: Iterable[tuple[str, str]]) -> int:
        """Hold the definition of every ``(game, variant)`` (the default where it has none), one
        Query a game, and keep the games fresh; how many definitions were found."""
        by_game: dict[str, list[str]] = {}
        for game, variant in variants:
            by_game.setdefault(game, []).append(variant)
        found = 0
        for game, held in sorted(by_game.items()):
            self._keep(game, self._clock())
            found += await self._read_game(game, held=held)
        return found

    async def refresh_games(self) -> None:
        """Read again every game asked for within ``KEEP_S``, one Query a game, ``GAMES_AT_ONCE``
        at a time; games not asked for since are let go (their variants are read again on use).
        A game whose read fails keeps what it holds (until ``ttl_s``) and the others are read all
        the same, unless the store is throttled or unavailable: then the games not yet begun wait
        for the next pass. One warning a pass says how many failed."""
        now = self._clock()
        held: dict[str, list[str]] = {}
        for game, variant in self._known:
            held.setdefault(game, []).append(variant)
        games = []
        for game, asked in list(self._kept.items()):
            if now - asked >= KEEP_S:
                del self._kept[game]
            else:
                games.append(game)
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
            self._hold((game, variant), self._resolved(stored.get(variant)), read_at)
        return len(stored)

    def _remember(self, at: tuple[str, str], held: tuple[float, asyncio.Future[Resolved]]) -> None:
        if self._ttl_s <= 0:
            return
        self._known[at] = held
        self._known.move_to_end(at)
        while len(self._known) > self._max:
            self._known.popitem(last=False)

    def _refresh(self, at: tuple[str, str], started: float) -> None:
        """Read the definition again in the background; what is held stays in use until the read
        succeeds, and until ``ttl_s`` at most."""
        if at in self._refreshing:
            return
        task = asyncio.ensure_future(self._read(*at))
        self._refreshing[at] = task

        def done(finished: asyncio.Future[Resolved]) -> None:
            if self._refreshing.get(at) is not finished:
                return  # forgotten meanwhile: this read may be older than the change
            del self._refreshing[at]
            if failed(finished):
                return  # what is held serves until ttl_s; then a request reads it itself
            self._remember(at, (started, finished))

        task.add_done_callback(done)

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
        held = self._known.get((game, variant))
        return held is not None and held[1].done() and self._usable(held, self._clock())

    async def for_submitting(self, game: str, variant: str) -> BoardDefinition:
        """The definition a submission follows: ``InvalidInput`` (422) for an undefined variant
        where undefined boards are refused."""
        found = await self.of(game, variant)
        if not found.defined and not self.allows_undefined:
            raise InvalidInput(
                f"no boards are defined for game {game!r}, variant {variant!r}",
                errors=[{"field": "variant", "message": "not a defined variant of the game"}],
            )
        self._keep(game, self._clock())  # a game submitted to is kept fresh
        return found.definition

    def learn(self, stored: StoredDefinition) -> None:
        """This process stored the definition: its own requests use it from now on."""
        now = self._clock()
        self._hold((stored.game, stored.variant), self._resolved(stored), now)
        self._keep(stored.game, now)
