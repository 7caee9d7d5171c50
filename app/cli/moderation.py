"""``leaderboard moderate hide|ban|restore|list|log`` and ``leaderboard void``: the same use
cases as the moderation endpoints (decision 0036), their output the endpoints' bodies. A list or
a log is printed whole (up to ``--limit``): a command hands out no page cursor."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

from app.api.schemas.moderation import (
    ModeratedPlayersOut,
    ModerationLogOut,
    ModerationOut,
    RestoredOut,
    VoidedOut,
)
from app.bootstrap import Runtime
from app.cli.operations import named_board
from app.cli.output import print_model
from app.domain.keys import is_valid_id
from app.domain.moderation import Action, Moderation, ModerationEvent
from app.domain.storage_keys import RESERVED_GAMES
from app.errors import InvalidInput
from app.services.operations import LogPage, ModerateAsk, ModeratedPlayers

_PAGE = 100


def _game(text: str) -> str:
    if not is_valid_id(text) or text in RESERVED_GAMES:
        raise InvalidInput(f"{text!r} is not a game id")
    return text


async def run_moderate(runtime: Runtime, args: argparse.Namespace) -> int:
    operations = runtime.leaderboard.operations
    game, command = _game(args.game), args.moderate_command
    if command == "list":
        players: list[Moderation] = []
        cursor: str | None = None
        while True:
            page = await operations.moderated_players(game, cursor=cursor, limit=_PAGE)
            players += page.players
            if (cursor := page.next_cursor) is None:
                break
        print_model(ModeratedPlayersOut.of(ModeratedPlayers(players, None)), one_line=args.json)
        return 0
    if command == "log":
        if not 1 <= args.limit <= 1000:
            raise InvalidInput("--limit must be in 1..1000")
        events: list[ModerationEvent] = []
        cursor = None
        while len(events) < args.limit:
            wanted = min(_PAGE, args.limit - len(events))
            logged = await operations.moderation_log(game, cursor=cursor, limit=wanted)
            events += logged.events
            if (cursor := logged.next_cursor) is None:
                break
        print_model(ModerationLogOut.of(LogPage(events, None)), one_line=args.json)
        return 0
    action = None if command == "restore" else Action(command)
    ask = ModerateAsk(args.player, game, action, args.reason, args.by, datetime.now(UTC))
    if action is None:
        print_model(RestoredOut.of(await operations.restore(ask)), one_line=args.json)
    else:
        print_model(ModerationOut.of(await operations.moderate(ask)), one_line=args.json)
    return 0


async def run_void(runtime: Runtime, args: argparse.Namespace) -> int:
    now = datetime.now(UTC)
    leaderboard = runtime.leaderboard
    board, definition = await named_board(args.board, leaderboard.rules.for_reading)
    ask = ModerateAsk(args.player, board.game, None, args.reason, args.by, now)
    print_model(
        VoidedOut.of(await leaderboard.operations.void(board, definition, ask)), one_line=args.json
    )
    return 0
