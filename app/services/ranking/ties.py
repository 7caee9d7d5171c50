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
from app.services.ports import CounterStore, IndexedKey, StandingStore, StoredTies, TieItem
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
class _Remark:
    """A row of the slot to mark again: where it is counted now (its mark), and where it will."""

    key: RankKey
    was: int | None
    mark: int


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
            report = await _build(
                counters,
                standings,
                report,
                board_id=board_id,
                wanted={sk: (wanted.get(sk, 0), read.counts.get(sk)) for sk in differing},
                unmarked=unmarked,
                new_cuts=None if read.grain is not None and not new_cuts else new_cuts,
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
            unsealed=sum(not r.was_sealed for r in reports),
        )
    return reports


async def _build(
    counters: CounterStore,
    standings: StandingStore,
    report: TieReport,
    *,
    board_id: str,
    wanted: dict[str, tuple[int, int | None]],
    unmarked: list[_Remark],
    new_cuts: Mapping[str, int] | None,
    expires_at: int | None,
    gate: asyncio.Semaphore,
) -> TieReport:
    """Build one slot: each count (``wanted``: the walk's value and the one read), each row's
    mark (and the count of a row whose mark did not land taken back), the grain where it had none
    and the new cuts (``new_cuts``, ``None`` where there is neither), and the seal where every
    one of them landed.

    Submissions keep the rule (a marked row's move changes its counts in its own transaction; an
    unmarked row's touches none), so the counts add up to the slot's fine counter exactly when
    every row in the slot is marked, and are then true. The build keeps it too:

    1. it takes the slot's seal off (rank reads give the slot's range until it is back on);
    2. the grain: the slot's own if it has one (a grain never changes, so rows counted at it stay
       right), else the largest that leaves no chunk over ``group`` entries;
    3. each level-A and level-B count, set conditioned on the value read between the caller's two
       walks, so a submission landing after that read either shows in the second walk (the slot
       is then not built) or has changed the value read (the write fails its condition:
       skipped), and is never overwritten;
    4. every row of the slot not yet marked with the grain is marked (and its version bumped, so
       a submission that read it before is retried, reading the mark); a row whose mark does not
       land (it moved since the walk, or DynamoDB kept refusing) is counted but unmarked, so its
       count is taken back out;
    5. the slot's grain item, if it had none: from then on submissions count the slot's rows in
       its tie counters as they change them;
    6. last, only where every write above landed, the seal.

    So a build that a submission overtakes at any point leaves an honest range for that slot
    until the next build, never a wrong rank. A write DynamoDB turns away for the moment
    (throttled, or a transaction holding the item) is tried again after a backoff; one that never
    lands is reported as unwritten."""
    bucket, slot, grain = report.bucket, report.slot, report.grain
    if report.was_sealed:
        unsealed = await _gated(gate, lambda: counters.unseal_ties(board_id, bucket, slot))
        if unsealed != "done":
            return replace(report, unwritten=1)
    repaired = await _set_counts(
        counters, board_id, bucket, slot, wanted, gate, expires_at=expires_at
    )
    marked = await all_or_none(
        *(
            _gated(gate, functools.partial(standings.mark_tie, board_id, row.key, row.mark))
            for row in unmarked
        )
    )
    results = list(repaired)
    not_marked = [row for row, done in zip(unmarked, marked, strict=True) if done != "done"]
    taken_back = 0
    if not_marked and all(r == "done" for r in repaired):
        # Only counts the build wrote whole are worth keeping true: any other the next one sets.
        back = await _take_back(
            counters, board_id, bucket, slot, not_marked, gate, expires_at=expires_at
        )
        taken_back = len(not_marked) if all(r == "done" for r in back) else 0
        results += back
    elif not_marked:
        results.append("skipped")
    if new_cuts is not None and all(r == "done" for r in results):
        results.append(
            await _gated(
                gate,
                lambda: counters.set_grain(
                    board_id, bucket, slot, grain, cuts=new_cuts, expires_at=expires_at
                ),
            )
        )
    sealed = all(r == "done" for r in results)
    if sealed:
        sealed = (
            await _gated(
                gate, lambda: counters.seal_ties(board_id, bucket, slot, expires_at=expires_at)
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


async def _set_counts(
    counters: CounterStore,
    board_id: str,
    bucket: int,
    slot: int,
    values: Mapping[str, tuple[int, int | None]],
    gate: asyncio.Semaphore,
    *,
    expires_at: int | None,
) -> list[Written]:
    """Set each tie count item to its value, each conditioned on the one it was read at."""
    return await all_or_none(
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
            for sk, (n, expected) in values.items()
        )
    )


TAKE_BACK_TRIES = 5


async def _take_back(
    counters: CounterStore,
    board_id: str,
    bucket: int,
    slot: int,
    rows: list[_Remark],
    gate: asyncio.Semaphore,
    *,
    expires_at: int | None,
) -> list[Written]:
    """Take rows the build counted at their new mark but could not mark back out of the slot's
    tie counts, and count them where their mark still says (where a row that moved was taken out
    by its move): each item set to its value less the difference, conditioned on the value just
    read (so a submission's change is never lost, and a resend is known as this write), read
    again where one lands between."""
    counted = tie_counts([r.key for r in rows], [r.mark for r in rows])
    kept = [r for r in rows if r.was is not None]
    still = tie_counts([r.key for r in kept], [r.was for r in kept if r.was is not None])
    pending = {
        sk: n for sk in set(counted) | set(still) if (n := counted.get(sk, 0) - still.get(sk, 0))
    }
    results: list[Written] = []
    for _ in range(TAKE_BACK_TRIES):
        read = await counters.read_ties(board_id, bucket, slot)
        if any(read.counts.get(sk, 0) < n for sk, n in pending.items()):
            break  # not the counts the build wrote: the slot stays unsealed for the next one
        outcomes = await _set_counts(
            counters,
            board_id,
            bucket,
            slot,
            {sk: (read.counts.get(sk, 0) - n, read.counts.get(sk)) for sk, n in pending.items()},
            gate,
            expires_at=expires_at,
        )
        results += [o for o in outcomes if o != "skipped"]
        pending = {
            sk: n for (sk, n), o in zip(pending.items(), outcomes, strict=True) if o == "skipped"
        }
        if not pending:
            break
    return results + ["skipped"] * len(pending)


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
