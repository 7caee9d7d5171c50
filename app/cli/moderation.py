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
from app.cli.arguments import checked_name, gathered
from app.cli.operations import named_board
from app.cli.output import print_model
from app.domain.moderation import Action, Moderation, ModerationEvent
from app.services.operations import LogPage, ModerateAsk, ModeratedPlayers


async def run_moderate(runtime: Runtime, args: argparse.Namespace) -> int:
    operations = runtime.leaderboard.operations
    game, command = checked_name(args.game, "game"), args.moderate_command
    if command == "list":

        async def listed(cursor: str | None, limit: int) -> tuple[list[Moderation], str | None]:
            page = await operations.moderated_players(game, cursor=cursor, limit=limit)
            return page.players, page.next_cursor

        players = await gathered(listed)
        print_model(ModeratedPlayersOut.of(ModeratedPlayers(players, None)), one_line=args.json)
        return 0
    if command == "log":

        async def logged(
            cursor: str | None, limit: int
        ) -> tuple[list[ModerationEvent], str | None]:
            page = await operations.moderation_log(game, cursor=cursor, limit=limit)
            return page.events, page.next_cursor

        events = await gathered(logged, limit=args.limit)
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
