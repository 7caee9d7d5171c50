"""Seeding: bulk-load a board from a file, under the board's lease, then rebuild its counters.

``parse_seed_text`` / ``parse_seed_file`` read and check a whole file (CSV with a header row, or JSON
lines) before anything is written: one bad row and nothing is, and every bad row is reported with
its line number. ``seed_board`` takes the board's seeding lease (so submissions to it get 409 and a
second seeder is refused), waits out the submissions that started before the lease, writes each row
by the board rule (only where it beats what the board holds), recounts the board from RankIndex and
rewrites its counters, then releases the lease. A seeder that fails or dies leaves its lease to
expire on its own and its rows uncounted; running the seed again (or the reconciler with apply)
restores the counters.
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import io
import json
import math
import os
import re
import socket
import time
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NoReturn, Protocol, TypeVar

import structlog

from app.domain.buckets import BucketLayout
from app.domain.clock import iso_ms, to_ms
from app.domain.keys import SCORE_CEILING, RankKey, is_valid_id
from app.domain.periods import Board, PeriodKind
from app.errors import BoardBeingSeeded, Conflict, InvalidInput, Unavailable
from app.services.reconcile import (
    BoardCount,
    CounterStore,
    Lease,
    RebuildOutcome,
    rebuild_counters,
    settled_count,
)
from app.settings import Settings

log = structlog.get_logger(__name__)

T = TypeVar("T")

SeedFormat = Literal["csv", "jsonl"]
RowOutcome = Literal["created", "replaced", "kept"]
"""What a row write did: a new entry, a better entry in place of a worse one, or nothing (the
board already held an equal or better entry for that player)."""

Progress = Callable[[int, int], None]
"""Called after each row is written: ``(rows done, rows to write)``."""

REQUIRED_FIELDS = ("playerId", "score", "achievedAt")
OPTIONAL_FIELDS = ("displayName", "country")
MAX_REPORTED_ERRORS = 100
"""Bad rows listed in full; past this the problem says how many more there were."""

_FORMAT_BY_SUFFIX: dict[str, SeedFormat] = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
_SCORE_TEXT = re.compile(r"^[0-9]{1,13}$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")
_DISPLAY_NAME = re.compile(r"^[^\x00-\x1f\x7f]{1,64}$")  # the API's rule for displayName


# ---- the file -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedRow:
    """One checked row of a seed file; ``line`` is where it starts in the file (1-based)."""

    line: int
    player_id: str
    score: int
    achieved_at_ms: int
    display_name: str | None = None
    country: str | None = None

    @property
    def key(self) -> RankKey:
        return RankKey(self.score, self.achieved_at_ms, self.player_id)


@dataclass(frozen=True)
class SeedFile:
    """A checked seed file for one board: one row per player (the best of the file's rows)."""

    board_id: str
    rows: list[SeedRow]
    rows_read: int
    """Data rows in the file, duplicates included."""
    duplicate_lines: list[int] = field(default_factory=list)
    """Lines dropped because the same player has a better (or equal and earlier) row in the file."""


def parse_seed_file(
    path: Path,
    *,
    board: Board,
    now: datetime,
    future_skew: timedelta = timedelta(seconds=5),
    file_format: SeedFormat | None = None,
) -> SeedFile:
    """Read and check a seed file; the format is ``file_format``, else the suffix (``.csv``,
    ``.jsonl``, ``.ndjson``), else the content. Raises ``InvalidInput`` (with every bad row's line)
    when any row is bad or the file cannot be read."""
    if file_format is None:
        file_format = _FORMAT_BY_SUFFIX.get(path.suffix.lower())
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{path} is not UTF-8 text: {exc}") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_seed_text(
        text, board=board, now=now, future_skew=future_skew, file_format=file_format
    )


