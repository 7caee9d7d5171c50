"""Building and repairing a board's tie counters (``app.domain.ties``) from a walk of its index.

The reconciler and the seeder walk every entry of a board anyway; for each crowded slot they find
(more than ``group`` entries), ``reconcile_ties`` makes the slot's tie counters what the walk saw:

1. the grain: the slot's own if it has one (a grain never changes, so rows counted at it stay
   right), else the largest that leaves no chunk over ``group`` entries;
2. each level-A and level-B count, set conditioned on the value read: the reconciler reads them
   between its two passes, so a submission landing after that read either shows in the second
   pass (the slot is then not compared) or has changed the value read (the write fails its
   condition: skipped), and is never overwritten;
3. every row of the slot not yet marked with the grain is marked (and its version bumped, so a
   submission that read it before is retried, reading the mark);
4. last, the slot's grain item, if it had none: from then on submissions count the slot's rows in
   its tie counters as they change them.

Rank reads trust a slot's tie counts only where they add up to its fine counter, so a build that a
submission overtakes (between steps 2 and 4) leaves an honest range for that slot until the next
run, never a wrong rank. Without ``apply`` nothing is written: the report says what would be.
A write DynamoDB turns away for the moment (throttled, or a transaction holding the item) is tried
again after a backoff; one that never lands is reported as unwritten, and a slot with any such
gets no grain this run (its rows are not all marked).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

import structlog

from app.domain.keys import RankKey
from app.domain.ties import choose_grain, tie_counts
from app.errors import ConditionFailed, ItemBusy, Throttled
from app.services.fanout import all_or_none
from app.services.ports import CounterStore, IndexedKey, StandingStore, StoredTies, TieItem
from app.services.retries import persist

log = structlog.get_logger(__name__)

WRITE_CONCURRENCY = 16


@dataclass(frozen=True)
class TieReport:
    """One crowded slot's tie counters: what differed from the walk, and what was done."""

    bucket: int
    slot: int
    grain: int
    entries: int
    built: bool
    """The slot had no grain: this run chose it (and, with apply, gave it)."""
    differences: int
    """Tie counter items whose stored value is not the walk's."""
    unmarked: int
    """Rows of the slot not marked with its grain."""
    repaired: int = 0
    marked: int = 0
    skipped: int = 0
    """Items or rows that changed between the read and the write: left for the next run."""
    unwritten: int = 0
    """Items or rows DynamoDB kept turning away through every retry: left for the next run."""


async def reconcile_ties(
    *,
    counters: CounterStore,
    standings: StandingStore,
    board_id: str,
    crowded: dict[tuple[int, int], list[IndexedKey]],
    group: int,
    apply: bool,
    expires_at: int | None,
    stored: Mapping[tuple[int, int], StoredTies] | None = None,
) -> list[TieReport]:
    """Compare (and, with ``apply``, make) each crowded slot's tie counters with the walk that
    found ``crowded`` (pass only slots both of the caller's passes agree on). ``stored``: the
    slots' tie counters as the caller read them between its passes, which every write is
    conditioned on; without it (a seeder, under its lease: nothing else writes) they are read
    here."""
    gate = asyncio.Semaphore(WRITE_CONCURRENCY)
    reports = []
    for (bucket, slot), entries in sorted(crowded.items()):
        if stored is not None:
            read = stored[(bucket, slot)]
        else:
            read = await counters.read_ties(board_id, bucket, slot)
        keys = [e.key for e in entries]
        grain = read.grain if read.grain is not None else choose_grain(keys, group=group)
        a, b = tie_counts(keys, grain)
        wanted = {**a, **b}
        differing = sorted(
            sk
            for sk in set(wanted) | set(read.counts)
            if read.counts.get(sk, 0) != wanted.get(sk, 0)
        )
        unmarked = [e for e in entries if e.tie_grain != grain]
        report = TieReport(
            bucket,
            slot,
            grain,
            len(entries),
            built=read.grain is None,
            differences=len(differing),
            unmarked=len(unmarked),
        )
        if apply:
            report = await _build(
                counters,
                standings,
                report,
                board_id=board_id,
                wanted={sk: (wanted.get(sk, 0), read.counts.get(sk)) for sk in differing},
                unmarked=[e.key for e in unmarked],
                needs_grain=read.grain is None,
                expires_at=expires_at,
                gate=gate,
            )
        reports.append(report)
    if reports:
        log.info(
            "tie_counters_reconciled",
            board=board_id,
            applied=apply,
            slots=len(reports),
            built=sum(r.built for r in reports),
            differences=sum(r.differences for r in reports),
            unmarked=sum(r.unmarked for r in reports),
        )
    return reports


async def _build(
    counters: CounterStore,
    standings: StandingStore,
    report: TieReport,
    *,
    board_id: str,
    wanted: dict[str, tuple[int, int | None]],
    unmarked: list[RankKey],
    needs_grain: bool,
    expires_at: int | None,
    gate: asyncio.Semaphore,
) -> TieReport:
    """Steps 2 to 4 for one slot: each count (``wanted``: the walk's value and the one read),
    each row's mark, and then, only where every one of them landed, the slot's grain."""
    bucket, slot, grain = report.bucket, report.slot, report.grain
    repaired = await all_or_none(
        *(
            _gated(
                gate,
                functools.partial(
                    counters.set_counter,
                    board_id,
                    TieItem(bucket, slot, sk),
                    n=n,
                    expected=expected,
                    expires_at=expires_at,
                ),
            )
            for sk, (n, expected) in wanted.items()
        )
    )
    marked = await all_or_none(
        *(
            _gated(gate, functools.partial(standings.mark_tie_grain, board_id, key, grain))
            for key in unmarked
        )
    )
    results = repaired + marked
    if needs_grain and all(r == "done" for r in results):
        results.append(
            await _gated(
                gate,
                lambda: counters.set_grain(board_id, bucket, slot, grain, expires_at=expires_at),
            )
        )
    return replace(
        report,
        repaired=repaired.count("done"),
        marked=marked.count("done"),
        skipped=results.count("skipped"),
        unwritten=results.count("unwritten"),
    )


Written = Literal["done", "skipped", "unwritten"]


async def _gated(gate: asyncio.Semaphore, write: Callable[[], Awaitable[object]]) -> Written:
    """One write, retried while DynamoDB turns it away for the moment: ``skipped`` where what it
    was conditioned on changed (it returned ``False``, or its condition failed)."""
    async with gate:
        try:
            done = await persist(write)
        except ConditionFailed:
            return "skipped"
        except (ItemBusy, Throttled) as exc:
            log.warning("tie_write_unwritten", reason=exc.detail)
            return "unwritten"
    return "skipped" if done is False else "done"
