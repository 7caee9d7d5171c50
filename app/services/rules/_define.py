"""Defining a variant: a change of its order, operator or shards holds its boards while it lands,
so that it and the submissions under the old definition cannot both land (decisions 0017, 0031).
"""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog

from app.domain.calendar import board_is_expired
from app.domain.clock import to_ms
from app.domain.definitions import BoardDefinition, season_changes
from app.domain.periods import Board, Period, PeriodKind
from app.domain.shards import partition_ids
from app.errors import BoardBeingSeeded, Conflict, LeaderboardError
from app.services.policies import RedefinePolicy, ranking_change_holder
from app.services.ports import LeaseStore, StoredDefinition, Stores
from app.services.rules.held import Resolved
from app.services.work import Progress

log = structlog.get_logger(__name__)

HOLD_MARGIN_S = 60.0
"""How long a ranking change's leases outlast its grace and ``after_s`` should it die before it
renews them (its check reads every board held)."""


@dataclass(frozen=True)
class Change:
    """A definition asked for: the variant, what it is to follow, when, and what it follows now."""

    game: str
    variant: str
    wanted: BoardDefinition
    now: datetime
    current: Resolved

    @property
    def fixed(self) -> tuple[str, ...]:
        """The fields it changes that boards holding entries cannot take."""
        return self.wanted.fixed_changes(self.current.definition)

    @property
    def refused(self) -> tuple[str, ...]:
        """Every field it changes that boards holding entries cannot take: the ranking's
        (``fixed``) and the entry's (decision 0039; these need no hold: they reorder no entry, and
        a player placed keeps the cohort their placement item names)."""
        return (*self.fixed, *self.wanted.entry_changes(self.current.definition))


async def define_variant(
    stores: Stores, policy: RedefinePolicy | None, change: Change, progress: Progress | None
) -> StoredDefinition:
    """Put the definition. Changing the order, operator, shards or time zone of a variant whose
    boards hold entries is a ``Conflict``, and so is changing a season that has ended or begun
    (``season_changes``). Such a change, with a ``policy``, first takes a seeding lease on
    every board a submission could reach; waits out ``policy.grace_s`` (told to ``progress``)
    unless no board of the variant is registered (a task registers a board before it first reads
    its lease: none can be writing); checks the boards strongly; puts the definition; and keeps
    the leases ``policy.after_s``, letting a submission under the new definition through."""
    fixed_seasons = season_changes(
        change.current.definition, change.wanted, now_ms=to_ms(change.now)
    )
    if fixed_seasons:
        raise Conflict(
            f"the seasons of {change.game}/{change.variant} cannot change so: "
            + "; ".join(fixed_seasons)
        )
    if change.refused:
        await _refuse_if_holding(stores, change, consistent=False)
    if not change.fixed or policy is None:
        return await stores.definitions.put_definition(change.game, change.variant, change.wanted)
    game, variant = change.game, change.variant
    boards = await _reachable(stores, change, policy)
    holder = ranking_change_holder(game, variant, change.wanted, uuid.uuid4().hex[:8])
    await _hold(stores.leases, boards, holder, policy)
    try:
        if await stores.registry.registered_boards(prefix=f"{game}#{variant}#"):
            await _wait_out(policy.grace_s, progress)
        await _refuse_if_holding(stores, change, consistent=True, boards=boards)
        stored = await stores.definitions.put_definition(game, variant, change.wanted)
    except BaseException:
        await _let_go(stores.leases, boards, holder)
        raise
    if policy.after_s > 0:
        now_s = time.time()
        until = int(now_s + policy.after_s) + 1
        await asyncio.gather(
            *(
                stores.leases.renew_lease(b, holder=holder, expires_at=until, now_s=int(now_s))
                for b in boards
            ),
            # One not renewed lapses at its first expiry, later still.
            return_exceptions=True,
        )
    else:
        await _let_go(stores.leases, boards, holder)
    log.info(
        "ranking_changed",
        game=game,
        variant=variant,
        changed=list(change.fixed),
        boards_held=len(boards),
    )
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
    stores: Stores, change: Change, *, consistent: bool, boards: Sequence[str] = ()
) -> None:
    """``Conflict`` where a board of the variant holds an entry, so its changed fields cannot
    change: on the index (a quick check first), or, ``consistent``, by the counters of ``boards``
    read strongly, each partition of each under the current definition's shards (a
    submission's row and its counters land in one transaction; counters part-written count as
    holding)."""
    live = await live_boards(stores, change)
    holding = await boards_with_entries(stores, change, live)
    current = change.current.definition
    if change.wanted.entry_changes(current):
        # Players joined and yet to score hold their seats, cohorts and tiers (decision 0039).
        holding += await boards_with_placements(stores, change, live)
    if consistent:
        partitions = [
            (b, partition)
            for b in boards
            if not board_is_expired(Board.from_id(b), now=change.now, definition=current)
            for partition in partition_ids(b, current.shards)
        ]
        counted = await asyncio.gather(
            *(stores.counters.coarse_counts(p, consistent=True) for _, p in partitions),
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
            f"the boards of {change.game}/{change.variant} hold entries "
            f"({', '.join(holding[:3])}"
            + (", ..." if len(holding) > 3 else "")
            + f"): their {_listed(change.refused)} cannot change while they hold entries. "
            "Define a new variant instead",
            retry_after=1,
        )


