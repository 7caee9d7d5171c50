"""The ``leaderboard`` command line: its commands, their options and help."""

from __future__ import annotations

import argparse

from app import __version__
from app.cli.definitions import add_entry_options
from app.cli.webhooks import add_webhook_commands
from app.domain.definitions import BoardDefinition, Operator, ScoreFormat
from app.domain.keys import Order
from app.domain.shards import SHARD_COUNTS

BOARD_HELP = (
    "a board: GAME#VARIANT#PERIOD, PERIOD being alltime, day, week or month (the current ones), "
    "day#YYYY-MM-DD, week#YYYY-Www or month#YYYY-MM; the API's forms work too "
    "(trivia#alltopics#day:2026-11-30, trivia/alltopics/day:2026-11-30)"
)
EPILOG = """\
The operator commands work on --endpoint URL, else LEADERBOARD_DYNAMODB_ENDPOINT, else (not in
production) the embedded backend of the `leaderboard serve` running on this machine, each of which
records where it is while it runs (with several running, --serve PORT chooses one); each says on
stderr which DynamoDB and which service it works on. stdout holds a command's output (--json: one
line of JSON, its shape in docs/operations.md); logs go to stderr (warnings only, unless -v, which
goes anywhere on the line). Configuration: the LEADERBOARD_ variables in docs/configuration.md."""


class _DefaultsShown(argparse.HelpFormatter):
    """Help that says an option's default, where it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        if (
            text
            and action.default not in (None, False, argparse.SUPPRESS)
            and action.option_strings
        ):
            text += " (default: %(default)s)"
        return text


def _add_boards_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    operator: argparse.ArgumentParser,
    formatter: type[argparse.HelpFormatter],
) -> None:
    """``leaderboard boards define|list|show``."""
    boards = commands.add_parser(
        "boards",
        help="define how a variant's boards rank, list and show definitions",
        description="Board definitions: how each (game, variant)'s boards rank (order, "
        "operator), the periods a score fans out to, and how long period boards live. A change "
        "reaches every task of the service within LEADERBOARD_DEFINITION_CACHE_SECONDS.",
        parents=[common],
        formatter_class=formatter,
    )
    boards_commands = boards.add_subparsers(
        dest="boards_command", required=True, metavar="BOARDS_COMMAND"
    )

    def boards_command(name: str, summary: str) -> argparse.ArgumentParser:
        return boards_commands.add_parser(
            name,
            help=summary,
            description=summary,
            parents=[common, operator],
            formatter_class=formatter,
        )

    define = boards_command(
        "define",
        "define (or redefine) a variant's boards; an option left out takes its default, not the "
        "stored value. The order, operator and shards of boards that hold entries cannot change",
    )
    define.add_argument("game", metavar="GAME", help="the game id, as submissions name it")
    define.add_argument("variant", metavar="VARIANT", help="the variant id")
    define.add_argument(
        "--order",
        choices=[o.value for o in Order],
        default=BoardDefinition().order.value,
        help="desc: higher is better; asc: lower is better",
    )
    define.add_argument(
        "--operator",
        choices=[o.value for o in Operator],
        default=BoardDefinition().operator.value,
        help="best: keep the best score; latest: the latest achievedAt replaces; sum: each "
        "accepted submission adds to the player's total",
    )
    define.add_argument(
        "--periods",
        help="the boards a score fans out to, comma-separated, of alltime, day, week, month, "
        "season (default: alltime,day,week, and season where --season is given)",
    )
    define.add_argument(
        "--retention-days",
        type=int,
        help="days period boards live after they close, 1..3650 (default: "
        "LEADERBOARD_RETENTION_DAYS)",
    )
    define.add_argument(
        "--score-format",
        choices=[f.value for f in ScoreFormat],
        default=BoardDefinition().score_format.value,
        help="how the scores read: integer (points, a count) or duration_ms (a time in "
        "milliseconds, shown m:ss.fff)",
    )
    define.add_argument(
        "--shards",
        type=int,
        choices=SHARD_COUNTS,
        default=BoardDefinition().shards,
        help="how many index partitions each period board is spread over, by a stable hash of "
        "the player id: more than 1 for a board that must take more than one partition's "
        "writes (a live show's round; docs/scale.md)",
    )
    define.add_argument(
        "--score-min",
        type=int,
        help="the lowest score a submission may carry, inclusive (default: no bound but the "
        "score range's); one below it is refused (422 score-out-of-bounds), nothing stored",
    )
    define.add_argument(
        "--score-max",
        type=int,
        help="the highest score a submission may carry, inclusive, at least --score-min "
        "(default: no bound but the score range's); for sum, it bounds each submission",
    )
    define.add_argument(
        "--time-zone",
        help="the IANA zone whose local midnight starts the day, week and month boards "
        "(Europe/Paris; default: UTC); it cannot change while the boards hold entries",
    )
    define.add_argument(
        "--season",
        action="append",
        metavar="ID,START,END",
        help="a season: its id and ISO 8601 start and end (s1,2027-01-01T00:00Z,"
        "2027-04-01T00:00Z); repeat for each. A definition is whole: name the seasons that "
        "have ended too, as they were",
    )
    add_entry_options(define)
    boards_list = boards_command("list", "every defined variant of a game")
    boards_list.add_argument("game", metavar="GAME", help="the game id")
    show = boards_command("show", "how a variant's boards rank (its definition or the default)")
    show.add_argument("game", metavar="GAME", help="the game id")
    show.add_argument("variant", metavar="VARIANT", help="the variant id")


def _operator_options() -> argparse.ArgumentParser:
    """What every operator command takes: where to work, and how to report."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--json",
        action="store_true",
        help="print the result as one line of JSON, in the command's own shape "
        "(docs/operations.md lists them)",
    )
    options.add_argument(
        "--endpoint",
        metavar="URL",
        help="the DynamoDB endpoint to work on (default: LEADERBOARD_DYNAMODB_ENDPOINT; with "
        "none, and not in production, the embedded backend of the `leaderboard serve` running "
        "on this machine)",
    )
    options.add_argument(
        "--serve",
        metavar="PORT",
        help="with several `leaderboard serve`s running on this machine, the one whose embedded "
        "backend to work on: the port it listens on (or its process id)",
    )
    return options


