"""The histogram's counters compared with a count of the board: which differ where two counting
passes agree, and which the passes disagree on (the board changed between them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True)
class CounterCell:
    """One counter of the histogram as a count: a coarse bucket (``slot`` is ``None``, summed over
    shards) or one fine slot of a coarse bucket."""

    bucket: int
    slot: int | None = None

    @property
    def level(self) -> Literal["coarse", "fine"]:
        return "coarse" if self.slot is None else "fine"

    @property
    def sort_key(self) -> tuple[int, int]:
        """Bucket order, a coarse bucket before its fine slots."""
        return (self.bucket, -1 if self.slot is None else self.slot)


@dataclass(frozen=True)
class CounterDifference:
    """A counter whose stored value (coarse: summed over shards) is not what the board holds."""

    cell: CounterCell
    stored: int
    counted: int


class Counted(Protocol):
    """Players per coarse bucket and per fine ``(bucket, slot)``."""

    @property
    def coarse(self) -> Mapping[int, int]: ...

    @property
    def fine(self) -> Mapping[tuple[int, int], int]: ...


def compare_counts(
    first: Counted,
    second: Counted,
    *,
    stored_coarse: Mapping[int, int],
    stored_fine: Mapping[tuple[int, int], int],
) -> tuple[list[CounterDifference], list[CounterCell]]:
    """The differences from the stored counters where both passes agree (an absent counter
    holds 0), and the cells where the passes disagree, each in bucket order."""
    differences: list[CounterDifference] = []
    unsettled: list[CounterCell] = []
    for bucket in sorted(set(first.coarse) | set(second.coarse) | set(stored_coarse)):
        counted = first.coarse.get(bucket, 0)
        if counted != second.coarse.get(bucket, 0):
            unsettled.append(CounterCell(bucket))
            continue
        total = stored_coarse.get(bucket, 0)
        if total != counted:
            differences.append(CounterDifference(CounterCell(bucket), total, counted))
    for bucket, slot in sorted(set(first.fine) | set(second.fine) | set(stored_fine)):
        counted = first.fine.get((bucket, slot), 0)
        if counted != second.fine.get((bucket, slot), 0):
            unsettled.append(CounterCell(bucket, slot))
            continue
        value = stored_fine.get((bucket, slot), 0)
        if value != counted:
            differences.append(CounterDifference(CounterCell(bucket, slot), value, counted))
    differences.sort(key=lambda d: d.cell.sort_key)
    unsettled.sort(key=lambda c: c.sort_key)
    return differences, unsettled