def parse_seed_text(
    text: str,
    *,
    board: Board,
    now: datetime,
    future_skew: timedelta = timedelta(seconds=5),
    file_format: SeedFormat | None = None,
) -> SeedFile:
    """Check a seed file's text (CSV with a header row, or JSON lines; guessed from the first
    non-blank character when ``file_format`` is ``None``) for ``board``.

    Each row needs ``playerId`` (an id), ``score`` (an integer in ``[0, 10**12)``) and
    ``achievedAt`` (ISO 8601 with an offset, not ahead of ``now`` by more than ``future_skew``,
    inside the board's period); ``displayName`` (1..64 characters, no control characters) and
    ``country`` (ISO 3166-1 alpha-2, upper case) are optional. Seeding is exempt from the lateness
    window. A player on several rows keeps the best of them by the board rule (best score, then
    earliest ``achievedAt``, then the first in the file); the others are counted as duplicates.
    Raises ``InvalidInput`` with ``errors=[{"line", "field"?, "message"}]`` when any row is bad."""
    text = text.removeprefix("\ufeff")
    if file_format is None:
        file_format = "jsonl" if text.lstrip().startswith("{") else "csv"
    checker = _RowChecker(board=board, now_ms=to_ms(now), skew_ms=_ms(future_skew))
    records = _csv_records(text) if file_format == "csv" else _json_records(text)
    rows: list[SeedRow] = []
    read = 0
    for record in records:
        if record.fatal:
            checker.errors.append({"line": record.line, "message": record.problem})
            break
        read += 1
        row = checker.check(record)
        if row is not None:
            rows.append(row)
    errors = checker.errors
    if not errors and read == 0:
        errors.append({"line": 1, "message": "the file holds no rows"})
    if errors:
        listed = errors[:MAX_REPORTED_ERRORS]
        more = len(errors) - len(listed)
        lines = len({e["line"] for e in errors})
        raise InvalidInput(
            f"the seed file has {lines} bad line(s); nothing was written"
            + (f" (the first {len(listed)} problems are listed, {more} more)" if more else ""),
            errors=listed,
        )
    best: dict[str, SeedRow] = {}
    duplicates: list[int] = []
    for row in rows:
        held = best.get(row.player_id)
        if held is None or row.key.order < held.key.order:
            if held is not None:
                duplicates.append(held.line)
            best[row.player_id] = row
        else:
            duplicates.append(row.line)
    return SeedFile(board.board_id, list(best.values()), read, sorted(duplicates))


@dataclass(frozen=True)
class _Record:
    """One data line of a file: its fields, or what is wrong with the line as a whole (``fatal``:
    the file cannot be read past it)."""

    line: int
    fields: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None
    fatal: bool = False


def _csv_records(text: str) -> Iterator[_Record]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    header: list[str] | None = None
    ended = 0  # the line the previous record ended on
    while True:
        start = ended + 1
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield _Record(reader.line_num or start, problem=f"not valid CSV: {exc}", fatal=True)
            return
        ended = reader.line_num
        if not values or values == [""]:
            continue  # a blank line
        if header is None:
            header = [name.strip() for name in values]
            problem = _header_problem(header)
            if problem is not None:
                yield _Record(start, problem=problem, fatal=True)
                return
            continue
        if len(values) != len(header):
            yield _Record(start, problem=f"{len(values)} values for {len(header)} columns")
            continue
        yield _Record(
            start,
            {
                name: (value if value != "" else None)
                for name, value in zip(header, values, strict=True)
            },
        )


def _header_problem(header: list[str]) -> str | None:
    known = set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)
    missing = [name for name in REQUIRED_FIELDS if name not in header]
    unknown = [name for name in header if name not in known]
    repeated = sorted({name for name in header if header.count(name) > 1})
    problems = []
    if missing:
        problems.append(f"missing column(s) {', '.join(missing)}")
    if unknown:
        problems.append(f"unknown column(s) {', '.join(unknown)}")
    if repeated:
        problems.append(f"repeated column(s) {', '.join(repeated)}")
    if not problems:
        return None
    columns = ", ".join(REQUIRED_FIELDS + OPTIONAL_FIELDS)
    return f"header row: {'; '.join(problems)} (columns: {columns})"


