"""``leaderboard boards define``'s body: its options read into the definition the API's
``PUT /v1/games/{game}/variants/{variant}`` takes, field by field, so the command and the API
check one body with one schema. The options of cohorts, tournaments and leagues (DESIGN.md
section 16) are declared here too, beside what they become."""

from __future__ import annotations

import argparse
from typing import Any

from app.domain.cohorts import MAX_ATTEMPTS, MAX_COHORT_SIZE, MAX_ENTRANTS
from app.errors import InvalidInput


def add_entry_options(define: argparse.ArgumentParser) -> None:
    """``--cohort-size``, ``--join-required``, ``--max-entrants``, ``--max-attempts``, ``--tier``."""
    define.add_argument(
        "--cohort-size",
        type=int,
        metavar="N",
        help=f"cut each period board into cohorts of at most N players (2..{MAX_COHORT_SIZE}), "
        "placed first come first placed on their join or first accepted submission, each ranked "
        "on its own (default: no cohorts); fixed once the boards hold entries",
    )
    define.add_argument(
        "--join-required",
        action="store_true",
        help="refuse submissions from players who have not joined the period (403 not-joined); "
        "fixed once the boards hold entries",
    )
    define.add_argument(
        "--max-entrants",
        type=int,
        metavar="N",
        help=f"place at most N players on a period board (1..{MAX_ENTRANTS}); past it a join is "
        "a 409 full (default: no cap); fixed once the boards hold entries",
    )
    define.add_argument(
        "--max-attempts",
        type=int,
        metavar="N",
        help=f"accept at most N submissions per player per period board (1..{MAX_ATTEMPTS}); "
        "past it a 409 attempts-exhausted (default: no cap); it may rise once the boards hold "
        "entries, not fall",
    )
    define.add_argument(
        "--tier",
        action="append",
        metavar="ID:PROMOTE:DEMOTE",
        help="a league tier: its id, how many of each cohort move up a tier at a period's "
        "close and how many move down (bronze:3:0); repeat for each, the lowest first. New "
        "players start in the lowest",
    )


def definition_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The definition's body, in the API's field names, from ``boards define``'s options: the
    options given, and the ones with a default the command shows in its help."""
    fields: dict[str, Any] = {
        "order": args.order,
        "operator": args.operator,
        "scoreFormat": args.score_format,
        "shards": args.shards,
    }
    given: dict[str, Any] = {
        "retentionDays": args.retention_days,
        "scoreMin": args.score_min,
        "scoreMax": args.score_max,
        "timeZone": args.time_zone,
        "cohortSize": args.cohort_size,
        "maxEntrants": args.max_entrants,
        "maxAttempts": args.max_attempts,
    }
    fields.update({name: value for name, value in given.items() if value is not None})
    if args.periods is not None:
        fields["periods"] = [p.strip() for p in args.periods.split(",")]
    if args.season:
        fields["seasons"] = [season(text) for text in args.season]
    if args.join_required:
        fields["joinRequired"] = True
    if args.tier:
        fields["tiers"] = [tier(text) for text in args.tier]
    return fields


def season(text: str) -> dict[str, str]:
    """``--season ID,START,END`` as the API's season (the times checked with the definition)."""
    parts = [part.strip() for part in text.split(",")]
    if len(parts) != 3:
        raise InvalidInput(
            f"--season {text!r} is not ID,START,END (s1,2027-01-01T00:00Z,2027-04-01T00:00Z)"
        )
    season_id, starts_at, ends_at = parts
    return {"id": season_id, "startsAt": starts_at, "endsAt": ends_at}


def tier(text: str) -> dict[str, Any]:
    """``--tier ID:PROMOTE:DEMOTE`` as the API's tier (the id and counts checked with the
    definition: only their form is checked here)."""
    parts = [part.strip() for part in text.split(":")]
    if len(parts) != 3 or not all(p.isdigit() for p in parts[1:]):
        raise InvalidInput(
            f"--tier {text!r} is not ID:PROMOTE:DEMOTE, the two counts whole numbers (silver:3:2)"
        )
    tier_id, promote, demote = parts
    return {"id": tier_id, "promote": int(promote), "demote": int(demote)}
