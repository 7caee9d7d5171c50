"""``leaderboard boards define`` with cohorts, tournaments and leagues (DESIGN.md section 16),
run in this process against the embedded DynamoDB: the options reach the stored definition, and
a definition the service refuses (a 422) is reported field by field with nothing stored."""

from __future__ import annotations

import json

from app.bootstrap import Runtime
from app.store.tables import TableNames
from tests.commands import Ran, leaderboard, tables_environment


async def define(endpoint: str, tables: TableNames, variant: str, *options: str) -> Ran:
    environment = tables_environment(
        endpoint, tables, LEADERBOARD_DEFINITION_CHANGE_GRACE_SECONDS="0"
    )
    return await leaderboard(
        "boards", "define", "trivia", variant, "--json", *options, environment=environment
    )


async def test_a_tournament_is_defined_from_the_command_line(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    defined = await define(
        dynamo_endpoint,
        table_names,
        "cup",
        *("--periods", "week", "--cohort-size", "50", "--join-required"),
        *("--max-entrants", "1000", "--max-attempts", "3"),
    )
    assert defined.returncode == 0, defined.stderr
    shown = json.loads(defined.stdout)
    assert (shown["cohortSize"], shown["joinRequired"]) == (50, True)
    assert (shown["maxEntrants"], shown["maxAttempts"]) == (1000, 3)
    stored = await runtime.stores.definitions.get_definition("trivia", "cup")
    assert stored is not None
    definition = stored.definition
    assert (definition.cohort_size, definition.join_required) == (50, True)
    assert (definition.max_entrants, definition.max_attempts) == (1000, 3)
    # Left out, each takes its default again (a definition is whole).
    plain = await define(dynamo_endpoint, table_names, "open", "--periods", "week")
    assert plain.returncode == 0, plain.stderr
    shown = json.loads(plain.stdout)
    assert (shown["cohortSize"], shown["joinRequired"], shown["maxEntrants"]) == (None, False, None)


async def test_values_out_of_range_are_refused_by_field_and_nothing_is_stored(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    for flags, field in (
        (("--cohort-size", "1"), "cohortSize"),
        (("--cohort-size", "1001"), "cohortSize"),
        (("--max-entrants", "0"), "maxEntrants"),
        (("--max-attempts", "10001"), "maxAttempts"),
    ):
        refused = await define(dynamo_endpoint, table_names, "bad", *flags)
        assert refused.returncode == 2, (flags, refused.stderr)
        assert f"leaderboard: {field}: " in refused.stderr, refused.stderr
        assert refused.stdout == ""
    malformed = await define(dynamo_endpoint, table_names, "bad", "--tier", "gold:two:1")
    assert malformed.returncode == 2
    assert "--tier 'gold:two:1' is not ID:PROMOTE:DEMOTE" in malformed.stderr
    assert (await runtime.stores.definitions.get_definition("trivia", "bad")) is None


async def test_a_league_is_defined_from_the_command_line_lowest_tier_first(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    defined = await define(
        dynamo_endpoint,
        table_names,
        "league",
        *("--periods", "week", "--cohort-size", "30"),
        *("--tier", "bronze:5:0", "--tier", "silver:5:5", "--tier", "gold:0:5"),
    )
    assert defined.returncode == 0, defined.stderr
    assert json.loads(defined.stdout)["tiers"] == [
        {"id": "bronze", "promote": 5, "demote": 0},
        {"id": "silver", "promote": 5, "demote": 5},
        {"id": "gold", "promote": 0, "demote": 5},
    ]
    stored = await runtime.stores.definitions.get_definition("trivia", "league")
    assert stored is not None
    assert [tier.id for tier in stored.definition.tiers] == ["bronze", "silver", "gold"]
    # A league's rule the schema cannot state (tiers need cohortSize) is refused too.
    refused = await define(
        dynamo_endpoint, table_names, "loose", "--tier", "a:1:0", "--tier", "b:0:0"
    )
    assert refused.returncode == 2, refused.stderr
    assert "cohortSize" in refused.stderr, refused.stderr


async def test_tiers_the_service_refuses_are_reported_as_its_422_with_nothing_stored(
    dynamo_endpoint: str, table_names: TableNames, runtime: Runtime
) -> None:
    # A '#' is in no id the service takes (it is its keys' separator): the definition is
    # refused, and the refusal names the tiers.
    refused = await define(
        dynamo_endpoint,
        table_names,
        "league",
        *("--cohort-size", "20", "--tier", "bronze:3:0", "--tier", "gold#1:0:3"),
    )
    assert refused.returncode == 2, refused.stderr
    assert refused.stdout == ""
    said = refused.stderr.splitlines()
    headline = next(line for line in said if line.startswith("leaderboard: tiers"))
    assert ": " in headline.removeprefix("leaderboard: "), headline  # the field, then why
    assert any(line.startswith("  field: tiers") for line in said), said
    assert (await runtime.stores.definitions.get_definition("trivia", "league")) is None
