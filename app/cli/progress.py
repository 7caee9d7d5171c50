"""Long operator work shows its progress on stderr, from start to end: a live line per stage
on a terminal, one line per stage elsewhere."""

from __future__ import annotations

import time
from typing import TextIO

from app.services.progress import Stage


def _stage_line(stage: Stage, total: int | None) -> str:
    if stage == "waiting":
        return f"waiting {total} s for submissions already under way"
    if stage == "writing rows":
        return f"writing {total} row{'' if total == 1 else 's'}"
    if stage == "recounting":
        return "recounting the board" + (f" (about {total} entries)" if total else "")
    if stage == "reading counters":
        return "reading the counters"
    return f"writing {total} counter item{'' if total == 1 else 's'}"


class ProgressReport:
    """Long work's progress on ``stream`` (stderr): a live line per stage on a terminal, else one
    line as each stage begins; and, at the end, how long it all took."""

    def __init__(self, stream: TextIO, *, live: bool | None = None) -> None:
        self._stream = stream
        self._live = stream.isatty() if live is None else live
        self._stage: Stage | None = None
        self._began = time.monotonic()
        self._drawn = 0.0

    def __call__(self, stage: Stage, done: int, total: int | None) -> None:
        line = _stage_line(stage, total)
        begins = stage != self._stage
        if begins:
            if self._live and self._stage is not None:
                print(file=self._stream)
            self._stage = stage
            if not self._live:
                print(f"{line} ...", file=self._stream, flush=True)
        if not self._live:
            return
        now = time.monotonic()
        if not begins and now - self._drawn < 0.1 and done != total:
            return  # a redraw at most ten times a second
        self._drawn = now
        if total:
            width = 30
            filled = width * min(done, total) // total
            bar = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"
        else:
            bar = f"{done}"
        print(f"\r{line}: {bar}", end="", file=self._stream, flush=True)

    def finish(self) -> None:
        if self._live and self._stage is not None:
            print(file=self._stream)
        took = time.monotonic() - self._began
        print(f"done in {took:.1f} s", file=self._stream, flush=True)
