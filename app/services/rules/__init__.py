"""Board rules: defining how a variant's boards rank, and telling every use case how a board ranks
(``Definitions``, the process's memory of them)."""

from __future__ import annotations

from datetime import datetime

import structlog

from app.domain.definitions import BoardDefinition
from app.domain.periods import Board
from app.errors import NotFound
from app.services.policies import RedefinePolicy
from app.services.ports import StoredDefinition, Stores
from app.services.registry import RegisteredBoards
from app.services.rules._define import Change, define_variant
from app.services.rules.held import Definitions, Resolved
from app.services.work import Progress

log = structlog.get_logger(__name__)


class BoardRules:
    """Defining variants, and what each variant's boards follow."""

    def __init__(
        self,
        stores: Stores,
        policy: RedefinePolicy,
        definitions: Definitions,
        registered: RegisteredBoards,
    ) -> None:
        self.definitions = definitions
        self._stores = stores
        self._policy = policy
        self._registered = registered

    @property
    def default(self) -> BoardDefinition:
        """What a variant with no definition of its own follows."""
        return self.definitions.default

    @property
    def allows_undefined(self) -> bool:
        return self.definitions.allows_undefined

    async def for_reading(self, game: str, variant: str) -> BoardDefinition:
        """``NotFound`` for an undefined variant where undefined boards are refused."""
        return await self.definitions.for_reading(game, variant)

    async def for_reading_board(self, board: Board) -> BoardDefinition:
        """How a board read ranks: ``NotFound`` for an undefined variant where undefined boards
        are refused, and for a period the variant does not keep, unless a board of that kind is
        registered (one kept before a change of its periods stays readable)."""
        definition = await self.definitions.for_reading(board.game, board.variant)
        await self.check_kept(board, definition)
        return definition

    async def check_kept(self, board: Board, definition: BoardDefinition) -> None:
        """``NotFound`` for a board of a period ``definition`` does not keep, unless a board of
        that kind is registered (one kept before a change of its periods stays readable)."""
        kind = board.period.kind
        if kind in definition.periods:
            return
        prefix = f"{board.game}#{board.variant}#{kind.value}"
        if await self._stores.registry.registered_boards(prefix=prefix):
            return
        kept = ", ".join(p.value for p in definition.periods)
        raise NotFound(
            f"variant {board.game}/{board.variant} has no {kind.value} boards: its periods are "
            f"{kept} (GET /v1/games/{board.game}/variants/{board.variant})"
        )

    async def for_submitting(self, game: str, variant: str) -> BoardDefinition:
        """``InvalidInput`` for an undefined variant where undefined boards are refused."""
        return await self.definitions.for_submitting(game, variant)

    async def show(self, game: str, variant: str) -> Resolved:
        """What the variant's boards follow (``NotFound`` where it has no definition and
        undefined variants are refused)."""
        return await self.definitions.shown(game, variant)

    async def variants(self, game: str) -> list[StoredDefinition]:
        """The game's defined variants, by name."""
        return sorted(await self._stores.definitions.definitions_of(game), key=lambda d: d.variant)

    async def hold_registered(self) -> tuple[int, int]:
        """Hold the definition of every variant with boards (one Query a game): how many
        variants, and how many of them are defined."""
        boards = await self._registered.of(self._stores.registry)
        variants = {(board.game, board.variant) for board in boards}
        return len(variants), await self.definitions.preload(variants)

    async def keep_fresh(self) -> None:
        """Read the games in use again in the background, until cancelled."""
        await self.definitions.keep_fresh()

    async def define(
        self,
        game: str,
        variant: str,
        definition: BoardDefinition,
        *,
        now: datetime,
        hold: bool = True,
        progress: Progress | None = None,
    ) -> StoredDefinition:
        """Put (upsert) the variant's definition. Changing its order, operator or shards while its
        boards hold entries is a ``Conflict``; such a change holds its boards while it lands
        (``app.services.rules._define``; decisions 0017 and 0031). With ``hold=False`` (a demo
        filling fresh tables) the boards are not held."""
        change = Change(game, variant, definition, now, await self.definitions.of(game, variant))
        policy = self._policy if hold else None
        stored = await define_variant(self._stores, policy, change, progress)
        self.definitions.learn(stored)
        return stored
