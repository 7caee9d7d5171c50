"""``leaderboard webhooks set|show|remove|deliveries``: the same use cases as the webhook
endpoints, their output the endpoints' bodies. The secret is never an argument (argv is seen by
every user of the machine, and kept in shell histories): it is read from stdin, or from the
variable ``--secret-env`` names."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime

from app.api.schemas.webhooks import DeliveriesOut, WebhookOut
from app.bootstrap import Runtime
from app.cli.arguments import checked_name, gathered
from app.cli.output import print_json, print_model
from app.errors import InvalidInput
from app.services.ports.webhooks import StoredEvent
from app.services.webhooks import Deliveries, WebhookAsk


def add_webhook_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    operator: argparse.ArgumentParser,
    formatter: type[argparse.HelpFormatter],
) -> None:
    webhooks = commands.add_parser(
        "webhooks",
        help="set, show or remove a game's webhook; its events' deliveries",
        description="A game's webhook (docs/operations.md, Webhooks): the URL its events are "
        "POSTed to, signed with its secret, and what each delivery did.",
        parents=[common],
        formatter_class=formatter,
    )
    webhook_commands = webhooks.add_subparsers(
        dest="webhooks_command", required=True, metavar="WEBHOOKS_COMMAND"
    )

    def webhook_command(name: str, summary: str) -> argparse.ArgumentParser:
        command = webhook_commands.add_parser(
            name,
            help=summary,
            description=summary,
            parents=[common, operator],
            formatter_class=formatter,
        )
        command.add_argument("game", metavar="GAME", help="the game id")
        return command

    setting = webhook_command(
        "set", "set the game's webhook; its secret (16..256 characters) read from stdin"
    )
    setting.add_argument("--url", required=True, help="where events are POSTed: http(s)")
    setting.add_argument(
        "--secret-env",
        metavar="NAME",
        help="read the secret from this environment variable instead of stdin",
    )
    webhook_command("show", "the game's webhook, without its secret")
    webhook_command("remove", "remove the game's webhook")
    deliveries = webhook_command("deliveries", "the game's events, newest first, with attempts")
    deliveries.add_argument("--limit", type=int, default=20, help="most events shown (1..1000)")


def _secret(args: argparse.Namespace) -> str:
    if args.secret_env is not None:
        secret = os.environ.get(args.secret_env)
        if secret is None:
            raise InvalidInput(f"the variable {args.secret_env} is not set")
        return secret
    return sys.stdin.readline().rstrip("\r\n")


async def run_webhooks(runtime: Runtime, args: argparse.Namespace) -> int:
    webhooks = runtime.leaderboard.webhooks
    game, command = checked_name(args.game, "game"), args.webhooks_command
    if command == "set":
        ask = WebhookAsk(game, args.url, _secret(args), datetime.now(UTC))
        print_model(WebhookOut.of(await webhooks.set(ask)), one_line=args.json)
    elif command == "show":
        print_model(WebhookOut.of(await webhooks.show(game)), one_line=args.json)
    elif command == "remove":
        await webhooks.remove(game)
        print_json({"game": game, "removed": True})
    else:

        async def delivered(cursor: str | None, limit: int) -> tuple[list[StoredEvent], str | None]:
            page = await webhooks.deliveries(game, cursor=cursor, limit=limit)
            return page.events, page.next_cursor

        events = await gathered(delivered, limit=args.limit)
        print_model(DeliveriesOut.of(Deliveries(events, None)), one_line=args.json)
    return 0
