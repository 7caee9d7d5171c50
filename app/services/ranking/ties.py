"""Building and repairing a board's tie counters (``app.domain.ties``) from a walk of its index,
for the reconciler, the seeder and a live slot build (``app.services.ranking.slot_builds``). A build keeps
one rule: the tie counts count exactly the rows marked with the slot's grain, and they are trusted
only once a whole build has sealed them (decision 0019, docs/operations.md).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

import structlog

from app.domain.keys import RankKey
from app.domain.ties import choose_cuts, choose_grain, mark_of, tie_counts
from app.errors import ConditionFailed, ItemBusy, Throttled
from app.services.ports import (
    CounterStore,
    IndexedKey,
    SlotAddress,
    StandingStore,
    StoredTies,
    TieItem,
)
from app.services.work import all_or_none, persist

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
    """Tie counter items whose stored value is not the walk's, at the cuts the slot has: drift
    (a chunk to cut now is counted in ``cuts``, not here)."""
    unmarked: int
    """Rows of the slot not marked where the slot's grain and cuts count them."""
    was_sealed: bool = True
    """The slot's last build had sealed its counts (a run that finds them unsealed builds)."""
    cuts: int = 0
    """Level-B chunks this run cut (holding more than the group: ties of one moment)."""
    repaired: int = 0
    marked: int = 0
    taken_back: int = 0
    """Rows counted whose mark did not land, taken back out of the counts."""
    skipped: int = 0
    """Items or rows that changed between the read and the write: left for the next run."""
    unwritten: int = 0
    """Items or rows DynamoDB kept turning away through every retry: left for the next run."""
    sealed: bool = False
    """This run sealed the slot's counts: every write landed."""

    @property
    def needs_build(self) -> bool:
        return bool(self.differences or self.unmarked or self.cuts or not self.was_sealed)


def _differing(wanted: Mapping[str, int], stored: Mapping[str, int]) -> list[str]:
    """The sort keys of the tie count items whose stored value is not the one wanted."""
    return sorted(sk for sk in set(wanted) | set(stored) if stored.get(sk, 0) != wanted.get(sk, 0))


@dataclass(frozen=True)
class TieWalk:
    """What a walk of one partition (a board's own id, unsharded) found of its crowded slots."""

    partition: str
    crowded: Mapping[tuple[int, int], list[IndexedKey]]
    """Each crowded slot's entries, in board order (pass only slots both of the caller's walks
    agree on)."""
    stored: Mapping[tuple[int, int], StoredTies] | None = None
    """The slots' tie counters as the caller read them between its walks, which every write is
    conditioned on; ``None`` (a seeder, under its lease: nothing else writes): read here."""


@dataclass(frozen=True)
class _Remark:
    """A row of the slot to mark again: where it is counted now (its mark), and where it will."""

    key: RankKey
    was: int | None
    mark: int


async def reconcile_ties(
    counters: CounterStore,
    standings: StandingStore,
    walk: TieWalk,
    *,
    group: int,
    apply: bool,
    expires_at: int | None,
) -> list[TieReport]:
    """Compare (and, with ``apply``, make) each crowded slot's tie counters with ``walk``; a slot
    is built where its counters or its rows' marks differ from the walk, or a chunk holds more
    than ``group`` entries, or its last build was not sealed (``_SlotBuild``)."""
    gate = asyncio.Semaphore(WRITE_CONCURRENCY)
    board_id = walk.partition
    reports = []
    for (bucket, slot), entries in sorted(walk.crowded.items()):
        if walk.stored is not None:
            read = walk.stored[(bucket, slot)]
        else:
            read = await counters.read_ties(board_id, bucket, slot)
        keys = [e.key for e in entries]
        grain = read.grain if read.grain is not None else choose_grain(keys, group=group)
        cuts = choose_cuts(keys, grain, group=group, cuts=read.cuts)
        marks = [mark_of(key, grain, cuts) for key in keys]
        wanted = tie_counts(keys, marks)
        differing = _differing(wanted, read.counts)
        unmarked = [
            _Remark(e.key, e.tie_mark, mark)
            for e, mark in zip(entries, marks, strict=True)
            if e.tie_mark != mark
        ]
        new_cuts = {chunk: n for chunk, n in cuts.items() if chunk not in read.cuts}
        # Drift is measured against the cuts the slot has: a chunk to cut now is no drift.
        drift, stale = differing, len(unmarked)
        if new_cuts:
            kept = [mark_of(key, grain, read.cuts) for key in keys]
            drift = _differing(tie_counts(keys, kept), read.counts)
            stale = sum(e.tie_mark != mark for e, mark in zip(entries, kept, strict=True))
        report = TieReport(
            bucket,
            slot,
            grain,
            len(entries),
            built=read.grain is None,
            differences=len(drift),
            unmarked=stale,
            was_sealed=read.sealed,
            cuts=len(new_cuts),
        )
        if apply and report.needs_build:
            build = _SlotBuild(
                counters, standings, (board_id, bucket, slot), expires_at=expires_at, gate=gate
            )
            report = await build.run(
                report,
                wanted={sk: (wanted.get(sk, 0), read.counts.get(sk)) for sk in differing},
                unmarked=unmarked,
                new_cuts=None if read.grain is not None and not new_cuts else new_cuts,
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
            unsealed=sum(not r.was_sealed for r in reports),
        )
    return reports


Written = Literal["done", "skipped", "unwritten"]

TAKE_BACK_TRIES = 5


