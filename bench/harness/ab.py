"""Two versions of the service side by side: each served from its own checkout (as
``leaderboard serve`` serves it), on twin tables of one backend, every request sent to both in
turn (which goes first alternates), and the CPU of each process read around its own request.

This is how a change's effect on a request's CPU is measured: one run of the old code and then
one of the new would measure this machine's drift between minutes (a fifth, at times) as much as
the change. The base is a git revision (checked out into a temporary worktree) or a directory;
both sides run on this checkout's interpreter and locked dependencies.

    python3 tools/uv.py run --frozen --all-groups python -m bench.harness.ab --base HEAD~1

prints, for each operation, the CPU a request on each side and the new side's ratio to the
base, with its 95% interval over the requests compared (``overhead.ratio_interval``): an interval
that holds 1 is a change this run cannot tell from noise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx

from app.bootstrap import open_runtime
from app.local.embedded import EmbeddedDynamo
from app.logging import configure_logging
from bench.harness.overhead import _cpu_of, _requests, _send, ratio_interval
from bench.harness.process import ServedService
from bench.harness.service import bench_settings, run_tables

OPERATIONS = ("submission", "top page", "rank read", "around", "standings")


@dataclass(frozen=True)
class Compared:
    operation: str
    requests: int
    base_cpu_ms: float
    new_cpu_ms: float
    interval: tuple[float, float] | None
    """The 95% interval of ``ratio``."""

    @property
    def ratio(self) -> float:
        return self.new_cpu_ms / self.base_cpu_ms if self.base_cpu_ms else float("nan")

    def line(self) -> str:
        low, high = self.interval or (float("nan"), float("nan"))
        return (
            f"{self.operation:<11} {self.requests:>5} {self.base_cpu_ms:>9.3f} "
            f"{self.new_cpu_ms:>9.3f} {self.ratio:>7.3f} {low:>7.3f}-{high:.3f}"
        )


HEADER = f"{'operation':<11} {'reqs':>5} {'base ms':>9} {'new ms':>9} {'ratio':>7} 95% interval"


@contextlib.contextmanager
def checkout(base: str) -> Iterator[Path]:
    """``base`` itself when it is a directory, else a detached worktree of that revision for the
    length of the run."""
    if Path(base).is_dir():
        yield Path(base).resolve()
        return
    with tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp:
        tree = Path(tmp) / "base"
        _git("worktree", "add", "--detach", "--quiet", str(tree), base)
        try:
            yield tree
        finally:
            _git("worktree", "remove", "--force", str(tree))


def _git(*args: str) -> None:
    # git from PATH, on a revision the caller named: nothing from the network.
    subprocess.run(["git", *args], check=True)  # noqa: S607


def compare(
    endpoint: str,
    trees: tuple[Path, Path],
    workdir: Path,
    *,
    operations: Sequence[str] = OPERATIONS,
    n: int = 200,
    warm: int = 10,
) -> list[Compared]:
    """Every operation's requests (the CPU part's, ``overhead._requests``), each to the base
    and to the new side in turn; the first ``warm`` of each operation are left out of both."""
    tables = (run_tables("bench-ab-base"), run_tables("bench-ab-new"))

    async def create() -> None:
        for names in tables:
            async with open_runtime(bench_settings(endpoint, names), create_tables=True):
                pass

    asyncio.run(create())
    requests = _requests(n + warm)
    # Ranks and pages need a board: the submissions go first, whether measured or not.
    setup = [] if "submission" in operations else requests["submission"]
    sides = [
        ServedService(bench_settings(endpoint, names), workdir, name=f"ab-{side}", tree=tree)
        for side, names, tree in zip(("base", "new"), tables, trees, strict=True)
    ]
    figures = []
    with sides[0], sides[1], contextlib.ExitStack() as stack:
        clients = [stack.enter_context(httpx.Client(base_url=s.url, timeout=120)) for s in sides]
        for i, request in enumerate(setup):
            for client in clients:
                _send(client, "submission", request, f"ab-setup-{i:05d}")
        for operation in operations:
            spent: list[tuple[float, float]] = []
            for i, request in enumerate(requests[operation]):
                request_id = f"ab-{operation.replace(' ', '-')}-{i:05d}"
                cpu = [0.0, 0.0]
                for k in (0, 1) if i % 2 == 0 else (1, 0):
                    cpu[k] = _cpu_of(
                        sides[k].pid, partial(_send, clients[k], operation, request, request_id)
                    )
                if i >= warm:
                    spent.append((cpu[1], cpu[0]))
            figures.append(
                Compared(
                    operation=operation,
                    requests=len(spent),
                    base_cpu_ms=1000 * sum(b for _, b in spent) / len(spent),
                    new_cpu_ms=1000 * sum(s for s, _ in spent) / len(spent),
                    interval=ratio_interval(spent),
                )
            )
            print(figures[-1].line(), flush=True)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.harness.ab",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base", default="HEAD", help="a git revision or a directory (HEAD)")
    parser.add_argument("--new", default=".", type=Path, help="a directory (this checkout)")
    parser.add_argument(
        "--operations", default=",".join(OPERATIONS), help=f"of: {', '.join(OPERATIONS)}"
    )
    parser.add_argument("--requests", type=int, default=200, help="measured, per operation")
    parser.add_argument("--dynamodb-endpoint", help="default: an embedded backend of its own")
    args = parser.parse_args(argv)
    given = set(args.operations.split(","))
    if given - set(OPERATIONS):
        parser.error(f"unknown operations: {', '.join(sorted(given - set(OPERATIONS)))}")
    operations = [o for o in OPERATIONS if o in given]  # submissions first: they fill the board
    configure_logging(json=True, level=30, cache=False)
    backend = (
        contextlib.nullcontext(args.dynamodb_endpoint)
        if args.dynamodb_endpoint
        else EmbeddedDynamo()
    )
    with (
        checkout(args.base) as base,
        tempfile.TemporaryDirectory(prefix="bench-ab-") as tmp,
        backend as endpoint,
    ):
        print(f"base: {base}\nnew:  {args.new.resolve()}\n{HEADER}", flush=True)
        compare(
            endpoint, (base, args.new.resolve()), Path(tmp), operations=operations, n=args.requests
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
