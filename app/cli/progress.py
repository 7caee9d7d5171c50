"""Long operator work shows its progress on stderr, from start to end: a live line per stage
on a terminal; elsewhere (a log, a pipe, a CI job) a line as each stage begins and another with
its counts every few seconds, so a long stage is never silent."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TextIO

from app.services.work import Stage


def _plural(n: int | None, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _stage_line(stage: Stage, total: int | None) -> str:
    lines: dict[Stage, str] = {
        "waiting": f"waiting {total} s for submissions already under way",
        "holding boards": f"holding the variant's boards {total} s while submissions under the "
        "old order, operator or shards finish",
        "writing rows": f"writing {_plural(total, 'row')}",
        "recounting": "recounting the board" + (f" (about {total} entries)" if total else ""),
        "reading counters": "reading the counters",
        "writing counters": f"writing {_plural(total, 'counter item')}",
        "reconciling boards": f"reconciling {_plural(total, 'live board')}",
        "snapshotting boards": f"snapshotting {_plural(total, 'closed board')}",
    }
    return lines[stage]


def _counts(done: int, total: int | None) -> str:
    return f"{done}/{total}" if total else f"{done}"


class ProgressReport:
    """Long work's progress on ``stream`` (stderr): a live line per stage on a terminal, else a
    line as each stage begins and one with its counts every ``every_s`` seconds while it runs;
    and, at the end, how long it all took."""

    def __init__(
        self,
        stream: TextIO,
        *,
        live: bool | None = None,
        every_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._live = stream.isatty() if live is None else live
        self._every_s = every_s
        self._clock = clock
        self._stage: Stage | None = None
        self._began = clock()
        self._drawn = self._began
        self._stage_began = self._began
        self._line = ""
        self._done = 0
        self._total: int | None = None

    def __call__(self, stage: Stage, done: int, total: int | None) -> None:
        line = _stage_line(stage, total)
        begins = stage != self._stage
        now = self._clock()
        self._line, self._done, self._total = line, done, total
        if begins:
            if self._live and self._stage is not None:
                print(file=self._stream)
            self._stage = stage
            self._stage_began = now
            if not self._live:
                self._drawn = now
                print(f"{line} ...", file=self._stream, flush=True)
        if not self._live:
            self.tick()
            return
        if not begins and now - self._drawn < 0.1 and done != total:
            return  # a redraw at most ten times a second
        self._drawn = now
        if total:
            width = 30
            filled = width * min(done, total) // total
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
        else:
            bar = _counts(done, total)
        print(f"\r{line}: {bar}", end="", file=self._stream, flush=True)

    def tick(self) -> None:
        """Off a terminal, the stage's counts so far, if the last line is ``every_s`` old: called
        as the work reports, and by ``ticking`` while one long call keeps it from reporting."""
        now = self._clock()
        if self._live or self._stage is None or now - self._drawn < self._every_s:
            return
        self._drawn = now
        print(
            f"{self._line}: {_counts(self._done, self._total)} so far "
            f"({now - self._stage_began:.0f} s)",
            file=self._stream,
            flush=True,
        )

    @contextlib.asynccontextmanager
    async def ticking(self) -> AsyncIterator[None]:
        """While the block runs, ``tick`` every second."""

        async def tick_on() -> None:
            while True:
                await asyncio.sleep(1)
                self.tick()

        ticks = asyncio.create_task(tick_on())
        try:
            yield
        finally:
            ticks.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticks

    def finish(self) -> None:
        """How long it all took, where any stage was told (a quick act tells nothing)."""
        if self._stage is None:
            return
        if self._live:
            print(file=self._stream)
        took = self._clock() - self._began
        print(f"done in {took:.1f} s", file=self._stream, flush=True)
