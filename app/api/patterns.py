"""The patterns the HTTP contract's strings must match, each with the rule in words: the OpenAPI
document states the pattern, and a problem document states the rule (never the regex)."""

from __future__ import annotations

from app.domain.calendar import SEASON_ID_PATTERN
from app.domain.keys import ID_PATTERN
from app.domain.periods import (
    COHORT_ID_PATTERN,
    FIRST_YEAR,
    LAST_YEAR,
    TIER_ID_PATTERN,
    YEAR_PATTERN,
)

PERIOD_PATTERN = (
    rf"^(alltime|day|week|month|season|day:{YEAR_PATTERN}-\d{{2}}-\d{{2}}"
    rf"|week:{YEAR_PATTERN}-W\d{{2}}|month:{YEAR_PATTERN}-\d{{2}}|season:[A-Za-z0-9_-]{{1,32}})$"
)
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,255}$"
SNAPSHOT_TIME_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$"
DISPLAY_NAME_PATTERN = r"^[^\x00-\x1f\x7f]+$"
COUNTRY_PATTERN = r"^[A-Z]{2}$"
_ONE_ID = r"[A-Za-z0-9_.:-]{1,64}"
GROUP_IDS_PATTERN = rf"^{_ONE_ID}(,{_ONE_ID})*$"
"""Player ids, comma-separated (a group board's ``ids``): how many distinct ones it may name is
the group board's to say, since an id named twice counts once."""

RULES = {
    ID_PATTERN: "must be 1 to 64 characters of A-Z a-z 0-9 _ . : - (never #)",
    SEASON_ID_PATTERN: "must be 1 to 32 characters of A-Z a-z 0-9 _ -",
    PERIOD_PATTERN: (
        "must be alltime, day, week, month, season (the current ones), day:YYYY-MM-DD, "
        f"week:YYYY-Www, month:YYYY-MM (of the years {FIRST_YEAR} to {LAST_YEAR}) or season:ID"
    ),
    IDEMPOTENCY_KEY_PATTERN: "must be 1 to 255 visible ASCII characters (no spaces)",
    SNAPSHOT_TIME_PATTERN: "must be an ISO 8601 UTC time as listed, like 2026-11-30T00:00:00.000Z",
    DISPLAY_NAME_PATTERN: "must hold no control characters",
    COUNTRY_PATTERN: "must be two upper-case letters (ISO 3166-1 alpha-2, like GB)",
    COHORT_ID_PATTERN: (
        "must be a cohort's number: 1, 2, 3, ... (no leading zero), in a league after its "
        "tier's id and a hyphen (gold-3)"
    ),
    TIER_ID_PATTERN: (
        "must be a lowercase letter, then up to 31 lowercase letters, digits or underscores"
    ),
    GROUP_IDS_PATTERN: (
        "must be player ids, comma-separated, each 1 to 64 characters of "
        "A-Z a-z 0-9 _ . : - (never #)"
    ),
}
"""Each pattern's rule, as a problem document says it."""