def _json_records(text: str) -> Iterator[_Record]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield _Record(number, problem=f"not valid JSON: {exc.msg} (column {exc.colno})")
            continue
        if not isinstance(value, dict):
            yield _Record(number, problem="each line must be a JSON object")
            continue
        yield _Record(number, value)


class _RowChecker:
    """Checks one record at a time, collecting every problem with its line."""

    def __init__(self, *, board: Board, now_ms: int, skew_ms: int) -> None:
        self.errors: list[dict[str, Any]] = []
        self._now_ms = now_ms
        self._skew_ms = skew_ms
        self._board = board
        period = board.period
        end = period.end()
        self._window = (
            None
            if period.kind is PeriodKind.ALLTIME or end is None
            else (to_ms(period.start()), to_ms(end))
        )

    def _bad(self, line: int, name: str, message: str) -> None:
        entry: dict[str, Any] = {"line": line, "message": message}
        if name:
            entry["field"] = name
        self.errors.append(entry)

    def check(self, found: _Record) -> SeedRow | None:
        line, record = found.line, found.fields
        if found.problem is not None:
            self._bad(line, "", found.problem)
            return None
        before = len(self.errors)
        known = set(REQUIRED_FIELDS) | set(OPTIONAL_FIELDS)
        for name in sorted(set(record) - known):
            self._bad(line, str(name), "unknown field")
        player_id = self._player_id(line, record.get("playerId"))
        score = self._score(line, record.get("score"))
        achieved = self._achieved_at(line, record.get("achievedAt"))
        display_name = self._optional(
            line, record, "displayName", _DISPLAY_NAME, "1 to 64 characters, no control characters"
        )
        country = self._optional(
            line, record, "country", _COUNTRY, "two upper-case letters (ISO 3166-1 alpha-2)"
        )
        if len(self.errors) > before or player_id is None or score is None or achieved is None:
            return None
        return SeedRow(line, player_id, score, achieved, display_name, country)

    def _player_id(self, line: int, value: Any) -> str | None:
        if value is None:
            self._bad(line, "playerId", "required")
        elif not isinstance(value, str) or not is_valid_id(value):
            self._bad(line, "playerId", "must be 1 to 64 characters of A-Z a-z 0-9 _ . : -")
        else:
            return value
        return None

    def _score(self, line: int, value: Any) -> int | None:
        if value is None:
            self._bad(line, "score", "required")
            return None
        score: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            score = value
        elif isinstance(value, str) and _SCORE_TEXT.fullmatch(value.strip()):
            score = int(value.strip())
        if score is None or not 0 <= score < SCORE_CEILING:
            self._bad(line, "score", f"must be an integer in [0, {SCORE_CEILING})")
            return None
        return score

    def _achieved_at(self, line: int, value: Any) -> int | None:
        found = self._achieved_ms(value)
        if isinstance(found, str):
            self._bad(line, "achievedAt", found)
            return None
        return found

    def _achieved_ms(self, value: Any) -> int | str:
        """Epoch millis, or what is wrong with ``value``."""
        millis = _iso_ms(value)
        if isinstance(millis, str):
            return millis
        if millis < 0:
            return "before 1970"
        if millis - self._now_ms > self._skew_ms:
            return "in the future"
        if self._window is not None and not self._window[0] <= millis < self._window[1]:
            return (
                f"outside the board's period {self._board.period.display} "
                f"({iso_ms(self._window[0])} to {iso_ms(self._window[1])})"
            )
        return millis

    def _optional(
        self, line: int, record: dict[str, Any], name: str, pattern: re.Pattern[str], rule: str
    ) -> str | None:
        value = record.get(name)
        if value is None:
            return None
        if not isinstance(value, str) or not pattern.fullmatch(value):
            self._bad(line, name, f"must be {rule}")
            return None
        return value


