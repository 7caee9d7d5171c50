"""The tie counters below the score in crowded slots, modelled over a whole board."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from app.domain.keys import score_prefix
from app.domain.storage_keys import tie_pk
from app.domain.ties import MAX_GRAIN, TiePlace
from bench.rank_sim.boards import Board
from bench.rank_sim.costs import (
    BOARD_ID,
    STRONG,
    BoolArray,
    IntArray,
    item_bytes,
    number_bytes,
    number_bytes_array,
    query_half_units_array,
)
from bench.rank_sim.model import (
    Answers,
    LayoutSpec,
    Placement,
    SimulationError,
    Ties,
    _two_level,
    entry_half_units,
    histogram_reads,
    model_seeds,
    model_two_level,
    verified_slot_map,
)


def tie_a_key(score: int, chunk_a: int) -> str:
    """A level-A item's sort key, as the service writes it (``TiePlace.a_sort_key``)."""
    return TiePlace(0, score_prefix(score), chunk_a, 0).a_sort_key


def tie_b_key(score: int, chunk_a: int, chunk_b: int) -> str:
    """A level-B item's sort key (``TiePlace.b_sort_key``); an A chunk's B items share a prefix."""
    return TiePlace(0, score_prefix(score), chunk_a, chunk_b).b_sort_key


def tie_item_bytes(bucket: int, slot: int, sort_key: str, n: int) -> int:
    return item_bytes(
        {"playerId": tie_pk(BOARD_ID, bucket, slot), "leaderboardId": sort_key, "n": n}
    )


TIE_A_BASE: Final = tie_item_bytes(0, 0, tie_a_key(0, 0), 0) - number_bytes(0)
TIE_B_BASE: Final = tie_item_bytes(0, 0, tie_b_key(0, 0, 0), 0) - number_bytes(0)
"""Every key field is fixed-width, so an item's size is these plus its count's."""


def bit_length(values: IntArray) -> IntArray:
    """``int.bit_length`` over non-negative values below 2**53 (exact in a float's exponent)."""
    _, exponent = np.frexp(values.astype(np.float64))
    return exponent.astype(np.int64)


def slot_grains(board: Board, flat: IntArray, ties: Ties, slots: int) -> IntArray:
    """Every slot's grain ``L``, by the builder's rule.

    A ``(score, ms >> L)`` group holds more than G entries exactly when some entry and the one G
    places after it share the score and ``ms >> L`` (the board is in score, then time, order), and
    ``a >> L == b >> L`` exactly when ``L >= bit_length(a ^ b)``. So the largest L that keeps
    every such pair apart is the least ``bit_length(a ^ b) - 1`` over the slot's pairs; a pair in
    one millisecond allows none, and the slot falls back to 0.
    """
    grains = np.full(slots, MAX_GRAIN, dtype=np.int64)
    g = ties.group
    if board.size > g:
        pairs = np.flatnonzero(board.score[:-g] == board.score[g:])
        apart = bit_length(board.achieved_ms[pairs] ^ board.achieved_ms[pairs + g]) - 1
        np.minimum.at(grains, flat[pairs], apart)
    return np.clip(grains, 0, MAX_GRAIN)


@dataclass(frozen=True)
class TieBuild:
    """Where the builder put tie counters on a board, and what each player's read of them took."""

    crowded_slot: BoolArray
    """Per flat slot (``bucket * fine + slot``)."""
    grain_of_slot: IntArray
    crowded: BoolArray
    """Per player: in a crowded slot."""
    a_read: IntArray
    b_read: IntArray
    """Per player: level-A and level-B items their rank read returned (0 outside crowded slots)."""
    a_items: int
    b_items: int
    """Tie counter items on the board."""

    @property
    def crowded_slots(self) -> int:
        return int(self.crowded_slot.sum())


