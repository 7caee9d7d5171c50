"""Running one request's DynamoDB calls together, so that none outlives the request."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


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
