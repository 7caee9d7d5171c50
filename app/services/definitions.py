"""Board definitions: defining a variant's boards, and knowing, on every request, how a board ranks.

``Definitions`` answers "how does this board rank" for every request from a short per-process
memory (``ttl_s``, 10 s by default), so a change reaches every task within that time and a board's
requests do not read its definition each time. A definition in use is read again in the background
once it is ``REFRESH_AHEAD`` of ``ttl_s`` old, so a variant with steady traffic never has a request
wait for that read; only a variant quiet for longer than that waits for it (one GetItem). A variant with no definition follows the service's
default definition; with ``refuse``, an undefined variant is a 404 for reads and a 422 for
submissions, so a typo in a game name is not an empty board.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.errors import Conflict, InvalidInput, NotFound
from app.services.boards import board_is_expired
from app.services.ports import BoardIndex, BoardRegistry, DefinitionStore, StoredDefinition

UndefinedBoards = Literal["allow", "refuse"]

REFRESH_AHEAD = 0.8
"""The share of ``ttl_s`` after which a request still uses what is held but starts a new read."""


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
        self._known: OrderedDict[tuple[str, str], tuple[float, asyncio.Task[Resolved]]] = (
            OrderedDict()
        )
        self._refreshing: dict[tuple[str, str], asyncio.Task[Resolved]] = {}

    async def of(self, game: str, variant: str) -> Resolved:
        """The variant's definition (or the default), remembered for ``ttl_s``; concurrent
        requests for one variant share one read, and one held past ``REFRESH_AHEAD`` of it is
        read again beside the request that finds it so."""
        at = (game, variant)
        now = self._clock()
        held = self._known.get(at)
        if held is None or now - held[0] >= self._ttl_s or _failed(held[1]):
            held = (now, asyncio.ensure_future(self._read(game, variant)))
            self._remember(at, held)
        elif now - held[0] >= self._ttl_s * REFRESH_AHEAD and held[1].done():
            self._refresh(at, now)
        return await asyncio.shield(held[1])

    def _remember(self, at: tuple[str, str], held: tuple[float, asyncio.Task[Resolved]]) -> None:
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

        def done(finished: asyncio.Task[Resolved]) -> None:
            if self._refreshing.get(at) is not finished:
                return  # forgotten meanwhile: this read may be older than the change
            del self._refreshing[at]
            if finished.cancelled() or finished.exception() is not None:
                return  # what is held serves until ttl_s; then a request reads it itself
            self._remember(at, (started, finished))

        task.add_done_callback(done)

    async def _read(self, game: str, variant: str) -> Resolved:
        stored = await self._store.get_definition(game, variant)
        if stored is None:
            return Resolved(self.default, None)
        return Resolved(stored.definition, stored.defined_at)

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

    async def for_submitting(self, game: str, variant: str) -> BoardDefinition:
        """The definition a submission follows: ``InvalidInput`` (422) for an undefined variant
        where undefined boards are refused."""
        found = await self.of(game, variant)
        if not found.defined and not self.allows_undefined:
            raise InvalidInput(
                f"no boards are defined for game {game!r}, variant {variant!r}",
                errors=[{"field": "variant", "message": "not a defined variant of the game"}],
            )
        return found.definition

    def forget(self, game: str, variant: str) -> None:
        """This process changed the definition: its own next request reads it afresh."""
        self._known.pop((game, variant), None)
        self._refreshing.pop((game, variant), None)


def _failed(task: asyncio.Task[Resolved]) -> bool:
    return task.done() and (task.cancelled() or task.exception() is not None)


async def define_boards(
    *,
    definitions: Definitions,
    store: DefinitionStore,
    registry: BoardRegistry,
    index: BoardIndex,
    game: str,
    variant: str,
    definition: BoardDefinition,
    now: datetime,
) -> StoredDefinition:
    """Put (upsert) the variant's definition. Changing the order or the operator of a variant whose
    boards hold entries is a ``Conflict``: it would reorder their history. Adding a period starts
    that board empty; removing one stops the fan-out to it."""
    current = await definitions.of(game, variant)
    if not definition.ranks_like(current.definition):
        holding = await boards_with_entries(
            registry=registry, index=index, game=game, variant=variant, now=now, current=current
        )
        if holding:
            raise Conflict(
                f"the boards of {game}/{variant} hold entries ({', '.join(holding[:3])}"
                + (", ..." if len(holding) > 3 else "")
                + "): their order and operator cannot change. Define a new variant instead",
                retry_after=1,
            )
    stored = await store.put_definition(game, variant, definition)
    definitions.forget(game, variant)
    return stored


async def boards_with_entries(
    *,
    registry: BoardRegistry,
    index: BoardIndex,
    game: str,
    variant: str,
    now: datetime,
    current: Resolved,
) -> list[str]:
    """The variant's live boards that hold an entry: the registry's boards of the variant, each
    asked for its first entry."""
    boards = [
        Board.from_id(r.board_id)
        for r in await registry.registered_boards(prefix=f"{game}#{variant}#")
    ]
    live = [
        b
        for b in boards
        if not board_is_expired(b, now=now, retention=current.definition.retention)
    ]
    pages = await asyncio.gather(
        *(index.query_board(b.board_id, limit=1, start=None) for b in live)
    )
    return [b.board_id for b, page in zip(live, pages, strict=True) if page.entries]


async def show_definition(*, definitions: Definitions, game: str, variant: str) -> Resolved:
    """What the variant's boards follow (``NotFound`` where it has no definition and undefined
    variants are refused)."""
    return await definitions.shown(game, variant)


async def list_definitions(*, store: DefinitionStore, game: str) -> list[StoredDefinition]:
    return sorted(await store.definitions_of(game), key=lambda d: d.variant)
