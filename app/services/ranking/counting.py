"""Counting a board from RankIndex: players per coarse bucket and per fine slot, and the entries of
its crowded slots, from one full read of the index (``count_board``), or read until two passes in
a row agree (``settled_count``). The reconciler and the seeder both count this way."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field

from app.domain.shards import board_of_partition
from app.errors import Unavailable
from app.services.policies import CountPolicy
from app.services.ports import BoardIndex, IndexedKey
from app.services.work import Progress


@dataclass(frozen=True)
class BoardCount:
    """One full pass over a board's index: players per coarse bucket and per fine slot, and how many
    of the keys the caller expected to see were not there."""

    coarse: dict[int, int]
    fine: dict[tuple[int, int], int]
    total: int
    missing: int = 0
    crowded: dict[tuple[int, int], list[IndexedKey]] = field(default_factory=dict)
    """The entries of every slot holding more than the policy's ``tie_group``, in board order
    (what the tie counters are built from: ``app.services.ranking.ties``)."""

    def agrees_with(self, other: BoardCount) -> bool:
        return self.coarse == other.coarse and self.fine == other.fine


async def count_board(
    index: BoardIndex,
    partition: str,
    policy: CountPolicy,
    *,
    expect: Collection[str] = (),
    progress: Progress | None = None,
    size_hint: int | None = None,
) -> BoardCount:
    """Count a board's entries (or one partition's) per bucket and slot from one full read of
    RankIndex; ``expect`` holds encoded rank keys that should be there (``missing`` says how many
    were not). ``progress`` hears of each page (``size_hint``: the entries expected, from an
    earlier pass). With the policy's ``tie_group``, the entries of each slot holding more than
    that are kept (``crowded``): a slot's entries are consecutive on the index, so at most one
    slot's are held that are not kept."""
    if progress is not None:
        progress("recounting", 0, size_hint)
    layout, tie_group = policy.layout, policy.tie_group
    coarse: dict[int, int] = defaultdict(int)
    fine: dict[tuple[int, int], int] = defaultdict(int)
    crowded: dict[tuple[int, int], list[IndexedKey]] = {}
    current: tuple[tuple[int, int], list[IndexedKey]] | None = None
    total = seen = 0
    wanted = set(expect)

    def close(held: tuple[tuple[int, int], list[IndexedKey]] | None) -> None:
        if held is not None and tie_group is not None and len(held[1]) > tie_group:
            crowded[held[0]] = held[1]

    async for page in index.board_keys(partition, page_size=policy.page_size):
        for found in page:
            key = found.key
            bucket, slot = layout.slot_of(key.score)
            coarse[bucket] += 1
            fine[(bucket, slot)] += 1
            total += 1
            if wanted and key.encode() in wanted:
                seen += 1
            if tie_group is not None:
                if current is None or current[0] != (bucket, slot):
                    close(current)
                    current = ((bucket, slot), [])
                current[1].append(found)
        if progress is not None:
            progress("recounting", total, size_hint)
    close(current)
    return BoardCount(dict(coarse), dict(fine), total, len(wanted) - seen, crowded)


async def settled_count(
    index: BoardIndex,
    partition: str,
    policy: CountPolicy,
    *,
    expect: Collection[str] = (),
    progress: Progress | None = None,
) -> BoardCount:
    """Count until two passes in a row agree and every expected key is in the index.

    RankIndex is updated asynchronously after each write, so rows written a moment ago may be
    missing from a pass. Raises ``Unavailable`` when the index has not settled after the policy's
    ``settle_attempts`` passes."""
    attempts = max(2, policy.settle_attempts)
    previous: BoardCount | None = None
    for attempt in range(attempts):
        if attempt:
            await asyncio.sleep(policy.settle_delay_s)
        count = await count_board(
            index,
            partition,
            policy,
            expect=expect,
            progress=progress,
            size_hint=None if previous is None else previous.total,
        )
        if previous is not None and count.missing == 0 and count.agrees_with(previous):
            return count
        previous = count
    board = board_of_partition(partition)
    where = board if board == partition else f"{board} (its partition {partition})"
    raise Unavailable(
        f"the index of board {where} did not settle after {attempts} passes; "
        "its counters were not rebuilt: run `leaderboard reconcile --apply` once it is quiet",
        retry_after=5,
    )