def _iso_ms(value: Any) -> int | str:
    """An ISO 8601 time with an offset as epoch millis, or what is wrong with it."""
    if value is None:
        return "required"
    if not isinstance(value, str):
        return "must be an ISO 8601 time string"
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        return f"not an ISO 8601 time: {value!r}"
    if moment.tzinfo is None:
        return "must carry its UTC offset (for example a trailing Z)"
    return to_ms(moment.astimezone(UTC))


def _ms(span: timedelta) -> int:
    return int(span.total_seconds() * 1000)


# ---- the store ---------------------------------------------------------------------------------


class SeedingStore(CounterStore, Protocol):
    """What seeding needs from the store (``app.store.operations.BoardOperations``)."""

    async def acquire_lease(
        self, board_id: str, *, holder: str, expires_at: int, now_s: int
    ) -> Lease | None:
        """Take the board's lease if there is none or it has expired (``expiresAt <= now_s``):
        ``None`` when taken, else the lease in the way."""
        ...

    async def renew_lease(self, board_id: str, *, holder: str, expires_at: int, now_s: int) -> bool:
        """Extend the lease if ``holder`` still holds it and it has not expired."""
        ...

    async def release_lease(self, board_id: str, *, holder: str) -> bool:
        """Remove the lease if ``holder`` still holds it."""
        ...

    async def put_row_if_better(
        self, board_id: str, row: SeedRow, *, expires_at: int | None
    ) -> RowOutcome:
        """Write the row unless the board holds an equal or better entry for the player."""
        ...


# ---- seeding -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedPolicy:
    retention: timedelta
    """Day and week rows expire this long after their period ends."""
    layout: BucketLayout = field(default_factory=BucketLayout)
    lease_ttl_s: float = 60.0
    """How long the lease outlives a seeder that stops renewing it (one that died)."""
    renew_every_s: float | None = None
    """How often the lease is renewed while seeding runs; a third of the TTL by default."""
    grace_s: float = 10.0
    """The wait after taking the lease before writing: submissions that read the board free just
    before the lease was taken finish within their request deadline."""
    concurrency: int = 16
    """Row writes in flight at once."""
    settle_attempts: int = 10
    settle_delay_s: float = 1.0
    """Recounting waits for RankIndex to show every row written (it lags the table)."""

    def __post_init__(self) -> None:
        if self.lease_ttl_s < 1 or self.grace_s < 0 or self.concurrency < 1:
            raise ValueError("a seed policy needs lease_ttl_s >= 1, grace_s >= 0, concurrency >= 1")
        if self.renew_every_s is not None and not 0 < self.renew_every_s < self.lease_ttl_s:
            raise ValueError("renew_every_s must be positive and shorter than the lease TTL")

    @property
    def renew_interval_s(self) -> float:
        return self.renew_every_s if self.renew_every_s is not None else self.lease_ttl_s / 3

    @classmethod
    def from_settings(cls, settings: Settings, **overrides: Any) -> SeedPolicy:
        """The policy for these settings: the grace period is the submissions' request deadline."""
        values: dict[str, Any] = {
            "retention": settings.retention,
            "grace_s": settings.request_deadline_seconds,
        }
        values.update(overrides)
        return cls(**values)


@dataclass(frozen=True)
class SeedReport:
    board_id: str
    rows_read: int
    """Data rows in the file."""
    duplicates: int
    """Rows dropped because the file has a better row for the same player."""
    rows_written: int
    """Rows that created or improved an entry (``rows_created + rows_replaced``)."""
    rows_created: int
    rows_replaced: int
    rows_skipped: int
    """Rows not written: the board already held an equal or better entry for that player."""
    counters_rebuilt: int
    """Counter items set or deleted by the rebuild."""
    counter_conflicts: int
    """Counter items that changed under the lease (left for the reconciler); normally 0."""
    player_count: int
    """Entries on the board after seeding, as recounted."""
    lease_released: bool