def build_parser() -> argparse.ArgumentParser:
    formatter = _DefaultsShown
    parser = argparse.ArgumentParser(
        prog="leaderboard",
        description="Game leaderboards on DynamoDB: serve the HTTP API, and the operator's tools.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"leaderboard {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log info lines too (on stderr)"
    )
    # -v goes anywhere on the line: every parser takes it, and one that is not given it leaves
    # the value another set (SUPPRESS: no default of its own to overwrite it with).
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log info lines too (on stderr)",
    )
    operator = _operator_options()
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str, description: str | None = None) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=description or summary,
            parents=[common, operator],
            formatter_class=formatter,
        )

    serve = commands.add_parser(
        "serve",
        help="run the HTTP service",
        description="Run the HTTP service, printing where it listens. With no "
        "LEADERBOARD_DYNAMODB_ENDPOINT it starts an embedded, in-memory DynamoDB for as long as "
        "it runs, recorded (in a file of its own) for the operator commands on this machine. "
        "Logs every request as one line on stderr.",
        parents=[common],
        formatter_class=formatter,
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on")
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free one)")
    serve.add_argument(
        "--demo",
        action="store_true",
        help="fill ten boards with demo players (embedded backend only): the all-time, week and "
        "day boards of trivia/alltopics and trivia/sports, kart/time-trial's all-time and week "
        "(lap times, lower is better) and trivia/season's all-time and month (points that add "
        "up); /readyz says ready once they are in",
    )

    create = command(
        "create-tables",
        "create the tables where missing",
        "Create the Scores and Snapshots tables where they are missing, turn TTL on for the Scores "
        "table where it is off (also on one already there), and report what was there.",
    )
    create.add_argument(
        "--deletion-protection",
        action="store_true",
        help="create them with deletion protection, and turn it on for existing ones that lack it",
    )

    keys = commands.add_parser(
        "keys",
        help="create, list and revoke API keys",
        description="Create, list and revoke API keys, stored as SHA-256 digests in the Scores "
        "table.",
        parents=[common],
        formatter_class=formatter,
    )
    keys_commands = keys.add_subparsers(dest="keys_command", required=True, metavar="KEYS_COMMAND")

    def keys_command(name: str, summary: str) -> argparse.ArgumentParser:
        return keys_commands.add_parser(
            name,
            help=summary,
            description=summary,
            parents=[common, operator],
            formatter_class=formatter,
        )

    key_create = keys_command(
        "create", "make a key and print it once (only its SHA-256 digest is stored)"
    )
    key_create.add_argument(
        "--name",
        required=True,
        help="the client it is for: its identity for idempotency keys and rate limits",
    )
    key_create.add_argument(
        "--scope",
        action="append",
        required=True,
        help="submit:<game>, submit:* or admin; repeat for several",
    )
    key_create.add_argument(
        "--kind",
        choices=["live", "test"],
        default="live",
        help="the key's prefix, lb_live_ or lb_test_, telling people and secret scanners what it "
        "is for; both kinds work alike",
    )
    keys_command("list", "every stored key: id, name, scopes, created, state (never the key)")
    key_revoke = keys_command("revoke", "revoke every key of a client, or one key by its id")
    key_revoke.add_argument("name", nargs="?", help="revoke every key of this client")
    key_revoke.add_argument("--id", help="revoke the one key with this id (from `keys list`)")

    _add_boards_commands(commands, common, operator, formatter)

    seed = command(
        "seed",
        "bulk-load a board from CSV or JSON lines",
        "Bulk-load a board under its seeding lease: the file is checked whole first (bad rows "
        "are listed and nothing is written), then each row is written where it beats the board's "
        "entry, and the counters are rebuilt. Progress goes to stderr.",
    )
    seed.add_argument("board", metavar="BOARD", help=BOARD_HELP)
    seed.add_argument(
        "file",
        metavar="FILE",
        help="CSV with a header, or JSON lines: playerId, score, "
        "achievedAt, displayName?, country?",
    )
    seed.add_argument(
        "--format",
        choices=["csv", "jsonl"],
        help="the file's format (default: from its suffix, else its content)",
    )
    seed.add_argument(
        "--grace-seconds",
        type=float,
        help="wait after taking the lease, for submissions already under way (default: "
        "LEADERBOARD_REQUEST_DEADLINE_SECONDS plus LEADERBOARD_LEASE_CACHE_SECONDS, 11 s)",
    )
    seed.add_argument(
        "--lease-ttl", type=float, help="seconds a dead seeder's lease outlives it (default: 60)"
    )
    seed.add_argument("--concurrency", type=int, help="row writes in flight (default: 16)")

    reconcile = command(
        "reconcile",
        "compare a board's counters with a recount",
        "Recount a board twice from its index and compare with its counters; with --apply, "
        "repair only where both passes agree (and first give any row of another order than the "
        "board's the board's order). Progress goes to stderr.",
    )
    reconcile.add_argument("board", metavar="BOARD", nargs="?", help=BOARD_HELP)
    reconcile.add_argument("--apply", action="store_true", help="repair (default: a dry run)")
    reconcile.add_argument(
        "--live",
        action="store_true",
        help="every board still taking submissions, one after another (as the stack's schedule "
        "runs it); prints one JSON line, with CloudWatch's embedded metrics",
    )

    snapshot = command("snapshot", "snapshot a board now, or every closed period")
    snapshot.add_argument("board", metavar="BOARD", nargs="?", help=BOARD_HELP)
    snapshot.add_argument(
        "--closed-periods",
        action="store_true",
        help="snapshot every registered day, week and month board whose period has closed and "
        "has no snapshot yet (idempotent: run it hourly)",
    )
    snapshot.add_argument("--top", type=int, default=100, help="entries kept (1..1000)")

    erase = command(
        "erase",
        "erase a player everywhere (GDPR)",
        "Erase a player: their rows on every board, their entries in snapshots, their stored "
        "submission responses. Idempotent.",
    )
    erase.add_argument("player", metavar="PLAYER", help="the player id")
    _add_moderation_commands(commands, common, operator, formatter)
    add_webhook_commands(commands, common, operator, formatter)
    return parser


