"""Score distributions, and the boards drawn from them."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np

from app.domain.keys import SCORE_CEILING, RankKey
from bench.rank_sim.costs import BASE_MS, CAP, SHARDS, IntArray, player_id


@dataclass(frozen=True)
class Distribution:
    name: str
    description: str
    draw: Callable[[np.random.Generator, int], IntArray]
    moment: int = 0
    """Players (at random) whose achievedAt is one and the same millisecond, as a round's results
    stamped at once; all of them on a smaller board. 0: every achievedAt is distinct."""


def _trivia(rng: np.random.Generator, n: int) -> IntArray:
    return np.clip(np.rint(rng.normal(5_000.0, 1_500.0, n)), 0, None).astype(np.int64)


def _pareto(rng: np.random.Generator, n: int) -> IntArray:
    u = 1.0 - rng.random(n)  # in (0, 1]
    scores = np.floor(1_000.0 * (u ** (-1.0 / 1.5) - 1.0))
    return np.clip(scores, 0, SCORE_CEILING - 1).astype(np.int64)


def _lognormal(rng: np.random.Generator, n: int) -> IntArray:
    scores = np.floor(np.exp(rng.normal(math.log(2_000.0), 1.5, n)))
    return np.clip(scores, 0, SCORE_CEILING - 1).astype(np.int64)


def _uniform(rng: np.random.Generator, n: int) -> IntArray:
    return rng.integers(0, 1_000_000, n, dtype=np.int64)


def _coarse(rng: np.random.Generator, n: int) -> IntArray:
    return (np.rint(_trivia(rng, n) / 100.0) * 100).astype(np.int64)


def _stars(rng: np.random.Generator, n: int) -> IntArray:
    return rng.integers(0, 31, n, dtype=np.int64)


MOMENT_PLAYERS: Final = 50_000


DISTRIBUTIONS: Final = (
    Distribution(
        "trivia",
        "normal, mean 5,000, sd 1,500, rounded to the nearest integer, clipped at 0",
        _trivia,
    ),
    Distribution(
        "pareto",
        "long tail: Pareto II (Lomax), shape 1.5, scale 1,000: floor(1000 * (U^(-1/1.5) - 1)); "
        "median 587, mean 2,000, infinite variance",
        _pareto,
    ),
    Distribution(
        "lognormal",
        "long tail: floor(exp(N(ln 2,000, 1.5))); median 2,000, p99 about 65,000",
        _lognormal,
    ),
    Distribution("uniform", "uniform integers in [0, 1,000,000)", _uniform),
    Distribution(
        "coarse",
        "trivia rounded to the nearest multiple of 100 (after its clip at 0): 101 distinct "
        "scores within 3.3 sd of the mean, about 120 in all on the larger boards",
        _coarse,
    ),
    Distribution("stars", "uniform integers 0..30", _stars),
    Distribution(
        "same-moment",
        f"trivia scores; {MOMENT_PLAYERS:,} players at random (all of them on a smaller board) "
        "share one achievedAt millisecond, as a round's results stamped at once, ordered by "
        "playerId among equal scores; the rest spread as on the other boards",
        _trivia,
        moment=MOMENT_PLAYERS,
    ),
)


@dataclass(frozen=True)
class Board:
    """One board's players in board order (best first), so index ``i`` holds rank ``i + 1``: score
    descending, then achievedAt ascending, then player id ascending, as the rank key sorts
    (``<score part>#<13-digit ms>#<playerId>``; ids are ``p`` and 9 digits, so their string order
    is their number's)."""

    distribution: Distribution
    score: IntArray
    achieved_ms: IntArray
    player: IntArray
    """The player's id is ``player_id(player[i])``."""
    shard: IntArray
    """The coarse shard the player's counter increment landed on (the adapter picks at random)."""

    @property
    def size(self) -> int:
        return len(self.score)

    def key(self, i: int) -> RankKey:
        return RankKey(int(self.score[i]), int(self.achieved_ms[i]), player_id(int(self.player[i])))


def build_board(distribution: Distribution, size: int, rng: np.random.Generator) -> Board:
    """Draw ``size`` players. Achievements are a second apart in a random order (plus a random
    millisecond), so achievedAt is distinct, except for the distribution's ``moment`` players."""
    if not 0 < size <= 1 << 24:
        raise ValueError("boards of 1 to 2**24 players")
    score = distribution.draw(rng, size)
    when = rng.permutation(size).astype(np.int64)
    achieved = BASE_MS + when * 1_000 + rng.integers(0, 1_000, size, dtype=np.int64)
    player = rng.permutation(size).astype(np.int64)
    shard = rng.integers(0, SHARDS, size, dtype=np.int64)
    if distribution.moment:
        together = rng.choice(size, min(distribution.moment, size), replace=False)
        achieved[together] = BASE_MS + (size // 2) * 1_000 + 500
    return board_of(distribution, score, achieved, player, shard)


def board_of(
    distribution: Distribution,
    score: IntArray,
    achieved_ms: IntArray,
    player: IntArray,
    shard: IntArray,
) -> Board:
    """The players put in board order: score descending, achievedAt ascending, player ascending."""
    order = np.lexsort((player, achieved_ms, -score))
    return Board(distribution, score[order], achieved_ms[order], player[order], shard[order])


def tie_ceiling(board: Board) -> float:
    """The best share of exact answers any score-keyed histogram could give with the cap: even a
    slot of one score leaves the players past the cap-th of a crowded score with a range."""
    _, counts = np.unique(board.score, return_counts=True)
    return float(np.minimum(counts, CAP).sum()) / board.size
