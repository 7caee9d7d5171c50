"""Rank cost and exactness at scale: the rank code over an in-memory index, boards of 10^4 to 10^7.

Run it as ``python3 tools/uv.py run --frozen --all-groups python -m bench.rank_sim [--sizes 10000,100000] [--quick] [--out FILE]``.

Every player of every board is ranked by a vectorised (numpy) model of ``app.services.ranking.ranks.rank_of``
and of the earlier Lambda design's algorithm (count from the top to 2,000, then a range from 128 log
buckets), with what each answer costs in DynamoDB terms. The model is trusted only because, on a sample of players of
every board and layout, the real ``rank_of`` runs over ``SimRankReader`` (an in-memory ``RankReader``:
a sorted index of real rank keys plus the counter items, with cost accounting) and must agree with it
exactly: the same rank or range, the same entries read, counter bytes, read units and round trips,
and an exact rank equal to the player's true place. Any disagreement stops the run.
"""

from __future__ import annotations

from bench.rank_sim.boards import DISTRIBUTIONS, Board, Distribution, build_board, tie_ceiling
from bench.rank_sim.check import choose_sample, cross_check
from bench.rank_sim.command import main
from bench.rank_sim.costs import (
    BOARD_ID,
    CAP,
    INDEX_ENTRY_BYTES,
    SHARDS,
    item_bytes,
    number_bytes,
    number_bytes_array,
    query_half_units,
    seeds_meta_bytes,
)
from bench.rank_sim.figures import BoardResult, simulate_board
from bench.rank_sim.model import (
    DEFAULT,
    FULL_READ,
    LAYOUTS,
    SEEDS,
    TIES,
    LayoutSpec,
    SimulationError,
)
from bench.rank_sim.readers import SimRankReader
from bench.rank_sim.report import RECOMMENDATION_END, RECOMMENDATION_START
from bench.rank_sim.tie_model import model, model_with_build
from bench.rank_sim.writes import counter_writes, draw_improvements

__all__ = [
    "BOARD_ID",
    "CAP",
    "DEFAULT",
    "DISTRIBUTIONS",
    "FULL_READ",
    "INDEX_ENTRY_BYTES",
    "LAYOUTS",
    "RECOMMENDATION_END",
    "RECOMMENDATION_START",
    "SEEDS",
    "SHARDS",
    "TIES",
    "Board",
    "BoardResult",
    "Distribution",
    "LayoutSpec",
    "SimRankReader",
    "SimulationError",
    "build_board",
    "choose_sample",
    "counter_writes",
    "cross_check",
    "draw_improvements",
    "item_bytes",
    "main",
    "model",
    "model_with_build",
    "number_bytes",
    "number_bytes_array",
    "query_half_units",
    "seeds_meta_bytes",
    "simulate_board",
    "tie_ceiling",
]
