"""The setup commands: create-tables, keys, boards (definitions)."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from app.api.invalid import invalid_input, validation_errors
from app.api.schemas import (
    BoardDefinitionIn,
    BoardDefinitionOut,
)
from app.bootstrap import Runtime
from app.cli.arguments import checked_name
from app.cli.definitions import definition_fields
from app.cli.output import as_json, print_json, print_model
from app.cli.progress import ProgressReport
from app.domain.definitions import BoardDefinition
from app.services.api_keys import ApiKeyInfo, digest_of
from app.services.ports.operations import API_KEY_ID_LENGTH


async def run_create_tables(runtime: Runtime, args: argparse.Namespace) -> int:
    operations = runtime.leaderboard.operations
    report = await operations.create_tables(deletion_protection=args.deletion_protection)
    if args.json:
        print_json(
            {
                "created": report.created,
                "ttlEnabled": report.ttl_enabled,
                "deletionProtectionEnabled": report.protected,
                "indexAdded": report.index_added,
                "unchanged": report.unchanged,
            }
        )
        return 0
    print("created: " + (", ".join(report.created) if report.created else "nothing"))
    if report.ttl_enabled:
        print("TTL turned on: " + ", ".join(report.ttl_enabled))
    if report.protected:
        print("deletion protection turned on: " + ", ".join(report.protected))
    if report.index_added:
        print(
            "index added (DynamoDB fills it from the table; the service is ready once it is "
            "ACTIVE): " + ", ".join(report.index_added)
        )
    if report.unchanged:
        print("already there: " + ", ".join(report.unchanged))
    return 0


async def run_keys(runtime: Runtime, args: argparse.Namespace) -> int:
    keys = runtime.leaderboard.api_keys
    if args.keys_command == "create":
        token = await keys.create(args.name, args.scope, kind=args.kind)
        # Shown this once; only its hash is kept.
        if args.json:
            print_json(
                {
                    "key": token,
                    "keyId": digest_of(token)[:API_KEY_ID_LENGTH],
                    "name": args.name,
                    "scopes": args.scope,
                    "kind": args.kind,
                }
            )
        else:
            print(token)
        print(
            f"key for {args.name} with scopes {', '.join(args.scope)}: store it now, "
            "it cannot be shown again",
            file=sys.stderr,
        )
    elif args.keys_command == "list":
        listed = await keys.list()
        if args.json:
            print_json({"keys": [_key_json(info) for info in listed]})
            return 0
        rows = [
            [
                info.key_id,
                info.name,
                ",".join(info.scopes),
                info.created_at,
                f"revoked {info.revoked_at}" if info.revoked_at else "active",
            ]
            for info in listed
        ]
        print(_table(["KEY ID", "NAME", "SCOPES", "CREATED", "STATE"], rows))
        if not listed:
            print(
                "no stored keys (keys configured in LEADERBOARD_API_KEYS are not stored here)",
                file=sys.stderr,
            )
    else:
        revoked = await keys.revoke(args.name, key_id=args.id)
        if args.json:
            print_json({"revoked": [_key_json(info) for info in revoked]})
            return 0
        for info in revoked:
            print(f"revoked {info.key_id} ({info.name})")
    return 0


async def run_boards(runtime: Runtime, args: argparse.Namespace) -> int:
    rules = runtime.leaderboard.rules
    if args.boards_command == "list":
        game = checked_name(args.game, "game")
        listed = await rules.variants(game)
        if args.json:
            print_json(
                {
                    "game": game,
                    "variants": [
                        as_json(
                            BoardDefinitionOut.of(
                                game, d.variant, d.definition, defined_at=d.defined_at
                            )
                        )
                        for d in listed
                    ],
                    "undefinedVariants": "default" if rules.allows_undefined else "refused",
                }
            )
            return 0
        rows = [
            [
                d.variant,
                d.definition.order.value,
                d.definition.operator.value,
                ",".join(p.value for p in d.definition.periods),
                str(d.definition.retention_days),
                str(d.definition.shards),
                _scores(d.definition),
                d.defined_at,
            ]
            for d in listed
        ]
        header = [
            *("VARIANT", "ORDER", "OPERATOR", "PERIODS", "RETENTION DAYS", "SHARDS", "SCORES"),
            "DEFINED",
        ]
        print(_table(header, rows))
        default = rules.default
        print(
            f"undefined variants of {game}: "
            + (
                f"follow the default ({default.order.value}, {default.operator.value}, "
                f"{','.join(p.value for p in default.periods)}, {default.retention_days} days)"
                if rules.allows_undefined
                else "refused (LEADERBOARD_UNDEFINED_BOARDS=refuse)"
            ),
            file=sys.stderr,
        )
        return 0
    game, variant = checked_name(args.game, "game"), checked_name(args.variant, "variant")
    if args.boards_command == "show":
        shown = await rules.show(game, variant)
        out = BoardDefinitionOut.of(game, variant, shown.definition, defined_at=shown.defined_at)
    else:
        fields = definition_fields(args)
        try:
            wanted = BoardDefinitionIn.model_validate(fields)
        except ValidationError as exc:
            raise invalid_input(validation_errors(exc.errors()), whole="definition") from None
        definition = wanted.definition(retention_days=rules.default.retention_days)
        progress = ProgressReport(sys.stderr)
        async with progress.ticking():
            stored = await rules.define(
                game, variant, definition, now=datetime.now(UTC), progress=progress
            )
        progress.finish()
        out = BoardDefinitionOut.of(game, variant, stored.definition, defined_at=stored.defined_at)
    print_model(out, one_line=args.json)
    return 0


def _key_json(info: ApiKeyInfo) -> dict[str, Any]:
    return {
        "keyId": info.key_id,
        "name": info.name,
        "scopes": list(info.scopes),
        "createdAt": info.created_at,
        "revokedAt": info.revoked_at,
    }


def _scores(definition: BoardDefinition) -> str:
    """A variant's bounds in a column: ``10..5000``, ``10..``, ``..5000``, or ``any``."""
    if not definition.bounded:
        return "any"
    low, high = definition.score_min, definition.score_max
    return f"{'' if low is None else low}..{'' if high is None else high}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    """Columns aligned under a header, two spaces apart."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    )
