"""The command: ``python -m bench.rank_sim``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.rank_sim.boards import DISTRIBUTIONS
from bench.rank_sim.figures import simulate
from bench.rank_sim.model import LAYOUT_SETS, SimulationError
from bench.rank_sim.report import kept_recommendation, render


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.rank_sim", description=__doc__)
    parser.add_argument(
        "--sizes",
        default="10000,100000,1000000,10000000",
        help="board sizes, comma-separated (default: 10^4 to 10^7)",
    )
    parser.add_argument(
        "--distributions",
        default=",".join(d.name for d in DISTRIBUTIONS),
        help="score distributions, comma-separated",
    )
    parser.add_argument(
        "--sample",
        type=int,
        default=2_000,
        help="players per board and layout run through the real rank code (default 2,000)",
    )
    parser.add_argument(
        "--layouts",
        choices=sorted(LAYOUT_SETS),
        default="all",
        help="every layout (default), or the tie comparison: the earlier Lambda design, the "
        "shipped layout without and with tie counters",
    )
    parser.add_argument("--seed", type=int, default=20_261_130)
    parser.add_argument(
        "--quick", action="store_true", help="10^4 and 10^5 players, 200 players cross-checked"
    )
    parser.add_argument("--out", type=Path, help="write the Markdown report here")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = [10_000, 100_000] if args.quick else [int(s) for s in args.sizes.split(",")]
    sample = min(args.sample, 200) if args.quick else args.sample
    by_name = {d.name: d for d in DISTRIBUTIONS}
    distributions = [by_name[name] for name in args.distributions.split(",")]

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    specs = LAYOUT_SETS[args.layouts]
    log(f"rank simulation: sizes {sizes}, {len(specs)} layouts, {sample:,} players checked each")
    try:
        run = simulate(distributions, sizes, specs, sample=sample, seed=args.seed, log=log)
    except SimulationError as exc:
        log(f"FAILED: {exc}")
        return 1
    command = "python3 tools/uv.py run --frozen --all-groups python -m bench.rank_sim " + " ".join(
        sys.argv[1:] if argv is None else list(argv)
    )
    if args.out is not None:
        report = render(run, command=command.strip(), recommendation=kept_recommendation(args.out))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report + "\n", encoding="utf-8")
        log(f"wrote {args.out}")
    else:
        print(render(run, command=command.strip(), recommendation=""))
    log(f"done in {run.seconds / 60:.1f} minutes")
    return 0
