"""Sharded boards: one board's index partition spread over ``shards`` partition keys.

A board of one shard is one RankIndex partition, keyed by its board id. A board of k > 1 keeps
each player's row (and index entry) under one of k *partition ids* (``<board>#s<shard:02d>``) by a
stable hash of the player id, each with its own counters and tie counters, so no item and no
partition key takes more than about 1/k of the board's writes. Reads merge the k partitions back
into one board: the top page best-first across them, a rank as 1 plus the players ahead on every
shard (docs/scale.md).
"""

from __future__ import annotations

import hashlib
import re

SHARD_COUNTS = (1, 2, 4, 8, 16, 32, 64)
"""The values a definition's ``shards`` may take: powers of two, so a stable hash spreads evenly."""
MAX_SHARDS = SHARD_COUNTS[-1]

_MARK = "#s"
_PARTITION_RE = re.compile(r"^(?P<board>.+)#s(?P<shard>\d{2})$")
"""No board id ends so: every one ends with its period (``alltime``, a date, a week, a month)."""


def check_shards(shards: int) -> int:
    if shards not in SHARD_COUNTS:
        raise ValueError("shards must be 1, 2, 4, 8, 16, 32 or 64")
    return shards


def shard_of(player_id: str, shards: int) -> int:
    """The shard of ``player_id`` on a board of ``shards``: the first 8 bytes of the id's BLAKE2b
    digest, modulo ``shards``. Stable across processes, unlike ``hash()``."""
    if shards == 1:
        return 0
    digest = hashlib.blake2b(player_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def partition_id(board_id: str, shard: int, shards: int) -> str:
    """The ``leaderboardId`` (and RankIndex partition key) of one shard of a board."""
    if shards == 1:
        return board_id
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is not one of {shards}")
    return f"{board_id}{_MARK}{shard:02d}"


def partition_ids(board_id: str, shards: int) -> list[str]:
    """Every partition id of a board, shard 0 first."""
    return [partition_id(board_id, shard, shards) for shard in range(shards)]


def player_partition(board_id: str, player_id: str, shards: int) -> str:
    """The partition id that holds ``player_id``'s row on the board."""
    return partition_id(board_id, shard_of(player_id, shards), shards)


def board_of_partition(partition: str) -> str:
    """The board id a partition id belongs to (a board id is its own only partition)."""
    match = _PARTITION_RE.match(partition)
    return partition if match is None else match["board"]


def is_shard_partition(partition: str) -> bool:
    """Whether ``partition`` is one shard of a sharded board (not a whole board's id)."""
    return _PARTITION_RE.match(partition) is not None
