"""The ``leaderboard`` command: serve, create-tables (and the operator tools as they land)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

import uvicorn

from app.logging import configure_logging
from app.settings import Settings, get_settings
from app.store.dynamo import DynamoStore, open_client
from app.store.tables import TableNames


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from app.main import create_app

    uvicorn.run(
        create_app(settings),
        host=args.host,
        port=args.port,
        access_log=False,
        log_config=None,
        lifespan="on",
    )
    return 0


async def _create_tables(settings: Settings, deletion_protection: bool) -> list[str]:
    if settings.dynamodb_endpoint is None and settings.environment != "production":
        raise SystemExit("set LEADERBOARD_DYNAMODB_ENDPOINT (the embedded backend makes its own)")
    async with open_client(
        endpoint=settings.dynamodb_endpoint,
        region=settings.region,
        dummy_credentials=settings.dynamodb_endpoint is not None
        and "AWS_ACCESS_KEY_ID" not in os.environ,
    ) as client:
        store = DynamoStore(client, TableNames(settings.scores_table, settings.snapshots_table))
        return await store.create_tables(deletion_protection=deletion_protection)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="leaderboard", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    create = commands.add_parser("create-tables", help="create the tables where missing")
    create.add_argument(
        "--deletion-protection", action="store_true", help="turn on deletion protection"
    )
    args = parser.parse_args(argv)
    configure_logging()
    try:
        settings = get_settings()
    except ValueError as exc:
        print(f"leaderboard: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return _serve(args, settings)
    created = asyncio.run(_create_tables(settings, args.deletion_protection))
    print("created: " + (", ".join(created) if created else "nothing (all tables exist)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
