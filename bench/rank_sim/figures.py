"""The figures of a run: per board and layout, from the model's answers."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from bench.rank_sim.boards import DISTRIBUTIONS, Board, Distribution, build_board, tie_ceiling
from bench.rank_sim.check import choose_sample, cross_check
from bench.rank_sim.costs import IntArray
from bench.rank_sim.model import Answers, LayoutSpec, SimulationError, _ranks
from bench.rank_sim.tie_model import TieBuild, model_with_build
from bench.rank_sim.writes import Writes, counter_writes, draw_improvements


def order_statistic(values: IntArray, q: float) -> int:
    """The nearest-rank ``q`` quantile: the smallest value with at least ``q`` of them at or below."""
    k = max(0, math.ceil(q * len(values)) - 1)
    return int(np.partition(values, k)[k])


@dataclass(frozen=True)
class Row:
    distribution: str
    size: int
    layout: str
    exact_share: float
    entries: tuple[int, int, int]
    """p50, p99, max."""
    width: tuple[int, int] | None
    """p50, p99 of ``hi - lo`` over the estimated answers; ``None`` when every answer is exact."""
    counter_items_p99: int
    counter_bytes: tuple[int, int, int]
    rcu: tuple[float, float, float]
    """p50, p99, max, eventually consistent."""
    round_trips_max: int
    writes: Writes
    checked: int
    misses: int
    """Ranges that miss the true rank, and exact ranks that are not it, over every player."""
    ties: TieFigures | None = None


@dataclass(frozen=True)
class TieFigures:
    """Where the tie design put counters on a board, and what the reads of them returned."""

    crowded_slots: int
    crowded_players: float
    """Share of the board's players in crowded slots."""
    a_items: int
    b_items: int
    grains: tuple[int, int]
    """Least and greatest grain of the crowded slots."""
    items_read_p99: int
    """Level-A plus level-B items one read of a crowded-slot player returned, p99 over them."""

    @classmethod
    def of(cls, build: TieBuild) -> TieFigures | None:
        if not build.crowded_slots:
            return None
        grains = build.grain_of_slot[build.crowded_slot]
        read = (build.a_read + build.b_read)[build.crowded]
        return cls(
            crowded_slots=build.crowded_slots,
            crowded_players=float(build.crowded.mean()),
            a_items=build.a_items,
            b_items=build.b_items,
            grains=(int(grains.min()), int(grains.max())),
            items_read_p99=order_statistic(read, 0.99),
        )


def summarise(
    board: Board,
    spec: LayoutSpec,
    answers: Answers,
    writes: Writes,
    checked: int,
    build: TieBuild | None = None,
) -> Row:
    rank = _ranks(board)
    misses = int((answers.exact & (answers.lo != rank)).sum())
    misses += int(((answers.lo > rank) | (answers.hi < rank)).sum())
    estimated = ~answers.exact
    widths = (answers.hi - answers.lo)[estimated]
    return Row(
        distribution=board.distribution.name,
        size=board.size,
        layout=spec.name,
        exact_share=float(answers.exact.mean()),
        entries=(
            order_statistic(answers.entries, 0.5),
            order_statistic(answers.entries, 0.99),
            int(answers.entries.max()),
        ),
        width=(order_statistic(widths, 0.5), order_statistic(widths, 0.99))
        if len(widths)
        else None,
        counter_items_p99=order_statistic(answers.counter_items, 0.99),
        counter_bytes=(
            order_statistic(answers.counter_bytes, 0.5),
            order_statistic(answers.counter_bytes, 0.99),
            int(answers.counter_bytes.max()),
        ),
        rcu=(
            order_statistic(answers.half_units, 0.5) / 2,
            order_statistic(answers.half_units, 0.99) / 2,
            int(answers.half_units.max()) / 2,
        ),
        round_trips_max=int(answers.round_trips.max()),
        writes=writes,
        checked=checked,
        misses=misses,
        ties=None if build is None else TieFigures.of(build),
    )


@dataclass(frozen=True)
class BoardResult:
    distribution: str
    size: int
    tie_ceiling: float
    most_tied: int
    """Players on the board's most crowded single score."""
    seconds: float
    rows: list[Row]


@dataclass
class Run:
    results: list[BoardResult] = field(default_factory=list)
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    seconds: float = 0.0


def simulate_board(
    distribution: Distribution,
    size: int,
    specs: Sequence[LayoutSpec],
    *,
    sample: int,
    seed: int,
    log: Callable[[str], None] = lambda _: None,
) -> BoardResult:
    started = time.perf_counter()
    index = [d.name for d in DISTRIBUTIONS].index(distribution.name)
    rng = np.random.default_rng([seed, index, size])
    board = build_board(distribution, size, rng)
    improvements = draw_improvements(board, rng, 200_000)
    _, tied = np.unique(board.score, return_counts=True)
    rows = []
    for spec in specs:
        lap = time.perf_counter()
        answers, placement, build = model_with_build(board, spec)
        focus = None if build is None or not build.crowded.any() else build.crowded
        picked = choose_sample(answers, sample, rng, focus=focus)
        checked = cross_check(board, spec, answers, placement, picked)
        writes = counter_writes(spec, board, improvements)
        row = summarise(board, spec, answers, writes, checked, build)
        if row.misses:
            raise SimulationError(f"{spec.name}: {row.misses} answers miss the true rank")
        rows.append(row)
        log(
            f"  {distribution.name:>9} {size:>10,} {spec.name:<38} exact {row.exact_share:8.4%}"
            f"  checked {checked:,}  {time.perf_counter() - lap:5.1f}s"
        )
    return BoardResult(
        distribution=distribution.name,
        size=size,
        tie_ceiling=tie_ceiling(board),
        most_tied=int(tied.max()),
        seconds=time.perf_counter() - started,
        rows=rows,
    )


def simulate(
    distributions: Sequence[Distribution],
    sizes: Sequence[int],
    specs: Sequence[LayoutSpec],
    *,
    sample: int,
    seed: int,
    log: Callable[[str], None] = lambda _: None,
) -> Run:
    run = Run()
    clock = time.perf_counter()
    for size in sizes:
        for distribution in distributions:
            run.results.append(
                simulate_board(distribution, size, specs, sample=sample, seed=seed, log=log)
            )
    run.seconds = time.perf_counter() - clock
    return run
