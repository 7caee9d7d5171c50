"""DynamoDB's published sizing and capacity rules, applied to real items.

Item size: each attribute's name (UTF-8 bytes) plus its value: a String's UTF-8 bytes, a Number's
``1 + ceil(significant digits / 2)`` bytes, Binary's bytes, 1 byte for a Boolean or Null, 3 bytes
plus the elements (and 1 byte per element) for a List or a Map.

Capacity:

- a standard write: 1 write unit per KB of the item, rounded up, the larger of before and after;
- a write inside ``TransactWriteItems``: 2 per KB per item (a ``ConditionCheck`` included, as the
  earlier Lambda design counted it);
- a GSI write: 1 per KB of the index entry, per entry touched; 2 when the indexed key changes (a
  delete of the old entry and a put of the new); 0 when nothing the index holds changed;
- a read: 1 unit per 4 KB, rounded up, strongly consistent; 0.5 eventually consistent; a Query sums
  the sizes of every item it evaluates (``Select=COUNT`` and filtered-out items included) and then
  rounds; ``BatchGetItem`` rounds per item; a key that finds nothing costs the minimum, as a
  GetItem of a missing item does.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.store.tables import RANK_INDEX_PROJECTED

Item = Mapping[str, Any]
"""An item in DynamoDB's wire form: attribute name to ``{"S": ...}``, ``{"N": ...}`` and so on."""

READ_BLOCK = 4_096
WRITE_BLOCK = 1_024
INDEX_KEYS = ("leaderboardId", "rankKey")
"""RankIndex's keys; an item without ``rankKey`` is not on the index (a sparse index)."""
INDEX_PROJECTED = ("playerId", *RANK_INDEX_PROJECTED)
"""What a RankIndex entry holds besides its keys: the table's key and the service's own INCLUDE
projection."""


def number_size(text: str) -> int:
    """A Number: 1 byte per two significant digits (leading and trailing zeros trimmed), plus 1."""
    digits = text.lstrip("+-").replace(".", "").split("e")[0].split("E")[0]
    significant = digits.strip("0") or "0"
    return math.ceil(len(significant) / 2) + 1


def value_size(value: Mapping[str, Any]) -> int:  # noqa: PLR0911 - one return per type
    ((kind, content),) = value.items()
    if kind == "S":
        return len(str(content).encode())
    if kind == "N":
        return number_size(str(content))
    if kind == "B":
        raw = content if isinstance(content, bytes | bytearray) else base64.b64decode(content)
        return len(raw)
    if kind in {"BOOL", "NULL"}:
        return 1
    if kind == "SS":
        return sum(len(str(x).encode()) for x in content)
    if kind == "NS":
        return sum(number_size(str(x)) for x in content)
    if kind == "BS":
        return sum(len(x) for x in content)
    if kind == "L":
        return 3 + sum(value_size(x) + 1 for x in content)
    if kind == "M":
        return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in content.items())
    raise ValueError(f"not a DynamoDB attribute value: {kind}")


def item_size(item: Item | None) -> int:
    """An item's size in bytes (0 for no item)."""
    if not item:
        return 0
    return sum(len(name.encode()) + value_size(value) for name, value in item.items())


def index_entry(item: Item | None) -> dict[str, Any] | None:
    """The RankIndex entry an item makes, or ``None`` when it is not on the index."""
    if not item or "rankKey" not in item or "leaderboardId" not in item:
        return None
    return {name: item[name] for name in (*INDEX_KEYS, *INDEX_PROJECTED) if name in item}


def write_blocks(nbytes: int) -> int:
    """Write units of one standard write of an item this large (at least 1)."""
    return max(1, math.ceil(nbytes / WRITE_BLOCK))


def read_blocks(nbytes: int) -> int:
    """4 KB blocks of a read this large (at least 1: an empty read is charged the minimum)."""
    return max(1, math.ceil(nbytes / READ_BLOCK))


def read_units(nbytes: int, *, consistent: bool) -> float:
    return read_blocks(nbytes) * (1.0 if consistent else 0.5)


@dataclass(frozen=True)
class WriteUnits:
    table: float
    index: float

    @property
    def total(self) -> float:
        return self.table + self.index


def item_write_units(
    before: Item | None, after: Item | None, *, transactional: bool, checked_only: bool = False
) -> WriteUnits:
    """One item written (``after`` ``None``: deleted), or only checked (a ConditionCheck)."""
    blocks = write_blocks(max(item_size(before), item_size(after)))
    table = float(blocks * (2 if transactional else 1))
    if checked_only:
        return WriteUnits(table, 0.0)
    return WriteUnits(table, float(index_write_units(before, after)))


def index_write_units(before: Item | None, after: Item | None) -> int:
    old, new = index_entry(before), index_entry(after)
    if old is None and new is None:
        return 0
    if old is None or new is None:
        return write_blocks(item_size(old if new is None else new))
    if old["rankKey"] != new["rankKey"] or old["leaderboardId"] != new["leaderboardId"]:
        return write_blocks(item_size(old)) + write_blocks(item_size(new))
    return write_blocks(item_size(new)) if old != new else 0


def query_units(items: Iterable[Item], *, consistent: bool) -> float:
    """A Query (or a Scan page) that evaluated these items."""
    return read_units(sum(item_size(item) for item in items), consistent=consistent)


def batch_get_units(found: Iterable[Item], missing: int, *, consistent: bool) -> float:
    per = 1.0 if consistent else 0.5
    return sum(read_units(item_size(i), consistent=consistent) for i in found) + missing * per
