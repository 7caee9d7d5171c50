"""Tie counters: a crowded fine slot's players counted below the score, by when they scored.

A fine slot holds the players of a small range of scores (often one). Inside it, the index orders
them by score, then ``achievedAt``, then playerId, and the rank code counts the entries ahead of a
player there with a capped COUNT, so a slot holding more than the cap gives ranges. A *crowded*
slot (one that held more than ``group`` entries when a builder walked it: the reconciler or the
seeder) gets a **grain** ``L``: its entries are grouped by ``(score, achievedAt >> L)``, the
largest ``L`` that leaves no group over ``group`` entries, and counted at two levels:

- level A, per ``(score, achievedAt >> (L + FANOUT_BITS))``;
- level B, per ``(score, achievedAt >> L)``, under its A chunk.

The players ahead of a key inside its slot are then the level-A counts of the chunks before its
own, plus the level-B counts before its own inside its A chunk, plus a capped COUNT inside its own
B chunk: a few small items and a short COUNT, however many share the score. Chunk numbers follow
time; a chunk's sort key leads with the score's own rank-key prefix, so string order of the items is
board order for either board order (``desc`` or ``asc``).

Every row counted in a slot's tie counters says so (``tieGrain``), so its removal takes it out of
the same items. The counts are trusted only where they add up to the slot's fine counter (they
change in the same transactions): anything else (a slot being built, a row written before the
build) makes the rank code fall back to an honest range.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.domain.keys import RankKey, score_prefix

LEVEL_A = "A#"
"""Every level-A item's sort key starts so (and a slot's seal is exactly this)."""
FANOUT_BITS = 6
"""Level B cuts each level-A chunk into at most 2**6 = 64 chunks."""
MAX_GRAIN = 44
"""2**44 ms is over 500 years: one chunk holds every time a key can have."""
_DIGITS = 13


def tie_group(cap: int) -> int:
    """The most entries a builder leaves in one chunk for a COUNT cap of ``cap``: half of it, so a
    rank inside the chunk stays exact while the chunk grows to twice its built size."""
    return max(1, cap // 2)


@dataclass(frozen=True)
class TiePlace:
    """Where a key is counted in its slot's tie counters at grain ``grain``."""

    grain: int
    score_part: str
    """The key's score prefix (``score_prefix``), separator included."""
    chunk_a: int
    chunk_b: int

    @classmethod
    def of(cls, key: RankKey, grain: int) -> TiePlace:
        if not 0 <= grain <= MAX_GRAIN:
            raise ValueError(f"a tie grain is 0..{MAX_GRAIN}, not {grain}")
        t = key.achieved_at_ms
        return cls(
            grain,
            score_prefix(key.score, key.order_by),
            t >> (grain + FANOUT_BITS),
            t >> grain,
        )

    @property
    def a_sort_key(self) -> str:
        return f"{LEVEL_A}{self.score_part}{self.chunk_a:0{_DIGITS}d}"

    @property
    def b_sort_key(self) -> str:
        return f"{self.b_prefix}{self.chunk_b:0{_DIGITS}d}"

    @property
    def b_prefix(self) -> str:
        """Every level-B item of this key's A chunk starts so."""
        return f"B#{self.score_part}{self.chunk_a:0{_DIGITS}d}#"

    @property
    def chunk_start(self) -> str:
        """The lowest rank key this key's B chunk can hold (the chunk's keys are at or above it,
        below the next chunk's)."""
        return f"{self.score_part}{self.chunk_b << self.grain:0{_DIGITS}d}#"


def choose_grain(keys: list[RankKey], *, group: int) -> int:
    """The largest grain at which no ``(score, achievedAt >> grain)`` group of ``keys`` (one slot's
    entries) holds more than ``group``; 0 when even single milliseconds are that crowded (those
    players get ranges past the cap). A coarser grain only merges groups, so a bisection finds it."""

    def fits(grain: int) -> bool:
        sizes: dict[tuple[int, int], int] = {}
        for key in keys:
            place = (key.score, key.achieved_at_ms >> grain)
            sizes[place] = sizes.get(place, 0) + 1
        return max(sizes.values(), default=0) <= group

    lo, hi = 0, MAX_GRAIN  # the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def tie_counts(keys: list[RankKey], grain: int) -> tuple[dict[str, int], dict[str, int]]:
    """The level-A and level-B counts of a slot's ``keys`` at ``grain``, by item sort key."""
    a: dict[str, int] = {}
    b: dict[str, int] = {}
    for key in keys:
        place = TiePlace.of(key, grain)
        a[place.a_sort_key] = a.get(place.a_sort_key, 0) + 1
        b[place.b_sort_key] = b.get(place.b_sort_key, 0) + 1
    return a, b