async def seed_board(
    *,
    store: SeedingStore,
    board: Board,
    seed: SeedFile,
    policy: SeedPolicy,
    progress: Progress | None = None,
    holder: str | None = None,
    clock: Callable[[], float] = time.time,
) -> SeedReport:
    """Seed ``board`` with the checked rows of ``seed`` under the board's lease; see the module
    docstring. Raises ``BoardBeingSeeded`` when another seeder holds the lease, ``Conflict`` when
    the lease is lost mid-way, ``InvalidInput`` for a board past its retention. On any failure
    (including an exception from ``progress``, or cancellation) the lease is left to expire."""
    board_id = board.board_id
    if seed.board_id != board_id:
        raise InvalidInput(f"the seed file was checked for board {seed.board_id}, not {board_id}")
    expires = board.period.expires_at(policy.retention)
    if expires is not None and expires.timestamp() <= clock():
        raise InvalidInput(f"board {board_id} is past its retention; its rows would never show")
    keeper = _LeaseKeeper(
        store, board_id, holder=holder or _default_holder(), policy=policy, clock=clock
    )
    await keeper.acquire()
    log.info(
        "seeding_started",
        board=board_id,
        holder=keeper.holder,
        rows=len(seed.rows),
        lease_expires_at=keeper.expires_at,
    )
    try:
        tally, count, rebuilt = await _run_under_lease(
            keeper,
            _fill(
                store=store,
                board=board,
                seed=seed,
                policy=policy,
                progress=progress,
                expires_at=None if expires is None else int(expires.timestamp()),
            ),
        )
    except BaseException as exc:
        log.warning(
            "seeding_stopped",
            board=board_id,
            holder=keeper.holder,
            error=repr(exc),
            lease_expires_at=keeper.expires_at,
            recovery="the lease expires on its own; seed again (or reconcile --apply) after it",
        )
        raise
    released = await keeper.release()
    report = SeedReport(
        board_id=board_id,
        rows_read=seed.rows_read,
        duplicates=len(seed.duplicate_lines),
        rows_written=tally["created"] + tally["replaced"],
        rows_created=tally["created"],
        rows_replaced=tally["replaced"],
        rows_skipped=tally["kept"],
        counters_rebuilt=rebuilt.written,
        counter_conflicts=rebuilt.conflicts,
        player_count=count.total,
        lease_released=released,
    )
    log.info("seeding_finished", **asdict(report))
    return report


async def _fill(
    *,
    store: SeedingStore,
    board: Board,
    seed: SeedFile,
    policy: SeedPolicy,
    progress: Progress | None,
    expires_at: int | None,
) -> tuple[Counter[RowOutcome], BoardCount, RebuildOutcome]:
    """Everything done under the lease: the grace period, the rows, the recount, the counters."""
    if policy.grace_s > 0:
        await asyncio.sleep(policy.grace_s)
    tally, written = await _write_rows(
        store, board.board_id, seed.rows, policy=policy, progress=progress, expires_at=expires_at
    )
    count = await settled_count(
        store,
        board.board_id,
        layout=policy.layout,
        expect=written,
        attempts=policy.settle_attempts,
        delay_s=policy.settle_delay_s,
    )
    rebuilt = await rebuild_counters(
        store=store, board=board, count=count, layout=policy.layout, retention=policy.retention
    )
    return tally, count, rebuilt