def _add_moderation_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
    operator: argparse.ArgumentParser,
    formatter: type[argparse.HelpFormatter],
) -> None:
    """``leaderboard moderate hide|ban|restore|list|log`` and ``leaderboard void``."""
    moderate = commands.add_parser(
        "moderate",
        help="hide, ban or restore a player in a game; the moderated players; the audit log",
        description="Moderation (docs/operations.md, handling a cheater): a hidden player "
        "disappears from every board of the game and keeps playing unaware; a banned one's "
        "submissions are refused too; a restore brings their entries back as they are.",
        parents=[common],
        formatter_class=formatter,
    )
    moderate_commands = moderate.add_subparsers(
        dest="moderate_command", required=True, metavar="MODERATE_COMMAND"
    )

    def moderate_command(name: str, summary: str) -> argparse.ArgumentParser:
        return moderate_commands.add_parser(
            name,
            help=summary,
            description=summary,
            parents=[common, operator],
            formatter_class=formatter,
        )

    by_help = "who acts, as the audit log names them (default: cli)"
    for name, summary in (
        ("hide", "hide a player on every board of a game (their submissions kept, hidden)"),
        ("ban", "hide a player on every board of a game and refuse their submissions"),
        ("restore", "restore a moderated player: their entries come back as they are"),
    ):
        acting = moderate_command(name, summary)
        acting.add_argument("game", metavar="GAME", help="the game id")
        acting.add_argument("player", metavar="PLAYER", help="the player id")
        acting.add_argument(
            "--reason", required=name != "restore", default="", help="why, for the audit log"
        )
        acting.add_argument("--by", default="cli", help=by_help)
    listing = moderate_command("list", "the game's moderated players")
    listing.add_argument("game", metavar="GAME", help="the game id")
    log = moderate_command("log", "the game's moderation log, newest first")
    log.add_argument("game", metavar="GAME", help="the game id")
    log.add_argument("--limit", type=int, default=100, help="most events shown (1..1000)")

    void = commands.add_parser(
        "void",
        help="void one player's entry on one board (an impossible score)",
        description="Delete a player's entry on one board with its counts, logged in the game's "
        "moderation log; the player may submit again.",
        parents=[common, operator],
        formatter_class=formatter,
    )
    void.add_argument("board", metavar="BOARD", help=BOARD_HELP)
    void.add_argument("player", metavar="PLAYER", help="the player id")
    void.add_argument("--reason", default="", help="why, for the audit log")
    void.add_argument("--by", default="cli", help=by_help)
