"""Board rules: defining how a variant's boards rank, and telling every use case how a board ranks
(``Definitions``, the process's memory of them)."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from app.domain.definitions import BoardDefinition
from app.domain.periods import Board, Period, board_is_expired
from app.domain.shards import partition_ids
from app.errors import BoardBeingSeeded, Conflict, LeaderboardError, NotFound
from app.services.policies import RedefinePolicy, ranking_change_holder
from app.services.ports import (
    BoardIndex,
    BoardRegistry,
    CounterStore,
    DefinitionStore,
    LeaseStore,
    StoredDefinition,
)
from app.services.registry import RegisteredBoards
from app.services.rules.held import Definitions, Resolved
from app.services.work import Progress

log = structlog.get_logger(__name__)

HOLD_MARGIN_S = 60.0
"""How long a ranking change's leases outlast its grace and ``after_s`` should it die before it
renews them (its check reads every board held)."""


@dataclass(frozen=True)
class DefinePorts:
    store: DefinitionStore
    registry: BoardRegistry
    index: BoardIndex
    leases: LeaseStore
    counters: CounterStore


class BoardRules:
    """Defining variants, and what each variant's boards follow."""

    def __init__(
        self,
        definitions: Definitions,
        ports: DefinePorts,
        *,
        policy: RedefinePolicy,
        registered: RegisteredBoards,
    ) -> None:
        self.definitions = definitions
        self._ports = ports
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
        kind = board.period.kind
        if kind in definition.periods:
            return definition
        prefix = f"{board.game}#{board.variant}#{kind.value}"
        if await self._ports.registry.registered_boards(prefix=prefix):
            return definition
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
        return sorted(await self._ports.store.definitions_of(game), key=lambda d: d.variant)

    async def hold_registered(self) -> tuple[int, int]:
        """Hold the definition of every variant with boards (one Query a game): how many
        variants, and how many of them are defined."""
        boards = await self._registered.of(self._ports.registry)
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
        """Put (upsert) the variant's definition. Changing the order, the operator or the shards
        of a variant whose boards hold entries is a ``Conflict``: it would reorder their history,
        or leave their entries on partitions the boards no longer read. Adding a period starts
        that board empty; removing one stops the fan-out to it.

        Such a change (``BoardDefinition.fixed_changes``) and the submissions under the old
        definition cannot both land: it holds every board a submission could reach with a
        seeding lease (decision 0017), so from then on every submission under the old definition
        is refused (409); waits out ``policy.grace_s`` (told to ``progress``), by when each that
        read no lease is done, unless no board of the variant is registered (a task registers a
        board before it first reads its lease, so then none can be writing: decision 0031);
        checks, strongly, that the boards hold no entries; only then puts the definition. The
        leases stay ``policy.after_s``, while a task may hold the old definition, and let a
        submission under the new one through. With ``hold=False`` (a demo filling fresh tables)
        the boards are not held."""
        policy = self._policy if hold else None
        current = await self.definitions.of(game, variant)
        fixed = definition.fixed_changes(current.definition)
        if fixed:
            await _refuse_if_holding(self._ports, game, variant, now, current, fixed, strong=False)
        if fixed and policy is not None:
            boards = await _reachable(
                self._ports.registry, game, variant, now, current, definition, policy
            )
            holder = ranking_change_holder(game, variant, definition, uuid.uuid4().hex[:8])
            await _hold(self._ports.leases, boards, holder, policy)
            try:
                if await self._ports.registry.registered_boards(prefix=f"{game}#{variant}#"):
                    await _wait_out(policy.grace_s, progress)
                await _refuse_if_holding(
                    self._ports, game, variant, now, current, fixed, strong=True, boards=boards
                )
                stored = await self._ports.store.put_definition(game, variant, definition)
            except BaseException:
                await _let_go(self._ports.leases, boards, holder)
                raise
            self.definitions.learn(stored)
            if policy.after_s > 0:
                now_s = time.time()
                until = int(now_s + policy.after_s) + 1
                await asyncio.gather(
                    *(
                        self._ports.leases.renew_lease(
                            b, holder=holder, expires_at=until, now_s=int(now_s)
                        )
                        for b in boards
                    ),
                    # One not renewed lapses at its first expiry, later still.
                    return_exceptions=True,
                )
            else:
                await _let_go(self._ports.leases, boards, holder)
            log.info(
                "ranking_changed",
                game=game,
                variant=variant,
                changed=list(fixed),
                boards_held=len(boards),
            )
            return stored
        stored = await self._ports.store.put_definition(game, variant, definition)
        self.definitions.learn(stored)
        return stored


async def _wait_out(grace_s: float, progress: Progress | None) -> None:
    """The grace, second by second where someone watches."""
    if progress is None:
        await asyncio.sleep(grace_s)
        return
    waited = 0.0
    while waited < grace_s:
        progress("holding boards", math.floor(waited), math.ceil(grace_s))
        step = min(1.0, grace_s - waited)
        await asyncio.sleep(step)
        waited += step
    progress("holding boards", math.ceil(grace_s), math.ceil(grace_s))