async def _write_rows(
    store: SeedingStore,
    board_id: str,
    rows: Sequence[SeedRow],
    *,
    policy: SeedPolicy,
    progress: Progress | None,
    expires_at: int | None,
) -> tuple[Counter[RowOutcome], list[str]]:
    """Write the rows, ``policy.concurrency`` at a time; the outcomes and the keys now on the board."""
    tally: Counter[RowOutcome] = Counter()
    written: list[str] = []
    pending = iter(rows)  # shared by the workers: each takes the next row when it is free
    total = len(rows)
    if progress is not None:
        progress(0, total)

    async def worker() -> None:
        for row in pending:
            outcome = await store.put_row_if_better(board_id, row, expires_at=expires_at)
            tally[outcome] += 1
            if outcome != "kept":
                written.append(row.key.encode())
            if progress is not None:
                progress(tally.total(), total)

    workers = [asyncio.create_task(worker()) for _ in range(min(policy.concurrency, total))]
    try:
        await asyncio.gather(*workers)
    finally:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return tally, written


class _LeaseKeeper:
    """Takes, renews and releases one board's lease for one seeder."""

    def __init__(
        self,
        store: SeedingStore,
        board_id: str,
        *,
        holder: str,
        policy: SeedPolicy,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._board_id = board_id
        self.holder = holder
        self._policy = policy
        self._clock = clock
        self.expires_at = 0

    def _now_s(self) -> int:
        return math.floor(self._clock())

    def _next_expiry(self) -> int:
        return math.ceil(self._clock() + self._policy.lease_ttl_s)

    async def acquire(self) -> None:
        expires_at = self._next_expiry()
        held = await self._store.acquire_lease(
            self._board_id, holder=self.holder, expires_at=expires_at, now_s=self._now_s()
        )
        if held is not None:
            wait = max(1, held.expires_at - self._now_s())
            raise BoardBeingSeeded(
                f"board {self._board_id} is already being seeded by {held.holder} (lease until "
                f"{iso_ms(held.expires_at * 1000)}); a second seeder is refused: retry after it "
                "ends or its lease expires",
                retry_after=wait,
            )
        self.expires_at = expires_at

    async def keep(self) -> NoReturn:
        """Renew the lease every ``renew_interval_s``; raise ``Conflict`` once it is lost (taken
        over, removed) or about to lapse because renewals keep failing."""
        interval = self._policy.renew_interval_s
        delay = interval
        while True:
            await asyncio.sleep(delay)
            expires_at = self._next_expiry()
            try:
                renewed = await self._store.renew_lease(
                    self._board_id, holder=self.holder, expires_at=expires_at, now_s=self._now_s()
                )
            except Unavailable as exc:
                if self._clock() + interval / 2 >= self.expires_at:
                    raise Conflict(
                        f"could not renew the seeding lease on {self._board_id} before it lapsed; "
                        "seeding stopped: seed again once the store answers",
                        retry_after=max(1, math.ceil(self._policy.lease_ttl_s)),
                    ) from exc
                log.warning("lease_renewal_failed", board=self._board_id, error=str(exc))
                delay = min(interval, 1.0)
                continue
            if not renewed:
                raise Conflict(
                    f"lost the seeding lease on {self._board_id} (it lapsed or was taken over); "
                    "seeding stopped: check who holds it, then seed again",
                    retry_after=max(1, math.ceil(self._policy.lease_ttl_s)),
                )
            self.expires_at = expires_at
            delay = interval

    async def release(self) -> bool:
        released = await self._store.release_lease(self._board_id, holder=self.holder)
        if not released:
            log.warning("lease_not_released", board=self._board_id, holder=self.holder)
        return released


async def _run_under_lease(keeper: _LeaseKeeper, work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` while ``keeper`` renews the lease; a lost lease cancels the work and raises."""
    work_task = asyncio.create_task(work)
    keep_task = asyncio.create_task(keeper.keep())
    try:
        await asyncio.wait({work_task, keep_task}, return_when=asyncio.FIRST_COMPLETED)
        if not work_task.done():
            work_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await work_task
            keep_task.result()  # raises why the lease was lost
        return work_task.result()
    finally:
        for task in (work_task, keep_task):
            task.cancel()
        await asyncio.gather(work_task, keep_task, return_exceptions=True)


def _default_holder() -> str:
    """Who holds a lease, for the operator who finds it: host, process, and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
