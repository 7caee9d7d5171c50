"""Moderation of a player within a game (DESIGN.md section 14, decision 0036): hide or ban them
(``moderate``), restore them (``restore``), void one entry (``void_entry``), and the game's
listing and audit log. A moderation writes its record first, then sweeps the player's rows of
every board of the game (``_moderation_sweep``); a later pass, as the record says, finds a row a
submission wrote that read no record before the first (the reconciler does too)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

import structlog

from app import telemetry
from app.domain.buckets import BucketLayout
from app.domain.calendar import board_is_expired
from app.domain.clock import to_ms
from app.domain.cursor import Cursor, CursorError, decode_cursor, encode_cursor
from app.domain.definitions import BoardDefinition
from app.domain.keys import is_valid_id
from app.domain.models import CounterDelta, Entry, Standing
from app.domain.moderation import (
    Action,
    Logged,
    Moderation,
    ModerationEvent,
)
from app.domain.periods import Board
from app.domain.shards import player_partition
from app.domain.storage_keys import moderation_listing_pk, moderation_log_pk
from app.domain.ties import TiePlace
from app.errors import (
    BoardBeingSeeded,
    InvalidCursor,
    InvalidInput,
    LeaseHeld,
    NotFound,
    Throttled,
    TransactionCancelled,
    Unavailable,
)
from app.services.operations._moderation_sweep import SweepAsk, sweep
from app.services.ports import Stores
from app.services.work import persist, wait_before

log = structlog.get_logger(__name__)

MAX_REASON = 500
"""The longest reason kept (characters)."""
_VOID_ATTEMPTS = 8


@dataclass(frozen=True)
class ModerationPolicy:
    layout: BucketLayout
    sweep_again_s: float
    """How long after a moderation its later pass is due: a request deadline and a second, by
    when every submission that read no record before it has written or given up."""
    cursor_secret: bytes


@dataclass(frozen=True)
class ModerateAsk:
    """A moderator's act on ``player_id`` in ``game``: ``action`` ``None`` is a restore."""

    player_id: str
    game: str
    action: Action | None
    reason: str
    by: str
    """The acting key's name, for the log."""
    now: datetime


@dataclass(frozen=True)
class Restored:
    player_id: str
    game: str
    rows: int
    """Rows shown again by this restore."""


@dataclass(frozen=True)
class ModeratedPlayers:
    players: list[Moderation]
    next_cursor: str | None


@dataclass(frozen=True)
class LogPage:
    events: list[ModerationEvent]
    next_cursor: str | None


def _checked(ask: ModerateAsk) -> None:
    errors = []
    if not is_valid_id(ask.player_id):
        errors.append({"field": "playerId", "message": "not a player id"})
    if len(ask.reason) > MAX_REASON:
        errors.append({"field": "reason", "message": f"at most {MAX_REASON} characters"})
    if errors:
        raise InvalidInput("the moderation is not valid: see errors", errors=errors)


def _event_id() -> str:
    """Unique within the event's millisecond, and in the order this task made them (the log's
    sort key is ``<at>#<id>``, read newest first): this process's monotonic clock, then
    randomness for another task's event of the same moment."""
    return f"{time.monotonic_ns():020d}{uuid.uuid4().hex[:4]}"


def _event(ask: ModerateAsk, action: Logged, board_id: str | None = None) -> ModerationEvent:
    return ModerationEvent(
        game=ask.game,
        at_ms=to_ms(ask.now),
        event_id=_event_id(),
        action=action,
        player_id=ask.player_id,
        reason=ask.reason,
        by=ask.by,
        board_id=board_id,
    )


async def moderate(stores: Stores, policy: ModerationPolicy, ask: ModerateAsk) -> Moderation:
    """Hide or ban the player in the game: the record (with its listing item and log event)
    first, so that every submission from then on reads it, then the sweep. A player moderated
    already keeps the moment they were first (``since``); the action and reason are the new."""
    _checked(ask)
    action = ask.action or Action.HIDE
    now_ms = to_ms(ask.now)
    moderation = stores.moderation
    found = await moderation.moderation_of(ask.player_id, ask.game)
    record = Moderation(
        player_id=ask.player_id,
        game=ask.game,
        action=action,
        reason=ask.reason,
        since_ms=now_ms if found is None else found.since_ms,
        by=ask.by,
        sweep_again_ms=now_ms + int(policy.sweep_again_s * 1000),
    )
    event = _event(ask, Logged(action.value))
    await persist(lambda: moderation.put_moderation(record, event))
    telemetry.moderation_action("ban" if action is Action.BAN else "hide")
    sweep_ask = SweepAsk(
        ask.player_id, ask.game, hide=True, since_ms=record.since_ms, now_s=now_ms // 1000
    )
    hidden = await sweep(stores, policy.layout, sweep_ask)
    log.info("player_moderated", game=ask.game, action=action.value, rows_hidden=hidden)
    return record


async def sweep_again(
    stores: Stores, layout: BucketLayout, record: Moderation, now: datetime
) -> int:
    """The record's later pass, if it still asks for it: the rows hidden (then it asks no more)."""
    due = record.sweep_again_ms
    found = await stores.moderation.moderation_of(record.player_id, record.game)
    if due is None or found is None or found.sweep_again_ms != due:
        return 0  # restored, or moderated again (which asks for a pass of its own)
    now_s = to_ms(now) // 1000
    ask = SweepAsk(record.player_id, record.game, hide=True, since_ms=found.since_ms, now_s=now_s)
    hidden = await sweep(stores, layout, ask)
    await persist(
        lambda: stores.moderation.clear_sweep_again(record.player_id, record.game, due_ms=due)
    )
    if hidden:
        log.info("moderation_later_pass_hid_rows", game=record.game, rows=hidden)
    return hidden