def _runs(*keys: IntArray) -> BoolArray:
    """Where a run of equal ``keys`` (taken together) starts."""
    new = np.zeros(len(keys[0]), dtype=np.bool_)
    new[:1] = True
    for key in keys:
        new[1:] |= key[1:] != key[:-1]
    return new


@dataclass(frozen=True)
class _Chunks:
    """The crowded slots' players (board indices ``idx``, in board order) and their chunks: each
    slot, A chunk and B chunk is a run of them. Chunk ids number the board's A (or B) items in
    board order."""

    idx: IntArray
    a_id: IntArray
    b_id: IntArray
    a_size: IntArray
    b_size: IntArray
    a_first: IntArray
    a_count: IntArray
    """Per player: the id of their slot's first A item, and how many the slot has."""
    b_first: IntArray
    b_count: IntArray
    """Per player: the id of their A chunk's first B item, and how many it has."""
    b_start: IntArray
    """Per player: the board index of their B chunk's first entry."""


def _chunks(board: Board, idx: IntArray, flat: IntArray, grain: IntArray, ties: Ties) -> _Chunks:
    score, t = board.score[idx], board.achieved_ms[idx]
    chunk_b = t >> grain
    new_slot, new_a = _runs(flat), _runs(flat, score, chunk_b >> ties.fan_bits)
    new_b = new_a | _runs(chunk_b)
    slot_id, a_id, b_id = (np.cumsum(new) - 1 for new in (new_slot, new_a, new_b))
    a_size, b_size = np.bincount(a_id), np.bincount(b_id)
    return _Chunks(
        idx=idx,
        a_id=a_id,
        b_id=b_id,
        a_size=a_size,
        b_size=b_size,
        a_first=a_id[new_slot][slot_id],
        a_count=np.diff(np.append(a_id[new_slot], len(a_size)))[slot_id],
        b_first=b_id[new_a][a_id],
        b_count=np.diff(np.append(b_id[new_a], len(b_size)))[a_id],
        b_start=idx[new_b][b_id],
    )


@dataclass(frozen=True)
class _TieRead:
    """One counter level's read for every crowded-slot player."""

    ahead: IntArray
    """The level's counts ahead of the player's chunk, as the read turns them into."""
    items: IntArray
    nbytes: IntArray


def _level_read(
    own: IntArray, first: IntArray, count: IntArray, sizes: IntArray, base_bytes: int
) -> _TieRead:
    """Items ``first .. first + count - 1`` of one level (a slot's A items, or an A chunk's B
    items): one ``begins_with`` Query, whose counts before ``own`` are those ahead."""
    total = np.concatenate(([0], np.cumsum(sizes)))
    nbytes = np.concatenate(([0], np.cumsum(base_bytes + number_bytes_array(sizes))))
    return _TieRead(
        ahead=total[own] - total[first],
        items=count,
        nbytes=nbytes[first + count] - nbytes[first],
    )


