"""The ``leaderboard`` command: serve, create-tables, keys (and the operator tools as they land)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn

from app.errors import LeaderboardError
from app.logging import configure_logging
from app.services.keys import create_api_key, list_api_keys, revoke_api_key
from app.settings import Settings, get_settings
from app.store.dynamo import DynamoStore, open_client
from app.store.keys import DynamoKeyStore
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
        # The client address (read limits) comes from X-Forwarded-For only behind these proxies.
        proxy_headers=True,
        forwarded_allow_ips=settings.forwarded_allow_ips,
    )
    return 0


@asynccontextmanager
async def _store(settings: Settings) -> AsyncIterator[DynamoStore]:
    if settings.dynamodb_endpoint is None and settings.environment != "production":
        raise SystemExit(
            "set LEADERBOARD_DYNAMODB_ENDPOINT: the embedded backend lives only as long as "
            "`leaderboard serve`"
        )
    async with open_client(
        endpoint=settings.dynamodb_endpoint,
        region=settings.region,
        dummy_credentials=settings.dynamodb_endpoint is not None
        and "AWS_ACCESS_KEY_ID" not in os.environ,
    ) as client:
        yield DynamoStore(client, TableNames(settings.scores_table, settings.snapshots_table))


async def _create_tables(settings: Settings, deletion_protection: bool) -> int:
    async with _store(settings) as store:
        created = await store.create_tables(deletion_protection=deletion_protection)
    print("created: " + (", ".join(created) if created else "nothing (all tables exist)"))
    return 0


async def _keys(settings: Settings, args: argparse.Namespace) -> int:
    async with _store(settings) as store:
        keys = DynamoKeyStore(store.client, store.tables)
        if args.keys_command == "create":
            token = await create_api_key(keys, args.name, args.scope, kind=args.kind)
            print(token)  # shown this once; only its hash is kept
            print(
                f"key for {args.name} with scopes {', '.join(args.scope)}: store it now, "
                "it cannot be shown again",
                file=sys.stderr,
            )
        elif args.keys_command == "list":
            for info in await list_api_keys(keys):
                state = f"revoked {info.revoked_at}" if info.revoked_at else "active"
                print(
                    f"{info.key_id}  {info.name}  {','.join(info.scopes)}  {info.created_at}  {state}"
                )
        else:
            revoked = await revoke_api_key(keys, args.name, key_id=args.id)
            for info in revoked:
                print(f"revoked {info.key_id} ({info.name})")
    return 0


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
    keys = commands.add_parser("keys", help="create, list and revoke API keys")
    keys_commands = keys.add_subparsers(dest="keys_command", required=True)
    key_create = keys_commands.add_parser("create", help="make a key; prints it once")
    key_create.add_argument("--name", required=True, help="the client: scopes idempotency keys")
    key_create.add_argument(
        "--scope", action="append", required=True, help="submit:<game>, submit:*, admin"
    )
    key_create.add_argument("--kind", choices=["live", "test"], default="live")
    keys_commands.add_parser("list", help="every stored key (never the key itself)")
    key_revoke = keys_commands.add_parser("revoke", help="revoke a client's keys, or one key")
    key_revoke.add_argument("name", nargs="?", help="revoke every key of this client")
    key_revoke.add_argument("--id", help="revoke the one key with this id (from `keys list`)")
    args = parser.parse_args(argv)
    configure_logging()
    try:
        settings = get_settings()
    except ValueError as exc:
        print(f"leaderboard: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return _serve(args, settings)
    try:
        if args.command == "create-tables":
            return asyncio.run(_create_tables(settings, args.deletion_protection))
        return asyncio.run(_keys(settings, args))
    except LeaderboardError as exc:
        print(f"leaderboard: {exc.detail}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
