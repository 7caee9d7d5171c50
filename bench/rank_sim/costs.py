"""What is simulated, and DynamoDB's published rules for item sizes and capacity units."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np
from numpy.typing import NDArray

from app.domain.keys import SCORE_CEILING, RankKey, score_prefix
from app.domain.storage_keys import coarse_pk, fine_pk

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


BOARD_ID: Final = "trivia#alltopics#alltime"
SHARDS: Final = 4
"""Coarse counters are spread over this many partition keys (the adapter's default)."""
CAP: Final = 2_000
"""The COUNT cap (``Settings.rank_count_cap``'s default) and the earlier Lambda design's exact-rank
limit."""
UNIT_BYTES: Final = 4_096
"""A read unit covers 4 KB of a Query's items (summed, then rounded up); eventually consistent
reads cost half a unit per 4 KB. Figures below are kept in half units and reported as RCU."""
PLAYER_ID_DIGITS: Final = 9
BASE_MS: Final = 1_790_000_000_000
"""achievedAt of the first achievement on a simulated board (2026-09-21T14:13:20Z)."""
LAST_PLAYED_AT: Final = "2026-11-30T12:34:56.789Z"
SEEDS_HISTOGRAM_ATTRIBUTE: Final = "bucket{:03d}"
"""The attribute of each of the earlier Lambda design's 128 bucket counters."""
TOP_OF_BOARD: Final = score_prefix(SCORE_CEILING - 1)
"""Sorts before every rank key: the earlier Lambda design counted from here."""


def player_id(number: int) -> str:
    """Simulated player ids are ``p`` and 9 digits (10 bytes)."""
    return f"p{number:0{PLAYER_ID_DIGITS}d}"


def number_bytes(value: int) -> int:
    """DynamoDB's size of a Number: about 1 byte per two significant digits, plus 1 byte."""
    digits = str(abs(value)).strip("0") or "0"
    return (len(digits) + 1) // 2 + 1


def item_bytes(attributes: Mapping[str, str | int]) -> int:
    """An item's size: each attribute's name (UTF-8) plus its value (a string's UTF-8 length, a
    number's ``number_bytes``)."""
    return sum(
        len(name.encode())
        + (len(value.encode()) if isinstance(value, str) else number_bytes(value))
        for name, value in attributes.items()
    )


def coarse_item_bytes(shard: int, bucket: int, n: int) -> int:
    return item_bytes(
        {"playerId": coarse_pk(BOARD_ID, shard), "leaderboardId": f"{bucket:04d}", "n": n}
    )


def fine_item_bytes(bucket: int, slot: int, n: int) -> int:
    return item_bytes(
        {"playerId": fine_pk(BOARD_ID, bucket), "leaderboardId": f"{slot:04d}", "n": n}
    )


INDEX_ENTRY_BYTES: Final = item_bytes(
    {
        "leaderboardId": BOARD_ID,
        "rankKey": RankKey(1, BASE_MS, player_id(0)).encode(),
        "playerId": player_id(0),
        "displayName": "x" * 12,
        "country": "GB",
        "lastPlayedAt": LAST_PLAYED_AT,
    }
)
"""What one RankIndex entry weighs for reads: its keys, the table's key and the projected
attributes (a 12-byte display name, a country code, an ISO timestamp). A COUNT is charged for every
entry it counts, exactly as if it had returned them."""


def seeds_meta_bytes(counts: Sequence[int], players: int) -> int:
    """The earlier Lambda design's one metadata row: 128 ``bucketNNN`` attributes (zeros included),
    the player count and a histogram version."""
    attributes: dict[str, str | int] = {
        "playerId": f"meta#{BOARD_ID}",
        "leaderboardId": BOARD_ID,
        "playerCount": players,
        "histogramVersion": 1,
    }
    attributes.update({SEEDS_HISTOGRAM_ATTRIBUTE.format(b): n for b, n in enumerate(counts)})
    return item_bytes(attributes)


def query_half_units(nbytes: int) -> int:
    """One eventually consistent Query's cost in half read units: its items' total size rounded up
    to 4 KB, and never less than one unit (an empty Query is charged too)."""
    return max(1, -(-nbytes // UNIT_BYTES))


def query_half_units_array(nbytes: IntArray) -> IntArray:
    """``query_half_units`` over an array of Queries' item bytes."""
    return np.maximum(1, -(-nbytes // UNIT_BYTES)).astype(np.int64)


STRONG = 2
"""A strongly consistent read costs twice an eventually consistent one. A rank reads its counters
strongly on a board where a player's own place can move back (``latest``, or ``sum`` where lower
is better), and wherever it reads the fine slots behind the player (the total less those is the
slots ahead, right only where both reads saw the player's last move); the boards simulated here
keep the best score, so only the second applies."""


def _consistency(consistent: bool) -> int:
    return STRONG if consistent else 1


def write_units(nbytes: int, *, transactional: bool = True) -> int:
    """Write units for one item: 1 per KB rounded up, doubled inside a transaction."""
    units = max(1, -(-nbytes // 1_024))
    return 2 * units if transactional else units


_POWERS_OF_TEN = np.array([10**k for k in range(19)], dtype=np.int64)


def number_bytes_array(values: IntArray) -> IntArray:
    """``number_bytes`` over an array."""
    v = np.abs(values)
    while True:
        tens = (v % 10 == 0) & (v != 0)
        if not tens.any():
            break
        v = np.where(tens, v // 10, v)
    digits = np.maximum(1, np.searchsorted(_POWERS_OF_TEN, v, side="right"))
    return ((digits + 1) // 2 + 1).astype(np.int64)