class _SlotBuild:
    """One slot's build, keeping one rule: submissions count a marked row's move in its own
    transaction and an unmarked row's in none, so the counts are true once every row is marked.
    In order: the seal off; each count set conditioned on the value read between the caller's
    walks (a submission landing after that read fails the condition: skipped, never
    overwritten); each unmarked row marked (a mark that does not land has its count taken back);
    the grain and new cuts where there are any; last, only where every write landed, the seal.
    A build a submission overtakes leaves the slot an honest range until the next one
    (decision 0019). A write DynamoDB turns away for the moment is tried again after a backoff;
    one that never lands is reported unwritten."""

    def __init__(
        self,
        counters: CounterStore,
        standings: StandingStore,
        slot: SlotAddress,
        *,
        expires_at: int | None,
        gate: asyncio.Semaphore,
    ) -> None:
        self._counters = counters
        self._standings = standings
        self._slot = slot
        self._expires_at = expires_at
        self._gate = gate

    async def run(
        self,
        report: TieReport,
        *,
        wanted: Mapping[str, tuple[int, int | None]],
        unmarked: list[_Remark],
        new_cuts: Mapping[str, int] | None,
    ) -> TieReport:
        """Build the slot: ``wanted``, each count's value from the walk and the one read;
        ``new_cuts``, ``None`` where there is neither a grain to give nor a chunk to cut."""
        counters, expires_at = self._counters, self._expires_at
        board_id, bucket, slot = self._slot
        if report.was_sealed:
            unsealed = await self._gated(lambda: counters.unseal_ties(board_id, bucket, slot))
            if unsealed != "done":
                return replace(report, unwritten=1)
        repaired = await self._set_counts(wanted)
        marked = await all_or_none(
            *(
                self._gated(
                    functools.partial(self._standings.mark_tie, board_id, row.key, row.mark)
                )
                for row in unmarked
            )
        )
        results = list(repaired)
        not_marked = [row for row, done in zip(unmarked, marked, strict=True) if done != "done"]
        taken_back = 0
        if not_marked and all(r == "done" for r in repaired):
            # Only counts the build wrote whole are worth keeping true: any other the next one sets.
            back = await self._take_back(not_marked)
            taken_back = len(not_marked) if all(r == "done" for r in back) else 0
            results += back
        elif not_marked:
            results.append("skipped")
        if new_cuts is not None and all(r == "done" for r in results):
            results.append(
                await self._gated(
                    lambda: counters.set_grain(
                        board_id, bucket, slot, report.grain, cuts=new_cuts, expires_at=expires_at
                    )
                )
            )
        sealed = all(r == "done" for r in results)
        if sealed:
            sealed = (
                await self._gated(
                    lambda: counters.seal_ties(board_id, bucket, slot, expires_at=expires_at)
                )
                == "done"
            )
        return replace(
            report,
            repaired=repaired.count("done"),
            marked=marked.count("done"),
            taken_back=taken_back,
            skipped=results.count("skipped") + marked.count("skipped"),
            unwritten=results.count("unwritten") + marked.count("unwritten"),
            sealed=sealed,
        )

    async def _set_counts(self, values: Mapping[str, tuple[int, int | None]]) -> list[Written]:
        """Set each tie count item to its value, each conditioned on the one it was read at."""
        board_id, bucket, slot = self._slot
        return await all_or_none(
            *(
                self._gated(
                    functools.partial(
                        self._counters.set_counter,
                        board_id,
                        TieItem(bucket, slot, sk),
                        n=n,
                        expected=expected,
                        expires_at=self._expires_at,
                    )
                )
                for sk, (n, expected) in values.items()
            )
        )

    async def _take_back(self, rows: list[_Remark]) -> list[Written]:
        """Take rows the build counted at their new mark but could not mark back out of the
        slot's tie counts, and count them where their mark still says (a row that moved was
        taken out by its move): each item set to its value less the difference, conditioned on
        the value just read (a submission's change is never lost, and a resend is known as this
        write), read again where one lands between."""
        counted = tie_counts([r.key for r in rows], [r.mark for r in rows])
        kept = [r for r in rows if r.was is not None]
        still = tie_counts([r.key for r in kept], [r.was for r in kept if r.was is not None])
        pending = {
            sk: n
            for sk in set(counted) | set(still)
            if (n := counted.get(sk, 0) - still.get(sk, 0))
        }
        results: list[Written] = []
        for _ in range(TAKE_BACK_TRIES):
            read = await self._counters.read_ties(*self._slot)
            if any(read.counts.get(sk, 0) < n for sk, n in pending.items()):
                break  # not the counts the build wrote: the slot stays unsealed for the next one
            outcomes = await self._set_counts(
                {sk: (read.counts.get(sk, 0) - n, read.counts.get(sk)) for sk, n in pending.items()}
            )
            results += [o for o in outcomes if o != "skipped"]
            pending = {
                sk: n
                for (sk, n), o in zip(pending.items(), outcomes, strict=True)
                if o == "skipped"
            }
            if not pending:
                break
        return results + ["skipped"] * len(pending)

    async def _gated(self, write: Callable[[], Awaitable[object]]) -> Written:
        """One write, retried while DynamoDB turns it away for the moment: ``skipped`` where
        what it was conditioned on changed (it returned ``False``, or its condition failed)."""
        async with self._gate:
            try:
                done = await persist(write)
            except ConditionFailed:
                return "skipped"
            except (ItemBusy, Throttled) as exc:
                log.warning("tie_write_unwritten", reason=exc.detail)
                return "unwritten"
        return "skipped" if done is False else "done"
