"""The ``leaderboard`` command: serve the API, and the operator's tools (create-tables, keys, seed,
reconcile, snapshot, erase, moderate, webhooks), each through the composition root like the service itself.

stdout holds each command's output and nothing else (``--json``: one line of JSON); logs go to
stderr (operator commands log warnings only, unless ``-v``), and so do the one line an operator
command starts with, saying which DynamoDB and which service it works on, and long work's progress
from start to end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable, Coroutine
from typing import Any

from app.bootstrap import Runtime, open_runtime
from app.cli.admin import run_boards, run_create_tables, run_keys
from app.cli.moderation import run_moderate, run_void
from app.cli.operations import run_erase, run_reconcile, run_seed, run_snapshot
from app.cli.parser import build_parser
from app.cli.webhooks import run_webhooks
from app.configuration import CommandSettings, ConfigurationError, get_settings, load_settings
from app.errors import LeaderboardError
from app.local.serves import NoBackend, command_backend, record_service
from app.logging import configure_logging
from app.settings import Settings

__all__ = ["build_parser", "main"]


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from app.main import create_app
    from app.server import ServiceServer, server_config

    app = create_app(settings, demo=args.demo)

    def announce(urls: list[str]) -> None:
        runtime: Runtime | None = getattr(app.state, "runtime", None)
        embedded = runtime is not None and settings.uses_embedded_backend
        # Recorded before it is said, so that a command started on the word finds the port.
        recorded = record_service(settings, urls[0]) if embedded else None
        print(
            f"leaderboard: listening on {', '.join(urls)} (the board viewer at {urls[0]}/, "
            f"OpenAPI at {urls[0]}/docs)",
            flush=True,
        )
        if runtime is not None and embedded:
            port = urls[0].rsplit(":", 1)[-1]
            found = (
                f"`leaderboard` operator commands on this machine use it (recorded in {recorded};"
                f" with several serves running, `--serve {port}` chooses this one)"
                if recorded is not None
                else "operator commands cannot find it (see the warning above): give them "
                f"--endpoint {runtime.endpoint}"
            )
            print(
                f"leaderboard: embedded DynamoDB at {runtime.endpoint}, in memory until this "
                f"stops; {found}",
                flush=True,
            )

    config = server_config(
        app,
        host=args.host,
        port=args.port,
        forwarded_allow_ips=settings.forwarded_allow_ips,
        shutdown_grace_s=settings.shutdown_grace_seconds,
        keep_alive_s=settings.keep_alive_seconds,
    )
    server = ServiceServer(config, announce=announce)
    # Ctrl-C ends the server gracefully, then uvicorn raises the signal again, as uvicorn.run.
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    return 0 if server.started else 3  # uvicorn's own code for a failed start-up


_COMMANDS: dict[str, Callable[[Runtime, argparse.Namespace], Coroutine[Any, Any, int]]] = {
    "create-tables": run_create_tables,
    "boards": run_boards,
    "keys": run_keys,
    "seed": run_seed,
    "reconcile": run_reconcile,
    "snapshot": run_snapshot,
    "erase": run_erase,
    "moderate": run_moderate,
    "void": run_void,
    "webhooks": run_webhooks,
}


async def _run(
    command: Callable[[Runtime, argparse.Namespace], Coroutine[Any, Any, int]],
    settings: Settings,
    args: argparse.Namespace,
) -> int:
    backend = command_backend(settings, endpoint=args.endpoint, serve=args.serve)
    print(f"leaderboard: working on {backend.where}", file=sys.stderr, flush=True)
    async with open_runtime(backend.settings) as runtime:
        return await command(runtime, args)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # serve logs every request (info); an operator command's stderr holds warnings only, unless
    # asked, so that its output reads alone.
    verbose = args.command == "serve" or args.verbose
    configure_logging(level=logging.INFO if verbose else logging.WARNING)
    try:
        # An operator command hands out no page cursor: production needs no cursor secret for it.
        settings = get_settings() if args.command == "serve" else load_settings(CommandSettings)
    except ConfigurationError as exc:
        print(f"leaderboard: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return _serve(args, settings)
    try:
        return asyncio.run(_run(_COMMANDS[args.command], settings, args))
    except NoBackend as exc:
        print(f"leaderboard: {exc}", file=sys.stderr)
        return 2
    except LeaderboardError as exc:
        print(f"leaderboard: {exc.detail}", file=sys.stderr)
        for error in exc.errors:
            print("  " + ", ".join(f"{k}: {v}" for k, v in error.items()), file=sys.stderr)
        return 2