def _listed(names: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


async def _reachable(stores: Stores, change: Change, policy: RedefinePolicy) -> list[str]:
    """Every board a submission could write to while the change holds: the variant's registered
    boards, and for each period of either definition, those from ``policy.reach`` back to past
    the hold (found every half day, and every season overlapping that span)."""
    game, variant = change.game, change.variant
    registered = await stores.registry.registered_boards(prefix=f"{game}#{variant}#")
    boards = {r.board_id for r in registered}
    first = change.now - policy.reach
    hold_s = policy.grace_s + policy.after_s + HOLD_MARGIN_S
    last = change.now + timedelta(seconds=hold_s) + policy.reach
    definitions = (change.current.definition, change.wanted)
    for kind, calendar in {(k, d.calendar) for d in definitions for k in d.periods}:
        moment = first
        while True:  # half a day apart: a local day is 23 hours at the shortest
            period = calendar.containing(kind, moment)
            if period is not None:
                boards.add(Board(game, variant, period).board_id)
            if moment >= last:
                break
            moment = min(last, moment + timedelta(hours=12))
        if kind is PeriodKind.SEASON:
            boards.update(
                Board(game, variant, Period(kind, season.id)).board_id
                for season in calendar.seasons
                if season.starts_at_ms <= to_ms(last) and season.ends_at_ms > to_ms(first)
            )
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


async def live_boards(stores: Stores, change: Change) -> list[Board]:
    """The variant's boards in the registry that have not expired under its current
    definition."""
    current = change.current.definition
    registered = await stores.registry.registered_boards(prefix=f"{change.game}#{change.variant}#")
    return [
        board
        for board in (Board.from_id(r.board_id) for r in registered)
        if not board_is_expired(board, now=change.now, definition=current)
    ]


async def boards_with_placements(stores: Stores, change: Change, live: list[Board]) -> list[str]:
    """Those of the ``live`` boards on which a player is placed (joined, or placed by a first
    submission): their counts, read strongly, one call a board, all at once."""
    current = change.current.definition
    if not current.gates_entry:
        return []
    tiers = () if current.league is None else current.league.ids
    ids = [board.board_id for board in live]
    placed = await asyncio.gather(*(stores.entrants.placed_on(b, tiers) for b in ids))
    return [board_id for board_id, count in zip(ids, placed, strict=True) if count]


async def boards_with_entries(stores: Stores, change: Change, live: list[Board]) -> list[str]:
    """Those of the ``live`` boards that hold an entry: each partition of each (under the
    current definition's shards) asked for its first entry, all at once."""
    current = change.current.definition
    partitions = [
        (b.board_id, partition)
        for b in live
        for partition in partition_ids(b.board_id, current.shards)
    ]
    pages = await asyncio.gather(
        *(stores.index.query_board(p, limit=1, start=None) for _, p in partitions)
    )
    holding = (
        board_id for (board_id, _), page in zip(partitions, pages, strict=True) if page.entries
    )
    return list(dict.fromkeys(holding))
