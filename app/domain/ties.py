"""Tie counters: a crowded fine slot's players counted below the score, by when they scored, so
that a rank deep in a crowd of equal scores need not be a range. The grain, the levels A, B and C,
the tie marks and when the counts are trusted are laid out in docs/ranking.md (decisions 0009,
0019 and 0020).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.domain.keys import RankKey, score_prefix

LEVEL_A = "A#"
"""Every level-A item's sort key starts so (and a slot's seal is exactly this)."""
LEVEL_B = "B#"
LEVEL_C = "C#"
FANOUT_BITS = 6
"""Level B cuts each level-A chunk into at most 2**6 = 64 chunks."""
MAX_GRAIN = 44
"""2**44 ms is over 500 years: one chunk holds every time a key can have."""
_DIGITS = 13
CUT_UNIT = 64
"""A tie mark is ``grain + CUT_UNIT * cut length``: grains are under 64, and a mark of a row in an
uncut chunk is its grain alone."""
MAX_CUT = _DIGITS + 1 + 64
"""The longest key below the score: a millisecond, ``#``, a player id of up to 64 characters."""


def tie_mark(grain: int, cut: int = 0) -> int:
    return grain + CUT_UNIT * cut


def tie_group(cap: int) -> int:
    """The most entries a builder leaves in one chunk for a COUNT cap of ``cap``: half of it, so a
    rank inside the chunk stays exact while the chunk grows to twice its built size."""
    return max(1, cap // 2)


@dataclass(frozen=True)
class TiePlace:
    """Where a key is counted in its slot's tie counters, at tie mark ``mark``."""

    grain: int
    score_part: str
    """The key's score prefix (``score_prefix``), separator included."""
    chunk_a: int
    chunk_b: int
    cut: str | None = None
    """In a cut chunk, the key's first characters below the score that name its level-C group."""
    cut_length: int = 0

    @classmethod
    def of(cls, key: RankKey, mark: int) -> TiePlace:
        grain, cut_length = mark % CUT_UNIT, mark // CUT_UNIT
        if not 0 <= grain <= MAX_GRAIN or not 0 <= cut_length <= MAX_CUT:
            raise ValueError(f"not a tie mark: {mark}")
        t = key.achieved_at_ms
        part = score_prefix(key.score, key.order_by)
        return cls(
            grain,
            part,
            t >> (grain + FANOUT_BITS),
            t >> grain,
            below_score(key)[:cut_length] if cut_length else None,
            cut_length,
        )

    @property
    def mark(self) -> int:
        return tie_mark(self.grain, self.cut_length)

    @property
    def a_sort_key(self) -> str:
        return f"{LEVEL_A}{self.score_part}{self.chunk_a:0{_DIGITS}d}"

    @property
    def b_sort_key(self) -> str:
        return f"{self.b_prefix}{self.chunk_b:0{_DIGITS}d}"

    @property
    def b_prefix(self) -> str:
        """Every level-B item of this key's A chunk starts so."""
        return f"{LEVEL_B}{self.score_part}{self.chunk_a:0{_DIGITS}d}#"

    @property
    def c_prefix(self) -> str:
        """Every level-C item of this key's B chunk starts so."""
        return f"{LEVEL_C}{self.score_part}{self.chunk_b:0{_DIGITS}d}#"

    @property
    def c_sort_key(self) -> str | None:
        return None if self.cut is None else f"{self.c_prefix}{self.cut}"

    @property
    def sort_keys(self) -> tuple[str, ...]:
        """The items this key is counted in."""
        c = self.c_sort_key
        return (
            (self.a_sort_key, self.b_sort_key)
            if c is None
            else (self.a_sort_key, self.b_sort_key, c)
        )

    @property
    def chunk_start(self) -> str:
        """The lowest rank key this key's finest chunk can hold (the chunk's keys are at or above
        it, below the next chunk's)."""
        start = f"{self.score_part}{self.chunk_b << self.grain:0{_DIGITS}d}#"
        return start if self.cut is None else max(start, f"{self.score_part}{self.cut}")


@dataclass(frozen=True)
class SlotTies:
    """What a writer needs of a crowded slot: its grain, and the cut length of each of its cut
    level-B chunks, by the chunk's sort key."""

    grain: int
    cuts: Mapping[str, int] = field(default_factory=dict)

    def mark_of(self, key: RankKey) -> int:
        """The tie mark ``key`` is counted at in this slot."""
        return mark_of(key, self.grain, self.cuts)


def below_score(key: RankKey) -> str:
    """The part of ``key``'s encoding after its score: ``<achievedAt>#<playerId>``."""
    return f"{key.achieved_at_ms:0{_DIGITS}d}#{key.player_id}"


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


def choose_cut(keys: list[RankKey], *, group: int) -> int:
    """The least cut length at which no group of ``keys`` (one level-B chunk's entries) sharing
    their first characters below the score holds more than ``group``: keys are unique, so the
    whole key always does."""

    def fits(length: int) -> bool:
        sizes: dict[str, int] = {}
        for key in keys:
            cut = below_score(key)[:length]
            sizes[cut] = sizes.get(cut, 0) + 1
        return max(sizes.values(), default=0) <= group

    lo, hi = 1, MAX_CUT  # the answer is in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def choose_cuts(
    keys: list[RankKey], grain: int, *, group: int, cuts: Mapping[str, int]
) -> dict[str, int]:
    """Every level-B chunk's cut length (by the chunk's sort key): those of ``cuts`` (a cut never
    changes, so rows marked with it stay right), and a new one for each uncut chunk of ``keys`` (a
    slot's entries) holding more than ``group``."""
    chunks: dict[str, list[RankKey]] = {}
    for key in keys:
        chunks.setdefault(TiePlace.of(key, grain).b_sort_key, []).append(key)
    chosen = dict(cuts)
    for chunk, in_chunk in chunks.items():
        if chunk not in chosen and len(in_chunk) > group:
            chosen[chunk] = choose_cut(in_chunk, group=group)
    return chosen


