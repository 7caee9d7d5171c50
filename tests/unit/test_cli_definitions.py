"""``leaderboard boards define``'s body, as the command builds it from its options (no backend):
the cohort, tournament and league options (DESIGN.md section 16) become the API's fields, and
a ``--tier`` that is not ID:PROMOTE:DEMOTE is refused before anything is sent."""

from __future__ import annotations

from typing import Any

import pytest

from app.cli.definitions import definition_fields
from app.cli.parser import build_parser
from app.errors import InvalidInput

DEFAULTS = {"order": "desc", "operator": "best", "scoreFormat": "integer", "shards": 1}


def body(*options: str) -> dict[str, Any]:
    return definition_fields(
        build_parser().parse_args(["boards", "define", "trivia", "cup", *options])
    )


def test_no_entry_options_send_none_of_their_fields() -> None:
    assert body() == DEFAULTS


def test_the_tournament_options_become_the_api_s_fields() -> None:
    sent = body(
        *("--periods", "week", "--cohort-size", "50", "--join-required"),
        *("--max-entrants", "1000", "--max-attempts", "3"),
    )
    assert sent == {
        **DEFAULTS,
        "periods": ["week"],
        "cohortSize": 50,
        "joinRequired": True,
        "maxEntrants": 1000,
        "maxAttempts": 3,
    }


def test_tiers_are_sent_in_the_order_given_lowest_first() -> None:
    sent = body(
        *("--cohort-size", "20", "--tier", "bronze:3:0"),
        *("--tier", " silver : 2 : 2 ", "--tier", "gold:0:3"),
    )
    assert sent["tiers"] == [
        {"id": "bronze", "promote": 3, "demote": 0},
        {"id": "silver", "promote": 2, "demote": 2},
        {"id": "gold", "promote": 0, "demote": 3},
    ]
    assert sent["cohortSize"] == 20


@pytest.mark.parametrize("text", ["gold", "gold:1", "gold:1:2:3", "gold:x:1", "gold:1:-1", ":"])
def test_a_tier_not_of_the_form_id_promote_demote_is_refused_by_the_command(text: str) -> None:
    with pytest.raises(InvalidInput, match="is not ID:PROMOTE:DEMOTE"):
        body("--tier", text)