async def restore(stores: Stores, policy: ModerationPolicy, ask: ModerateAsk) -> Restored:
    """Delete the record (its listing item, and a log event, in one transaction), then show each
    hidden row again. With no record, the rows still hidden are shown (a restore that stopped
    part-way, run again); ``NotFound`` if there was neither. No later pass is needed: a
    submission that writes a row hidden checks, in its transaction, that the record is there."""
    _checked(ask)
    removed = await persist(
        lambda: stores.moderation.remove_moderation(
            ask.player_id, ask.game, _event(ask, Logged.RESTORE)
        )
    )
    now_ms = to_ms(ask.now)
    sweep_ask = SweepAsk(ask.player_id, ask.game, hide=False, since_ms=now_ms, now_s=now_ms // 1000)
    shown = await sweep(stores, policy.layout, sweep_ask)
    if not removed and not shown:
        raise NotFound(f"player {ask.player_id!r} is not moderated in game {ask.game!r}")
    if removed:
        telemetry.moderation_action("restore")
    log.info("player_restored", game=ask.game, rows_shown=shown)
    return Restored(ask.player_id, ask.game, shown)


@dataclass(frozen=True)
class VoidAsk:
    board: Board
    definition: BoardDefinition
    moderation: ModerateAsk


async def void_entry(stores: Stores, policy: ModerationPolicy, ask: VoidAsk) -> Entry:
    """Delete the player's entry on one board with its counters (as erasure deletes a row; a
    hidden row holds none), and log it; the player may submit again. On a variant with
    ``cohortSize`` their row on their cohort goes too, first (decision 0039): a void that stops
    between the two leaves the board's entry, and voiding again finishes it. ``NotFound`` where
    they have no entry."""
    asked, board = ask.moderation, ask.board
    _checked(asked)
    player_id, now_s = asked.player_id, to_ms(asked.now) // 1000
    if board_is_expired(board, now=asked.now, definition=ask.definition):
        raise NotFound(f"player {player_id!r} is not on board {board.board_id}")
    if ask.definition.cohort_size is not None and board.cohort is None:
        await _delete_row(
            stores,
            policy,
            board,
            lambda: stores.standings.cohort_row(board.board_id, player_id),
            now_s,
        )
    row_id = player_partition(board.board_id, player_id, ask.definition.shards)
    voided = await _delete_row(
        stores, policy, board, lambda: stores.moderation.read_row(row_id, player_id), now_s
    )
    if voided is None:
        raise NotFound(f"player {player_id!r} is not on board {board.board_id}")
    event = _event(asked, Logged.VOID, board.board_id)
    await persist(lambda: stores.moderation.log_event(event))
    telemetry.moderation_action("void")
    telemetry.rows_moderated("voided")
    return voided.entry


async def _delete_row(
    stores: Stores,
    policy: ModerationPolicy,
    board: Board,
    read: Callable[[], Awaitable[Standing | None]],
    now_s: int,
) -> Standing | None:
    """The row ``read`` finds, deleted with its counters (read again after a cancelled try);
    ``None`` where there is none."""
    for attempt in range(_VOID_ATTEMPTS):
        await wait_before(attempt, base_s=0.02, cap_s=1.0)
        row = await read()
        if row is None:
            return None
        try:
            await stores.standings.delete_standing(
                row, counters=_leaving(policy.layout, row), now_s=now_s
            )
        except LeaseHeld:
            raise BoardBeingSeeded(
                f"board {board.board_id} is being seeded; void the entry when it is done",
                retry_after=30,
            ) from None
        except TransactionCancelled as cancelled:
            telemetry.transaction_cancelled("moderation", cancelled.kind)
        except Throttled:
            telemetry.transaction_cancelled("moderation", "throttled")
        else:
            return row
    raise Unavailable(f"board {board.board_id} is too contended to void the entry now; retry")


def _leaving(layout: BucketLayout, row: Standing) -> tuple[CounterDelta, ...]:
    if row.hidden:
        return ()
    tie = None if row.tie_mark is None else TiePlace.of(row.entry.key, row.tie_mark)
    return (CounterDelta(*layout.slot_of(row.entry.score), -1, tie),)


# ---- the listing and the log ---------------------------------------------------------------------


def _after(cursor: str | None, scope: str, secret: bytes) -> str:
    if cursor is None:
        return ""
    try:
        return decode_cursor(cursor, secret, board_id=scope).rank_key
    except CursorError as exc:
        raise InvalidCursor(str(exc).replace("board", "list")) from None


def _cursor(last: str | None, scope: str, secret: bytes) -> str | None:
    return None if last is None else encode_cursor(Cursor(scope, last, "", 0), secret)


async def moderated_players(
    stores: Stores, policy: ModerationPolicy, game: str, cursor: str | None, limit: int
) -> ModeratedPlayers:
    scope, secret = moderation_listing_pk(game), policy.cursor_secret
    page = await stores.moderation.moderated_players(
        game, after=_after(cursor, scope, secret), limit=limit
    )
    return ModeratedPlayers(page.players, _cursor(page.last, scope, secret))


async def moderation_log(
    stores: Stores, policy: ModerationPolicy, game: str, cursor: str | None, limit: int
) -> LogPage:
    scope, secret = moderation_log_pk(game), policy.cursor_secret
    page = await stores.moderation.moderation_log(
        game, before=_after(cursor, scope, secret), limit=limit
    )
    return LogPage(page.events, _cursor(page.last, scope, secret))
