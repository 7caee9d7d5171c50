"""Waiting before trying again: jittered exponential backoff, and operator writes retried while
DynamoDB turns them away for the moment.

A request has its deadline and answers 503 with ``Retry-After`` instead of waiting; operator work
(reconciling, building tie counters, seeding, snapshots, erasure) has no client to retry it, so
its writes wait and try again when DynamoDB throttles them or a submission's transaction holds
their item, and what still does not land is counted, never left half-done.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

from app.errors import ItemBusy, Throttled

T = TypeVar("T")

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
    transaction holds its item (``ItemBusy``), at most ``attempts`` times; the last refusal
    propagates. Any other error propagates at once."""
    for attempt in range(attempts):
        await wait_before(attempt, base_s=base_s, cap_s=cap_s)
        try:
            return await write()
        except (ItemBusy, Throttled):
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable: attempts >= 1")  # pragma: no cover
