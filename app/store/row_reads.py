"""Strongly consistent reads of single items that a task's requests ask for at once, sent together
as one BatchGetItem of up to 100 keys. A show's readers each read their own row (the one read a
rank from a task's mirror makes, docs/scale.md): one call for many costs the task's CPU once, not
once a reader. DynamoDB charges each item alike either way; a read asked alone is a GetItem, sent at the event
loop's next turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from app.store.client import Dynamo
from app.store.items import get_s, key

BATCH = 100
"""BatchGetItem's most keys a call."""

Item = Mapping[str, Any]


class RowReads:
    """``read(pk, sk)``: the item, or ``None``; asked together, read together. An error of the
    batch is every asker's (a throttle, keys left unprocessed past the retries)."""

    def __init__(self, dynamo: Dynamo, *, table: str, what: str) -> None:
        self._dynamo = dynamo
        self._table = table
        self._what = what
        self._pending: dict[tuple[str, str], list[asyncio.Future[Item | None]]] = {}
        self._scheduled = False
        self._running: set[asyncio.Task[None]] = set()

    async def read(self, pk: str, sk: str) -> Item | None:
        loop = asyncio.get_running_loop()
        found: asyncio.Future[Item | None] = loop.create_future()
        self._pending.setdefault((pk, sk), []).append(found)
        if len(self._pending) >= BATCH:
            self._send()
        elif not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._send)
        return await found

    def _send(self) -> None:
        pending, self._pending, self._scheduled = self._pending, {}, False
        if not pending:
            return
        task = asyncio.ensure_future(self._read(pending))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _read(
        self, pending: dict[tuple[str, str], list[asyncio.Future[Item | None]]]
    ) -> None:
        try:
            if len(pending) == 1:  # alone: GetItem, as light
                ((pk, sk),) = pending
                item = await self._dynamo.get_item(self._what, table=self._table, key=key(pk, sk))
                items = [] if item is None else [item]
            else:
                items = await self._dynamo.batch_get(
                    self._what, table=self._table, keys=[key(pk, sk) for pk, sk in pending]
                )
        except asyncio.CancelledError:  # the task stopping: so do its askers
            for waiting in pending.values():
                for found in waiting:
                    found.cancel()
            raise
        except Exception as exc:
            for waiting in pending.values():
                for found in waiting:
                    if not found.done():
                        found.set_exception(exc)
            return
        by_key = {(get_s(i, "playerId") or "", get_s(i, "leaderboardId") or ""): i for i in items}
        for at, waiting in pending.items():
            for found in waiting:
                if not found.done():
                    found.set_result(by_key.get(at))
