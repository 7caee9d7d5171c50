"""How long operator work (seeding, reconciling) tells how far it has got, from start to end: the
stage it is in, what it has done of that stage, and the stage's size where it is known ahead."""

from __future__ import annotations

from typing import Literal, Protocol

Stage = Literal[
    "waiting",
    "holding boards",
    "writing rows",
    "recounting",
    "reading counters",
    "writing counters",
    "reconciling boards",
    "snapshotting boards",
]
"""``waiting``: seconds of a seed's grace period; ``holding boards``: seconds of a ranking
change's grace period; ``writing rows``: rows of a seed file;
``recounting``: entries read from the index in one pass (the size is the previous pass's, if
any); ``reading counters``: counter items read; ``writing counters``: counter items written;
``reconciling boards``: live boards reconciled (``reconcile --live``); ``snapshotting boards``:
closed boards snapshotted (``snapshot --closed-periods``)."""


class Progress(Protocol):
    def __call__(self, stage: Stage, done: int, total: int | None) -> None:
        """Called at the start of each stage and as it goes; ``total`` is ``None`` when the
        stage's size is not known ahead."""
