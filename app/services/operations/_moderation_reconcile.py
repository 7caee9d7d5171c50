"""What the reconciler does for moderation (decision 0036), before it recounts a board: every
visible row of a player the game's listing names is hidden (a submission that read no record
before the hide's first pass and wrote after it), and a moderation whose later pass is due and
was not run (its task went away) is run. It costs a read of the game's listing and one row read
a moderated player, not a walk of the board."""

from __future__ import annotations

import asyncio

from app.domain.buckets import BucketLayout
from app.domain.clock import from_ms
from app.domain.definitions import BoardDefinition
from app.domain.moderation import Moderation
from app.domain.periods import Board
from app.domain.shards import player_partition
from app.services.moderated import moderated_of
from app.services.operations._moderation import sweep_again
from app.services.operations._moderation_sweep import SweepAsk, change_row
from app.services.ports import Stores
from app.services.work import all_or_none

_AT_ONCE = 16


async def hide_moderated(
    stores: Stores,
    layout: BucketLayout,
    board: Board,
    definition: BoardDefinition,
    *,
    apply: bool,
    now_ms: int,
) -> int:
    """The visible rows of moderated players found on the board (hidden, with ``apply``), and
    with ``apply`` the rows a due later pass hid on any board of the game."""
    listed = await moderated_of(stores, board.game)
    gate = asyncio.Semaphore(_AT_ONCE)

    async def one(moderation: Moderation) -> int:
        async with gate:
            due = moderation.sweep_again_ms
            if apply and due is not None and due <= now_ms:
                return await sweep_again(stores, layout, moderation, from_ms(now_ms))
            player = moderation.player_id
            row_id = player_partition(board.board_id, player, definition.shards)
            row = await stores.moderation.read_row(row_id, player)
            if row is None or row.hidden:
                return 0
            if not apply:
                return 1
            ask = SweepAsk(
                player, board.game, hide=True, since_ms=moderation.since_ms, now_s=now_ms // 1000
            )
            return int(await change_row(stores, layout, ask, row))

    return sum(await all_or_none(*(one(m) for m in listed)))