def mark_of(key: RankKey, grain: int, cuts: Mapping[str, int]) -> int:
    """The tie mark of ``key`` in a slot of ``grain`` whose chunks are cut as ``cuts`` says."""
    return tie_mark(grain, cuts.get(TiePlace.of(key, grain).b_sort_key, 0))


def adds_up(counts: Mapping[str, int], cuts: Mapping[str, int], *, slot_count: int) -> bool:
    """Whether a slot's tie counts (all levels, by sort key) add up at every level: level A to the
    slot's fine counter, each A chunk's level B to its A item, each cut chunk's level C to its B
    item. Where they do and the slot is sealed, they count every row in it."""
    by_level: dict[str, dict[str, int]] = {LEVEL_A: {}, LEVEL_B: {}, LEVEL_C: {}}
    for sort_key, n in counts.items():
        by_level.get(sort_key[:2], {})[sort_key] = n
    a, b, c = by_level[LEVEL_A], by_level[LEVEL_B], by_level[LEVEL_C]
    if sum(a.values()) != slot_count:
        return False
    for a_key, n in a.items():
        b_prefix = f"{LEVEL_B}{a_key[len(LEVEL_A) :]}#"
        if sum(m for k, m in b.items() if k.startswith(b_prefix)) != n:
            return False
    for b_key in cuts:
        part, chunk_b = b_key[len(LEVEL_B) : -(2 * _DIGITS + 1)], b_key[-_DIGITS:]
        c_prefix = f"{LEVEL_C}{part}{chunk_b}#"
        if sum(m for k, m in c.items() if k.startswith(c_prefix)) != b.get(b_key, 0):
            return False
    return True


def tie_counts(keys: list[RankKey], marks: list[int]) -> dict[str, int]:
    """The level-A, -B and -C counts of a slot's ``keys``, each counted at its mark, by sort
    key."""
    counts: dict[str, int] = {}
    for key, mark in zip(keys, marks, strict=True):
        for sort_key in TiePlace.of(key, mark).sort_keys:
            counts[sort_key] = counts.get(sort_key, 0) + 1
    return counts


@dataclass(frozen=True)
class TieCounts:
    """What a rank in a crowded slot reads: every level-A count of the slot, and the level-B
    counts of one A chunk, by sort key; and whether the slot's last build sealed them (every
    count it wrote landed, and every row it counted is marked: they count the marked rows)."""

    a: Mapping[str, int]
    b: Mapping[str, int]
    sealed: bool
    c: Mapping[str, int] = field(default_factory=dict)
    """The level-C counts of one cut B chunk, where asked for."""

    @classmethod
    def within(
        cls,
        counts: Mapping[str, int],
        b_prefix: str,
        *,
        c_prefix: str | None = None,
        sealed: bool,
    ) -> TieCounts:
        """What a rank reads of a slot's counts held whole (every level, by sort key): level A,
        level B under ``b_prefix`` and, where given, level C under ``c_prefix``."""

        def under(prefix: str) -> dict[str, int]:
            return {key: n for key, n in counts.items() if key.startswith(prefix)}

        return cls(
            under(LEVEL_A),
            under(b_prefix),
            sealed=sealed,
            c={} if c_prefix is None else under(c_prefix),
        )