async def _let_go(leases: LeaseStore, boards: Sequence[str], holder: str) -> None:
    await asyncio.gather(
        *(leases.release_lease(b, holder=holder) for b in boards), return_exceptions=True
    )


async def _refuse_if_holding(
    ports: DefinePorts,
    game: str,
    variant: str,
    now: datetime,
    current: Resolved,
    fixed: Sequence[str],
    *,
    strong: bool,
    boards: Sequence[str] = (),
) -> None:
    """``Conflict`` where a board of the variant holds an entry, so its ``fixed`` fields cannot
    change: on the index (a quick check first), or, ``strong``, by the counters of ``boards``
    read strongly, each partition of each under the current definition's shards (a
    submission's row and its counters land in one transaction; counters part-written count as
    holding)."""
    holding = await boards_with_entries(
        registry=ports.registry,
        index=ports.index,
        game=game,
        variant=variant,
        now=now,
        current=current,
    )
    if strong:
        retention = current.definition.retention
        partitions = [
            (b, partition)
            for b in boards
            if not board_is_expired(Board.from_id(b), now=now, retention=retention)
            for partition in partition_ids(b, current.definition.shards)
        ]
        counted = await asyncio.gather(
            *(ports.counters.coarse_counts(p, consistent=True) for _, p in partitions),
            return_exceptions=True,
        )
        for (board_id, _), counts in zip(partitions, counted, strict=True):
            if isinstance(counts, BaseException):
                if not isinstance(counts, LeaderboardError):
                    raise counts
                holding.append(board_id)  # part-written, or unreadable: not known empty
            elif sum(counts.values()):
                holding.append(board_id)
        holding = list(dict.fromkeys(holding))
    if holding:
        raise Conflict(
            f"the boards of {game}/{variant} hold entries ({', '.join(holding[:3])}"
            + (", ..." if len(holding) > 3 else "")
            + f"): their {_listed(fixed)} cannot change while they hold entries. "
            "Define a new variant instead",
            retry_after=1,
        )


def _listed(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


async def _reachable(
    registry: BoardRegistry,
    game: str,
    variant: str,
    now: datetime,
    current: Resolved,
    wanted: BoardDefinition,
    policy: RedefinePolicy,
) -> list[str]:
    """Every board a submission could write to while the change holds: the variant's registered
    boards, and for each period of either definition, those from ``policy.reach`` back to past
    the hold (days are the shortest periods: a moment a day apart finds each)."""
    boards = {r.board_id for r in await registry.registered_boards(prefix=f"{game}#{variant}#")}
    first = now - policy.reach
    last = now + timedelta(seconds=policy.grace_s + policy.after_s + HOLD_MARGIN_S) + policy.reach
    for kind in {*current.definition.periods, *wanted.periods}:
        moment = first
        while True:
            boards.add(Board(game, variant, Period.containing(kind, moment)).board_id)
            if moment >= last:
                break
            moment = min(last, moment + timedelta(days=1))
    return sorted(boards)


async def _hold(
    leases: LeaseStore, boards: Sequence[str], holder: str, policy: RedefinePolicy
) -> None:
    """A lease on each board, long enough for the grace, the check and ``after_s`` (renewed to
    that once the definition is put); ``BoardBeingSeeded`` (and none kept) where another holds
    one."""
    now_s = time.time()
    expires_at = int(now_s + policy.grace_s + policy.after_s + HOLD_MARGIN_S) + 1
    found = await asyncio.gather(
        *(
            leases.acquire_lease(b, holder=holder, expires_at=expires_at, now_s=int(now_s))
            for b in boards
        ),
        return_exceptions=True,
    )
    refused = [(b, f) for b, f in zip(boards, found, strict=True) if f is not None]
    if not refused:
        return
    await asyncio.gather(
        *(
            leases.release_lease(b, holder=holder)
            for b, f in zip(boards, found, strict=True)
            if f is None
        ),
        return_exceptions=True,
    )
    board_id, why = refused[0]
    if isinstance(why, BaseException):
        raise why
    raise BoardBeingSeeded(
        f"board {board_id} is held by {why.holder}: the definition can change once it is done",
        retry_after=max(1, int(why.expires_at - now_s) + 1),
    )


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
    partition of each (under the current definition's shards) asked for its first entry, all at
    once."""
    boards = [
        Board.from_id(r.board_id)
        for r in await registry.registered_boards(prefix=f"{game}#{variant}#")
    ]
    live = [
        b
        for b in boards
        if not board_is_expired(b, now=now, retention=current.definition.retention)
    ]
    partitions = [
        (b.board_id, partition)
        for b in live
        for partition in partition_ids(b.board_id, current.definition.shards)
    ]
    pages = await asyncio.gather(
        *(index.query_board(p, limit=1, start=None) for _, p in partitions)
    )
    holding = (
        board_id for (board_id, _), page in zip(partitions, pages, strict=True) if page.entries
    )
    return list(dict.fromkeys(holding))
