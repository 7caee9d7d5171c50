"""A lagging view of the embedded backend: what DynamoDB's eventually consistent reads and its
global secondary indexes show, where each write arrives up to ``lag_s`` late.

moto answers every read from the table as it is this instant. DynamoDB does not: an eventually
consistent read may miss a write of the last second, and RankIndex is updated after the write
that changes it. ``LaggingView`` keeps a shadow copy of each table in the same moto server; a
write's resulting items are read back at once and put into the shadow after a random delay (per
item, in the order the item changed), and the reads DynamoDB answers lagging are answered from
the shadow (``tests.faults`` routes them here).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import random
import ssl
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

_TARGET = "DynamoDB_20120810."
TLS = ssl.create_default_context()
"""Built once, for every client of the tests' own calls: a client building its own loads the CA
bundle each time (~20 ms of CPU a call, most of a faithful run's)."""
SHADOW_SUFFIX = "--lagging"


def shadow_of(table: str) -> str:
    return table + SHADOW_SUFFIX


class BackendRefused(Exception):
    """The embedded backend refused one of the view's own calls (a bug of the view)."""


@dataclass
class _Pending:
    due: float
    seq: int
    table: str
    key: dict[str, Any]
    image: dict[str, Any] | None
    """The item as the write left it; ``None``: the write removed it."""

    def __lt__(self, other: _Pending) -> bool:
        return (self.due, self.seq) < (other.due, other.seq)


@dataclass
class LaggingView:
    endpoint: str
    region: str
    lag_s: float
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    _keys: dict[str, list[str]] = field(default_factory=dict)
    _pending: list[_Pending] = field(default_factory=list)
    _latest: dict[str, int] = field(default_factory=dict)
    """Per item, the capture that was started last: an older capture arriving later is dropped."""
    _due: dict[str, float] = field(default_factory=dict)
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    _lock: asyncio.Lock | None = None
    _create_lock: asyncio.Lock | None = None
    _lock_loop: asyncio.AbstractEventLoop | None = None
    lagged_reads: int = 0
    """Reads answered while some change was still held back from the shadow."""

    # ---- the backend, called directly ----------------------------------------------------------

    async def call(self, operation: str, body: Mapping[str, Any]) -> dict[str, Any]:
        status, answer = await self.send(operation, body)
        if status != 200:
            raise BackendRefused(f"{operation}: {answer}")
        return answer

    async def send(self, operation: str, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        headers = {
            "X-Amz-Target": _TARGET + operation,
            "Content-Type": "application/x-amz-json-1.0",
            # moto reads the region from the credential scope and checks no signature.
            "Authorization": (
                f"AWS4-HMAC-SHA256 Credential=local/20260101/{self.region}/dynamodb/aws4_request, "
                "SignedHeaders=host, Signature=0"
            ),
        }
        async with httpx.AsyncClient(timeout=120, verify=TLS) as http:
            sent = await http.post(self.endpoint, headers=headers, content=json.dumps(body))
        answer: dict[str, Any] = sent.json() if sent.content else {}
        return sent.status_code, answer

    # ---- keeping the shadow ----------------------------------------------------------------------

    def _locked(self) -> asyncio.Lock:
        """Changes reach the shadow one catch-up at a time, in order."""
        self._bind()
        assert self._lock is not None
        return self._lock

    def _creating(self) -> asyncio.Lock:
        """One creation of a shadow at a time."""
        self._bind()
        assert self._create_lock is not None
        return self._create_lock

    def _bind(self) -> None:
        loop = asyncio.get_running_loop()
        if self._lock_loop is not loop:
            self._lock, self._create_lock, self._lock_loop = asyncio.Lock(), asyncio.Lock(), loop

    async def key_names(self, table: str) -> list[str]:
        """The table's key attributes, creating its shadow (a copy of it now) the first time."""
        if table not in self._keys:
            async with self._creating():
                if table not in self._keys:  # another read or write may have created it
                    described = (await self.call("DescribeTable", {"TableName": table}))["Table"]
                    await self._create_shadow(described)
                    self._keys[table] = [k["AttributeName"] for k in described["KeySchema"]]
        return self._keys[table]

    async def _create_shadow(self, described: Mapping[str, Any]) -> None:
        table = described["TableName"]
        spec: dict[str, Any] = {
            "TableName": shadow_of(table),
            "BillingMode": "PAY_PER_REQUEST",
            "AttributeDefinitions": described["AttributeDefinitions"],
            "KeySchema": described["KeySchema"],
        }
        indexes = [
            {k: index[k] for k in ("IndexName", "KeySchema", "Projection")}
            for index in described.get("GlobalSecondaryIndexes", [])
        ]
        if indexes:
            spec["GlobalSecondaryIndexes"] = indexes
        await self.call("CreateTable", spec)
        scan: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
        items: list[dict[str, Any]] = []
        while True:
            page = await self.call("Scan", scan)
            items.extend(page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        await self._write_shadow(table, [(None, item) for item in items])

    async def dropped(self, table: str) -> None:
        """The table was deleted: so is its shadow."""
        if self._keys.pop(table, None) is not None:
            await self.send("DeleteTable", {"TableName": shadow_of(table)})
        self._pending = [p for p in self._pending if p.table != table]
        heapq.heapify(self._pending)

    def _item_id(self, table: str, key: Mapping[str, Any]) -> str:
        return table + json.dumps(key, sort_keys=True)

    async def wrote(self, table: str, keys: Sequence[Mapping[str, Any]]) -> None:
        """Items of ``table`` a write just changed: read them as they are now, and let each reach
        the shadow after a random delay, after every earlier change of the same item."""
        names = await self.key_names(table)
        keys = [{n: key[n] for n in names} for key in keys]
        unique = list({self._item_id(table, k): k for k in keys}.values())
        seq = next(self._seq)
        images: dict[str, dict[str, Any]] = {}
        for first in range(0, len(unique), 100):
            chunk = unique[first : first + 100]
            answer = await self.call(
                "BatchGetItem",
                {"RequestItems": {table: {"Keys": chunk, "ConsistentRead": True}}},
            )
            for item in answer.get("Responses", {}).get(table, []):
                images[self._item_id(table, {n: item[n] for n in names})] = item
        now = time.monotonic()
        for key in unique:
            item_id = self._item_id(table, key)
            if self._latest.get(item_id, -1) > seq:
                continue
            self._latest[item_id] = seq
            due = max(now + self.rng.uniform(0, self.lag_s), self._due.get(item_id, 0.0))
            self._due[item_id] = due
            heapq.heappush(self._pending, _Pending(due, seq, table, dict(key), images.get(item_id)))

    async def catch_up(self) -> None:
        """Put into the shadow every change whose time has come, in order."""
        async with self._locked():
            now = time.monotonic()
            ready: dict[str, dict[str, tuple[Mapping[str, Any], dict[str, Any] | None]]] = {}
            while self._pending and self._pending[0].due <= now:
                change = heapq.heappop(self._pending)
                ready.setdefault(change.table, {})[self._item_id(change.table, change.key)] = (
                    change.key,
                    change.image,
                )
            if self._pending:
                self.lagged_reads += 1
            for table, changes in ready.items():
                await self._write_shadow(table, list(changes.values()))

    async def settle(self) -> None:
        """Every change held back reaches the shadow now: the index has caught up."""
        for change in self._pending:
            change.due = 0.0
        self._due.clear()
        await self.catch_up()

    async def _write_shadow(
        self, table: str, changes: Iterable[tuple[Mapping[str, Any] | None, dict[str, Any] | None]]
    ) -> None:
        requests: list[dict[str, Any]] = [
            {"PutRequest": {"Item": image}}
            if image is not None
            else {"DeleteRequest": {"Key": key}}
            for key, image in changes
        ]
        for first in range(0, len(requests), 25):
            pending: dict[str, Any] = {shadow_of(table): requests[first : first + 25]}
            while pending:
                answer = await self.call("BatchWriteItem", {"RequestItems": pending})
                pending = answer.get("UnprocessedItems") or {}

    # ---- answering lagging reads ----------------------------------------------------------------

    async def read(self, operation: str, body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:
        """Answer a GetItem, Query, Scan or BatchGetItem as the shadow holds it now."""
        tables = list(body["RequestItems"]) if operation == "BatchGetItem" else [body["TableName"]]
        for table in tables:
            await self.key_names(table)
        await self.catch_up()
        rewritten = dict(body)
        if operation == "BatchGetItem":
            rewritten["RequestItems"] = {
                shadow_of(t): request for t, request in body["RequestItems"].items()
            }
        else:
            rewritten["TableName"] = shadow_of(body["TableName"])
        status, answer = await self.send(operation, rewritten)
        return status, _unshadowed(answer)


def _unshadowed(value: Any) -> Any:
    """The shadow's answer with the shadow's table names put back to the table's."""
    if isinstance(value, dict):
        return {
            (k.removesuffix(SHADOW_SUFFIX) if isinstance(k, str) else k): _unshadowed(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_unshadowed(v) for v in value]
    if isinstance(value, str) and value.endswith(SHADOW_SUFFIX):
        return value.removesuffix(SHADOW_SUFFIX)
    return value
