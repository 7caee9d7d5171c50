"""The cross-check: the real ``rank_of`` over the in-memory readers, on a sample of players,
must agree with the model exactly."""

from __future__ import annotations

import asyncio

import numpy as np

from app.domain.ranks import RankQuery
from app.services.ranking.ranks import rank_of
from bench.rank_sim.boards import Board
from bench.rank_sim.costs import BOARD_ID, CAP, BoolArray, IntArray
from bench.rank_sim.model import Answers, LayoutSpec, Placement, SimulationError
from bench.rank_sim.readers import (
    Answer,
    Cost,
    KeyView,
    SimRankReader,
    answer_of,
    rank_of_full_read,
    seeds_rank_of,
)
from bench.rank_sim.tie_readers import SimTieReader


def choose_sample(
    answers: Answers, size: int, rng: np.random.Generator, *, focus: BoolArray | None = None
) -> IntArray:
    """Players to run through the real code: the first and last, half at random, and the rest from
    the two sides of the cap (the last exact answers and the first ranges of their slots), or from
    ``focus`` (the crowded slots' players, for the tie design) when given."""
    n = len(answers.exact)
    if size >= n:
        return np.arange(n, dtype=np.int64)
    picked = {0, n - 1}
    edges = np.flatnonzero(answers.entries >= CAP - 1 if focus is None else focus)
    if len(edges):
        picked.update(edges[rng.integers(0, len(edges), size // 2)].tolist())
    while len(picked) < size:
        picked.update(rng.integers(0, n, size - len(picked)).tolist())
    return np.array(sorted(picked), dtype=np.int64)


def _expected_cost(answers: Answers, i: int) -> Cost:
    return Cost(
        calls=int(answers.calls[i]),
        round_trips=int(answers.round_trips[i]),
        entries=int(answers.entries[i]),
        counter_items=int(answers.counter_items[i]),
        counter_bytes=int(answers.counter_bytes[i]),
        half_units=int(answers.half_units[i]),
    )


def _compare(
    board: Board, spec: LayoutSpec, answers: Answers, i: int, got: Answer, cost: Cost
) -> list[str]:
    rank = i + 1
    problems = []
    expected = Answer(bool(answers.exact[i]), int(answers.lo[i]), int(answers.hi[i]))
    if got != expected:
        problems.append(f"answer {got}, model {expected}")
    if got.exact and got.lo != rank:
        problems.append(f"exact rank {got.lo}, true rank {rank}")
    if not got.lo <= rank <= got.hi:
        problems.append(f"range {got.lo}..{got.hi} misses the true rank {rank}")
    if cost != _expected_cost(answers, i):
        problems.append(f"cost {cost}, model {_expected_cost(answers, i)}")
    return [f"player at index {i} (score {int(board.score[i])}): {p}" for p in problems]


def cross_check(
    board: Board, spec: LayoutSpec, answers: Answers, placement: Placement, sample: IntArray
) -> int:
    """Run the real rank code for ``sample`` (the service's ``rank_of``, with each player's tie
    grain where the layout has tie counters); raise ``SimulationError`` on any disagreement."""
    ties = spec.ties
    reader = (
        SimRankReader(board, spec.layout, placement)
        if ties is None
        else SimTieReader(board, spec.layout, placement, ties)
    )
    keys = KeyView(board)

    async def run() -> list[str]:
        problems: list[str] = []
        for i in sample.tolist():
            # The index must really be in key order around the player, or bisection lies.
            if (i > 0 and keys[i - 1] >= keys[i]) or (
                i + 1 < board.size and keys[i] >= keys[i + 1]
            ):
                problems.append(f"index out of order at {i}")
            key = board.key(i)
            reader.reset()
            if spec.seeds:
                got = await seeds_rank_of(reader, key, cap=CAP)
            elif spec.nearer_half:  # the service's own rank code
                grain = reader.grain_of(key) if isinstance(reader, SimTieReader) else None
                query = RankQuery(BOARD_ID, key, tie_mark=grain)
                cap = CAP if ties is None else ties.cap
                got = answer_of(await rank_of(reader, spec.layout, query, cap=cap))
            else:
                got = answer_of(await rank_of_full_read(reader, spec.layout, key, cap=CAP))
            problems += _compare(board, spec, answers, i, got, reader.reset())
        return problems

    problems = asyncio.run(run())
    if problems:
        shown = "\n  ".join(problems[:10])
        raise SimulationError(
            f"{board.distribution.name} {board.size:,} {spec.name}: the real rank code and the "
            f"model disagree for {len(problems)} checks:\n  {shown}"
        )
    return len(sample)
