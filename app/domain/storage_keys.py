"""The Scores table's one key scheme: the partition key (``playerId``) and sort key
(``leaderboardId``) of every kind of item, and the game names the API refuses because they are
its prefixes."""

from __future__ import annotations

# ---- in a player's partition (``<player>``), beside their rows (sort key: the board id) --------

RECORD_PREFIX = "idem#"
"""``<player>`` / ``idem#<client>#<key>``: an idempotency record."""

MEMBERSHIP_PREFIX = "snap#"
"""``<player>`` / ``snap#<board>#<takenAt>``: the player is in that snapshot."""

ERASING_SORT_KEY = "erasing"
"""``<player>`` / ``erasing``: the mark on a player while they are erased (no board id can be
this: board ids hold ``#``)."""


CLAIM_PREFIX = "claim#"
"""``<player>`` / ``claim#<board>``: the player claimed their reward of that closed board."""


def claim_sk(board_id: str) -> str:
    return f"{CLAIM_PREFIX}{board_id}"


PLACEMENT_PREFIX = "cohort#"
"""``<player>`` / ``cohort#<board>``: the player's place on a period board of a cohort variant
(their cohort, their seat, their attempts: decision 0039)."""


def placement_sk(board_id: str) -> str:
    return f"{PLACEMENT_PREFIX}{board_id}"


MODERATION_PREFIX = "mod#"
"""``<player>`` / ``mod#<game>``: the player is moderated in that game (hidden or banned)."""


def moderation_sk(game: str) -> str:
    return f"{MODERATION_PREFIX}{game}"


def record_sort_key(client: str, idempotency_key: str) -> str:
    return f"{RECORD_PREFIX}{client}#{idempotency_key}"


def membership_sk(board_id: str, taken_at: str) -> str:
    return f"{MEMBERSHIP_PREFIX}{board_id}#{taken_at}"


def parse_membership_sk(sort_key: str) -> tuple[str, str]:
    """``snap#<board>#<takenAt>`` back to the board and the time (a time holds no ``#``)."""
    board_id, _, taken_at = sort_key.removeprefix(MEMBERSHIP_PREFIX).rpartition("#")
    return board_id, taken_at


# ---- partitions of their own (a player id holds no ``#``) ------------------------------------------

MODERATION_LOG_PREFIX = "modlog#"
"""``modlog#<game>`` / ``<at>#<id>``: one event of the game's moderation log (append-only); the
game's listing of moderated players is ``mod#<game>`` / ``<player>`` (``MODERATION_PREFIX``)."""


def moderation_listing_pk(game: str) -> str:
    return f"{MODERATION_PREFIX}{game}"


def moderation_log_pk(game: str) -> str:
    return f"{MODERATION_LOG_PREFIX}{game}"


HISTOGRAM_PREFIX = "hist#"
"""A board's counters and tie counters: ``hist#<board>#...``."""

LEASE_PREFIX = "seedlock#"
"""``seedlock#<board>`` / ``<board>``: a board's seeding lease."""

PLACED_PREFIX = "cohorts#"
"""``cohorts#<board>`` / ``cohorts``: how many players are placed on a period board of a cohort
variant (decision 0039)."""

PLACED_SORT_KEY = "cohorts"
"""The count's sort key; in a league each tier has its own, ``cohorts#<tier>`` (decision 0040)."""


def placed_pk(board_id: str) -> str:
    return f"{PLACED_PREFIX}{board_id}"


def placed_sk(tier: str | None) -> str:
    return PLACED_SORT_KEY if tier is None else f"{PLACED_SORT_KEY}#{tier}"


LEAGUE_PREFIX = "league#"
"""``<player>`` / ``league#<game>#<variant>``: the player's league (their tier, their last
placement); ``league#<board>`` / ``<cohortId>``: who of that cohort moved at the board's close
(decision 0040)."""


def league_sk(game: str, variant: str) -> str:
    return f"{LEAGUE_PREFIX}{game}#{variant}"


def moves_pk(board_id: str) -> str:
    return f"{LEAGUE_PREFIX}{board_id}"


REGISTRY_PK = "registry#boards"
"""``registry#boards`` / ``<board>``: every board registered."""

DEFINITION_PREFIX = "definition#"
"""``definition#<game>`` / ``<variant>``: a variant's definition."""

API_KEY_PREFIX = "apikey#"
"""``apikey#<digest>`` / ``apikey``: an API key."""

KEYS_SORT_KEY = "apikey"
"""The ``leaderboardId`` of every key item: no board can be called that (board ids hold ``#``)."""


WEBHOOK_PREFIX = "webhook#"
"""``webhook#<game>`` / ``webhook``: the game's webhook (its URL and secret)."""

WEBHOOK_SORT_KEY = "webhook"

OUTBOX_PREFIX = "outbox#"
"""``outbox#<game>`` / ``<createdAt>#<eventId>``: an event for the game's webhook;
``outbox#due`` / ``<createdAt>#<game>#<eventId>``: its marker while it waits to be delivered
(``app.store.outbox``)."""


def webhook_pk(game: str) -> str:
    return f"{WEBHOOK_PREFIX}{game}"


def coarse_pk(board_id: str, shard: int) -> str:
    return f"{HISTOGRAM_PREFIX}{board_id}#c{shard}"


def fine_pk(board_id: str, bucket: int) -> str:
    return f"{HISTOGRAM_PREFIX}{board_id}#f{bucket:04d}"


def tie_pk(board_id: str, bucket: int, slot: int) -> str:
    return f"{HISTOGRAM_PREFIX}{board_id}#t{bucket:04d}#{slot:04d}"


def lease_pk(board_id: str) -> str:
    return f"{LEASE_PREFIX}{board_id}"


def definition_pk(game: str) -> str:
    return f"{DEFINITION_PREFIX}{game}"


def api_key_pk(digest: str) -> str:
    return f"{API_KEY_PREFIX}{digest}"


RESERVED_GAMES = frozenset(
    prefix.split("#")[0]
    for prefix in (
        RECORD_PREFIX,
        MEMBERSHIP_PREFIX,
        CLAIM_PREFIX,
        PLACEMENT_PREFIX,
        PLACED_PREFIX,
        LEAGUE_PREFIX,
        HISTOGRAM_PREFIX,
        LEASE_PREFIX,
        REGISTRY_PK,
        DEFINITION_PREFIX,
        API_KEY_PREFIX,
        MODERATION_PREFIX,
        MODERATION_LOG_PREFIX,
        WEBHOOK_PREFIX,
        OUTBOX_PREFIX,
    )
)
"""Game names that would begin a board id (``<game>#<variant>#<period>``) with a prefix of the
scheme: the API refuses them."""
