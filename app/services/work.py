"""Running work: what operator work tells of its progress, calls run all or none, writes tried
again after a backoff, and work over every partition of a board.

A request has its deadline and answers 503 with ``Retry-After`` instead of waiting; operator work
(reconciling, building tie counters, seeding, snapshots, erasure) has no client to retry it, so
its writes wait and try again when DynamoDB throttles them or a submission's transaction holds
their item, and what still does not land is counted, never left half-done.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol, TypeVar, cast

from app.errors import ItemBusy, Throttled, TransactionCancelled

T = TypeVar("T")
U = TypeVar("U")

# ---- progress ----------------------------------------------------------------------------------

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


# ---- all or none -------------------------------------------------------------------------------


async def all_or_none(*calls: Awaitable[T]) -> list[T]:
    """``asyncio.gather``, except that when one call fails the others are cancelled and waited
    for before the failure is raised: none is left running after the request has answered (where it
    would go on retrying, and outlive the client it uses)."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def both(first: Awaitable[T], second: Awaitable[U]) -> tuple[T, U]:
    """``all_or_none`` of two calls of different types."""
    found = await all_or_none(first, second)
    return cast("T", found[0]), cast("U", found[1])


# ---- trying again ------------------------------------------------------------------------------

OPERATOR_ATTEMPTS = 8
"""Tries of one operator write: about 10 s of backoff in all before it is counted as unwritten."""


def backoff_s(attempt: int, *, base_s: float, cap_s: float) -> float:
    """How long to wait before try ``attempt`` (0: the first, at once): "full jitter", uniform
    up to ``base_s * 2**attempt``, at most ``cap_s``."""
    return random.uniform(0, min(cap_s, base_s * 2**attempt)) if attempt else 0.0


async def wait_before(attempt: int, *, base_s: float, cap_s: float) -> None:
    if attempt:
        await asyncio.sleep(backoff_s(attempt, base_s=base_s, cap_s=cap_s))


async def persist(
    write: Callable[[], Awaitable[T]],
    *,
    attempts: int = OPERATOR_ATTEMPTS,
    base_s: float = 0.05,
    cap_s: float = 3.0,
) -> T:
    """``write()``, tried again after a backoff while DynamoDB throttles it (``Throttled``) or a
    transaction holds its item (``ItemBusy``; a transaction of its own cancelled for a conflict,
    which applied nothing), at most ``attempts`` times; the last refusal propagates. Any other
    error propagates at once."""
    for attempt in range(attempts):
        await wait_before(attempt, base_s=base_s, cap_s=cap_s)
        try:
            return await write()
        except (ItemBusy, Throttled):
            if attempt == attempts - 1:
                raise
        except TransactionCancelled as cancelled:
            if cancelled.kind != "conflict":
                raise
            if attempt == attempts - 1:
                raise ItemBusy(f"{cancelled.detail}; try again", retry_after=1) from None
    raise AssertionError("unreachable: attempts >= 1")  # pragma: no cover


# ---- every partition of a board ---------------------------------------------------------------

PARTITIONS_AT_ONCE = 4
"""Partitions worked on at once: each walks its whole index partition, or reads its counters
(a coarse partition and one for each coarse bucket), with its own calls in flight."""


async def each_partition(
    partitions: Sequence[str],
    work: Callable[[int, str], Awaitable[T]],
    *,
    limit: int = PARTITIONS_AT_ONCE,
) -> list[T]:
    """``work(i, partition)`` for each partition, at most ``limit`` at once, the results in
    partition order. One failure cancels the others before it is raised (``all_or_none``)."""
    if len(partitions) == 1:
        return [await work(0, partitions[0])]
    gate = asyncio.Semaphore(limit)

    async def one(i: int, partition: str) -> T:
        async with gate:
            return await work(i, partition)

    return await all_or_none(*(one(i, p) for i, p in enumerate(partitions)))


def shared_progress(progress: Progress | None, parts: int) -> list[Progress | None]:
    """One ``Progress`` for each of ``parts`` partitions that work through a stage at once: each
    tells ``progress`` the stage's done summed over the partitions, and its size summed once
    every partition has told one (``None`` until then). One partition's is ``progress`` itself."""
    if progress is None or parts == 1:
        return [progress] * parts
    told = progress
    seen: dict[Stage, dict[int, tuple[int, int | None]]] = {}

    def part(i: int) -> Progress:
        def tell(stage: Stage, done: int, total: int | None) -> None:
            stage_seen = seen.setdefault(stage, {})
            stage_seen[i] = (done, total)
            sizes = [size for _, size in stage_seen.values()]
            known = len(stage_seen) == parts and all(size is not None for size in sizes)
            whole = sum(size or 0 for size in sizes) if known else None
            told(stage, sum(d for d, _ in stage_seen.values()), whole)

        return tell

    return [part(i) for i in range(parts)]
