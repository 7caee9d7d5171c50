"""The key scheme: every partition or sort key the service makes begins with a reserved name, so
no board id of a game the API takes can be read as one of them."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from app.domain import storage_keys as scheme
from app.domain.keys import is_valid_id

KEYS = [
    scheme.record_sort_key("client", "key"),
    scheme.membership_sk("trivia#classic#alltime", "2026-12-01T00:00:00.000Z"),
    scheme.claim_sk("trivia#classic#day#2026-12-01"),
    scheme.placement_sk("trivia#classic#day#2026-12-01"),
    scheme.placed_pk("trivia#classic#day#2026-12-01"),
    scheme.league_sk("trivia", "classic"),
    scheme.moves_pk("trivia#classic#week#2026-W49"),
    scheme.coarse_pk("trivia#classic#alltime", 0),
    scheme.fine_pk("trivia#classic#alltime", 7),
    scheme.tie_pk("trivia#classic#alltime", 7, 3),
    scheme.lease_pk("trivia#classic#alltime"),
    scheme.REGISTRY_PK,
    scheme.definition_pk("trivia"),
    scheme.api_key_pk("0" * 64),
    scheme.moderation_sk("trivia"),
    scheme.moderation_listing_pk("trivia"),
    scheme.moderation_log_pk("trivia"),
    scheme.webhook_pk("trivia"),
    f"{scheme.OUTBOX_PREFIX}trivia",
]


def test_every_key_begins_with_a_reserved_name() -> None:
    assert {key.split("#")[0] for key in KEYS} == scheme.RESERVED_GAMES


@given(st.from_regex(r"[A-Za-z0-9_.:-]{1,64}", fullmatch=True))
def test_no_board_of_an_allowed_game_begins_like_a_key(game: str) -> None:
    assume(game not in scheme.RESERVED_GAMES and is_valid_id(game))
    board_id = f"{game}#classic#alltime"
    assert not any(board_id.startswith(key.split("#")[0] + "#") for key in KEYS)


def test_a_membership_sort_key_reads_back() -> None:
    sort_key = scheme.membership_sk("trivia#classic#day:2026-12-01", "2026-12-01T10:00:00.000Z")
    assert scheme.parse_membership_sk(sort_key) == (
        "trivia#classic#day:2026-12-01",
        "2026-12-01T10:00:00.000Z",
    )