def model_ties(board: Board, spec: LayoutSpec, placement: Placement) -> tuple[Answers, TieBuild]:
    """The service's rank read (``rank_of`` with the row's tie grain) for every player: as
    without ties outside crowded slots; inside one, beside the same counter reads, every level-A
    item of the slot (one Query), every level-B item of the player's A chunk (one Query), and a
    COUNT from the start of the player's B chunk up to their key, all in the same round.
    """
    ties = spec.ties
    if ties is None or not spec.nearer_half:
        raise SimulationError("the tie model runs over the nearer-half read")
    layout = spec.layout
    hist = histogram_reads(board, spec, placement)
    base = _two_level(board, spec, hist)
    flat = placement.bucket * layout.fine + placement.slot
    slots = layout.coarse * layout.fine
    crowded_slot = np.bincount(flat, minlength=slots) > ties.group
    grain_of_slot = slot_grains(board, flat, ties, slots)
    crowded = crowded_slot[flat]
    idx = np.flatnonzero(crowded)
    a_read, b_read = np.zeros(board.size, dtype=np.int64), np.zeros(board.size, dtype=np.int64)
    if not len(idx):
        return base, TieBuild(crowded_slot, grain_of_slot, crowded, a_read, b_read, 0, 0)

    grain = grain_of_slot[flat[idx]]
    c = _chunks(board, idx, flat[idx], grain, ties)
    level_a = _level_read(c.a_id, c.a_first, c.a_count, c.a_size, TIE_A_BASE)
    level_b = _level_read(c.b_id, c.b_first, c.b_count, c.b_size, TIE_B_BASE)

    # The COUNT reads the index itself: where the player's key sits in their B chunk.
    own_b, in_chunk = c.b_size[c.b_id], idx - c.b_start
    if bool((in_chunk < 0).any()) or bool((in_chunk >= own_b).any()):
        raise SimulationError(f"{spec.name}: the board order and the tie chunks disagree")
    capped = in_chunk >= ties.cap
    before = hist.ahead[idx] + level_a.ahead + level_b.ahead
    rank = before + in_chunk + 1
    lo = np.where(capped, before + ties.cap + 1, rank)
    top = before + own_b + hist.unseen[idx]

    a_read[idx], b_read[idx] = level_a.items, level_b.items
    answers = _replaced(
        base,
        idx,
        exact=~capped,
        lo=lo,
        hi=np.where(capped, np.maximum(lo, top), rank),
        entries=np.minimum(in_chunk, ties.cap),
        extra_items=level_a.items + level_b.items,
        extra_bytes=level_a.nbytes + level_b.nbytes,
        extra_half=np.where(hist.consistent[idx], STRONG, 1)
        * (query_half_units_array(level_a.nbytes) + query_half_units_array(level_b.nbytes)),
        hist_half=hist.half_units,
    )
    build = TieBuild(
        crowded_slot, grain_of_slot, crowded, a_read, b_read, len(c.a_size), len(c.b_size)
    )
    return answers, build


def _replaced(
    base: Answers,
    idx: IntArray,
    *,
    exact: BoolArray,
    lo: IntArray,
    hi: IntArray,
    entries: IntArray,
    extra_items: IntArray,
    extra_bytes: IntArray,
    extra_half: IntArray,
    hist_half: IntArray,
) -> Answers:
    """``base`` with the crowded-slot players' answers, their COUNT and their tie reads."""
    exact_all, lo_all, hi_all = base.exact.copy(), base.lo.copy(), base.hi.copy()
    exact_all[idx], lo_all[idx], hi_all[idx] = exact, lo, hi
    entries_all = base.entries.copy()
    entries_all[idx] = entries
    items, nbytes, half = base.counter_items.copy(), base.counter_bytes.copy(), hist_half.copy()
    items[idx] += extra_items
    nbytes[idx] += extra_bytes
    half[idx] += extra_half
    calls = base.calls.copy()
    calls[idx] += 2  # the level-A and level-B Queries, in the same round
    return Answers(
        exact=exact_all,
        lo=lo_all,
        hi=hi_all,
        entries=entries_all,
        counter_items=items,
        counter_bytes=nbytes,
        half_units=half + entry_half_units(entries_all),
        round_trips=base.round_trips,
        calls=calls,
    )


def model(board: Board, spec: LayoutSpec) -> tuple[Answers, Placement]:
    answers, placement, _ = model_with_build(board, spec)
    return answers, placement


def model_with_build(board: Board, spec: LayoutSpec) -> tuple[Answers, Placement, TieBuild | None]:
    """Every player's answer by ``spec``'s algorithm, and where it put tie counters, if any."""
    layout = spec.layout
    slot_map = verified_slot_map(layout.coarse, layout.fine)
    placement = Placement(*slot_map.place(board.score))
    if spec.seeds:
        return model_seeds(board, placement), placement, None
    if spec.ties is not None:
        answers, build = model_ties(board, spec, placement)
        return answers, placement, build
    return model_two_level(board, spec, placement), placement, None
