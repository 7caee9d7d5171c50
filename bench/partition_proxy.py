"""A proxy in front of the embedded backend that throttles each partition key as DynamoDB does.

moto serves every call it is sent. DynamoDB serves at most 1,000 write units and 3,000 read units
a second per partition key, of the table and of each index alike, and answers past that in its
own wire shapes: ``ThrottlingException`` with its ``ThrottlingReasons`` for a plain call, a
transaction cancelled with a ``ThrottlingError`` reason on the item it throttled (which the SDKs
do not retry), the throttled keys of a BatchGetItem left in ``UnprocessedKeys``. This proxy does
that, with every rate scaled by ``scale``, so that a run whose offered load is scaled by the same
factor meets the walls a full-size run would meet, at a rate the embedded backend can serve.

Each partition key has a bucket of a second's worth of units, refilled at its rate. A write is
charged before it is sent, by DynamoDB's published rules (``bench.harness.units``): each item
by its size, twice inside a transaction, and its RankIndex entry (1 unit a KB, on the index
partition named by the item's ``leaderboardId``) where the write changes what the index holds,
which the proxy knows from every index entry it has seen written. A write whose keys lack the
units is answered throttled and sent nowhere. A read is charged after it is answered, by the
bytes it returned (a read cannot know its size before), and refused while its key's bucket is
spent. What is not modelled: a partition split for heat (DynamoDB's is undocumented in rate, and
does not help keys that stay hot), and the table's own quota.

    python3 tools/uv.py run --frozen --all-groups python -m bench.hot_round --help
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from app.store.tables import RANK_INDEX, RANK_INDEX_PROJECTED
from bench.harness import units

PARTITION_WRITE_UNITS = 1_000
PARTITION_READ_UNITS = 3_000
_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_THROTTLED_MESSAGE = (
    "Throughput exceeds the current capacity of your table or index. DynamoDB is automatically "
    "scaling your table or index so please try again shortly."
)
_KEY_CONDITION = re.compile(r"^\s*(#?\w+)\s*=\s*(:\w+)")

Scope = Mapping[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class Bucket:
    """A partition key's units: ``rate`` a second, at most a second's worth banked."""

    def __init__(self, rate: float, clock: Callable[[], float]) -> None:
        self.rate = rate
        self._clock = clock
        self.tokens = rate
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.rate, self.tokens + (now - self._at) * self.rate)
        self._at = now

    def has(self, amount: float) -> bool:
        self._refill()
        return self.tokens >= amount

    def take(self, amount: float) -> None:
        self._refill()
        self.tokens -= amount


@dataclass
class ProxyStats:
    forwarded: Counter[str] = field(default_factory=Counter)
    """Calls sent on, by operation."""
    throttled: Counter[str] = field(default_factory=Counter)
    """Calls (or batch keys) answered throttled, by operation and reason."""
    write_units: dict[str, float] = field(default_factory=dict)
    """Write units charged, by the kind of partition key (table, index)."""
    hottest: dict[str, float] = field(default_factory=dict)
    """The most write units any one key of each kind took in one second."""
    throttled_keys: Counter[str] = field(default_factory=Counter)
    """Throttled calls by the partition key that was short."""


Charge = tuple[str, str, float]
"""(``table`` or ``index``, partition key value, units)."""


class PartitionProxy:
    """The ASGI app: DynamoDB's JSON protocol in, moto's answers (or DynamoDB's throttling) out.
    ``enabled`` false: every call is sent on and charged nothing (to set a board up)."""

    def __init__(
        self, upstream: str, *, scale: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.scale = scale
        self.enabled = True
        self.stats = ProxyStats()
        self._clock = clock
        self._buckets: dict[tuple[str, str, str], Bucket] = {}
        self._entries: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        """What RankIndex holds of each row the proxy has seen written: its key and projection."""
        self._second: dict[tuple[str, str], tuple[int, float]] = {}
        self._client = httpx.AsyncClient(timeout=120)

    async def aclose(self) -> None:
        await self._client.aclose()

    # ---- the buckets --------------------------------------------------------------------------

    def _bucket(self, kind: str, key: str, direction: str) -> Bucket:
        found = self._buckets.get((direction, kind, key))
        if found is None:
            rate = PARTITION_WRITE_UNITS if direction == "write" else PARTITION_READ_UNITS
            found = Bucket(rate * self.scale, self._clock)
            self._buckets[(direction, kind, key)] = found
        return found

    def _short(self, charges: list[Charge]) -> list[Charge]:
        """The charges whose keys lack the units (summed per key)."""
        per_key: dict[tuple[str, str], float] = {}
        for kind, key, amount in charges:
            per_key[(kind, key)] = per_key.get((kind, key), 0.0) + amount
        return [
            (kind, key, amount)
            for (kind, key), amount in per_key.items()
            if not self._bucket(kind, key, "write").has(amount)
        ]

    def _take(self, charges: list[Charge]) -> None:
        second = int(self._clock())
        for kind, key, amount in charges:
            self._bucket(kind, key, "write").take(amount)
            self.stats.write_units[kind] = self.stats.write_units.get(kind, 0.0) + amount
            at, total = self._second.get((kind, key), (second, 0.0))
            total = total + amount if at == second else amount
            self._second[(kind, key)] = (second, total)
            self.stats.hottest[kind] = max(self.stats.hottest.get(kind, 0.0), total)

    # ---- what a write costs -------------------------------------------------------------------

    def _index_charge(
        self, table: str, item: Mapping[str, Any] | None, key: Mapping[str, Any]
    ) -> list[Charge]:
        """The RankIndex writes a put of ``item`` (``None``: a delete) at ``key`` makes."""
        address = (table, json.dumps(key, sort_keys=True))
        before = self._entries.get(address)
        entry = units.index_entry(dict(item)) if item is not None else None
        board = (key.get("leaderboardId") or {}).get("S", "")
        if entry is None:
            return [] if before is None else [("index", board, 1.0)]
        projected = tuple(
            json.dumps(entry.get(name), sort_keys=True) for name in RANK_INDEX_PROJECTED
        )
        now = (entry["rankKey"]["S"], projected)
        if before == now:
            return []
        size = units.write_blocks(units.item_size(entry))
        moved = before is not None and before[0] != now[0]
        return [("index", board, float(size + (1 if moved else 0)))]

    def _remember(self, table: str, item: Mapping[str, Any] | None, key: Mapping[str, Any]) -> None:
        address = (table, json.dumps(key, sort_keys=True))
        entry = units.index_entry(dict(item)) if item is not None else None
        if entry is None:
            self._entries.pop(address, None)
        else:
            projected = tuple(
                json.dumps(entry.get(name), sort_keys=True) for name in RANK_INDEX_PROJECTED
            )
            self._entries[address] = (entry["rankKey"]["S"], projected)

    def _write_charges(
        self, action: str, body: Mapping[str, Any], *, factor: float
    ) -> tuple[list[Charge], Callable[[], None]]:
        """What one write item costs, and what to remember of it once it is applied."""
        table = body["TableName"]
        if action == "Put":
            item = body["Item"]
            key = {"playerId": item["playerId"], "leaderboardId": item["leaderboardId"]}
            size = units.write_blocks(units.item_size(item))
            charges: list[Charge] = [("table", item["playerId"]["S"], factor * size)]
            charges += self._index_charge(table, item, key)
            return charges, lambda: self._remember(table, item, key)
        key = body["Key"]
        charges = [("table", key["playerId"]["S"], factor * 1.0)]
        if action == "Delete":
            charges += self._index_charge(table, None, key)
            return charges, lambda: self._remember(table, None, key)
        if action == "Update" and self._touches_index(body):
            charges.append(("index", key["leaderboardId"]["S"], 1.0))
        return charges, _nothing

    @staticmethod
    def _touches_index(body: Mapping[str, Any]) -> bool:
        """An update that names the rank key or a projected attribute (a rekey, a tie mark)."""
        names = set(body.get("ExpressionAttributeNames", {}).values())
        words = set(re.findall(r"[A-Za-z_]\w*", body.get("UpdateExpression", "")))
        return bool(({"rankKey", *RANK_INDEX_PROJECTED}) & (names | words))

    # ---- the protocol -------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                pass
            await send({"type": "lifespan.shutdown.complete"})
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        operation = headers.get("x-amz-target", "").rpartition(".")[2]
        body = json.loads(raw) if raw else {}
        status, answer = await self._serve(operation, body, raw, headers)
        payload = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/x-amz-json-1.0"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})

    async def _forward(self, raw: bytes, headers: Mapping[str, str]) -> httpx.Response:
        sent = {k: v for k, v in headers.items() if k not in {"host", "content-length"}}
        return await self._client.post(self.upstream + "/", content=raw, headers=sent)

    async def _serve(
        self, operation: str, body: dict[str, Any], raw: bytes, headers: Mapping[str, str]
    ) -> tuple[int, bytes | dict[str, Any]]:
        if not self.enabled:
            response = await self._forward(raw, headers)
            return response.status_code, response.content
        if operation in {"PutItem", "UpdateItem", "DeleteItem"}:
            return await self._plain_write(operation, body, raw, headers)
        if operation == "TransactWriteItems":
            return await self._transaction(body, raw, headers)
        if operation in {"GetItem", "Query", "Scan", "BatchGetItem"}:
            return await self._read(operation, body, raw, headers)
        self.stats.forwarded[operation] += 1
        response = await self._forward(raw, headers)
        return response.status_code, response.content

    async def _plain_write(
        self, operation: str, body: dict[str, Any], raw: bytes, headers: Mapping[str, str]
    ) -> tuple[int, bytes | dict[str, Any]]:
        charges, remember = self._write_charges(operation.removesuffix("Item"), body, factor=1.0)
        short = self._short(charges)
        if short:
            self.stats.throttled[f"{operation} {_reason(short[0][0], 'Write')}"] += 1
            self.stats.throttled_keys.update(f"{kind} {key}" for kind, key, _ in short)
            return 400, _throttling(body["TableName"], short, "Write")
        self._take(charges)
        self.stats.forwarded[operation] += 1
        response = await self._forward(raw, headers)
        if response.status_code == 200:
            remember()
        return response.status_code, response.content

    async def _transaction(
        self, body: dict[str, Any], raw: bytes, headers: Mapping[str, str]
    ) -> tuple[int, bytes | dict[str, Any]]:
        planned: list[tuple[list[Charge], Callable[[], None]]] = []
        for entry in body.get("TransactItems", []):
            action, item = next(iter(entry.items()))
            if action == "ConditionCheck":
                planned.append(([("table", item["Key"]["playerId"]["S"], 2.0)], _nothing))
            else:
                planned.append(self._write_charges(action, item, factor=2.0))
        every = [charge for charges, _ in planned for charge in charges]
        short = {(kind, key) for kind, key, _ in self._short(every)}
        self.stats.throttled_keys.update(f"{kind} {key}" for kind, key in short)
        if short:
            reasons = []
            for charges, _ in planned:
                hit = [c for c in charges if (c[0], c[1]) in short]
                reasons.append(
                    {"Code": "ThrottlingError", "Message": _THROTTLED_MESSAGE}
                    if hit
                    else {"Code": "None"}
                )
            kinds = sorted({kind for kind, _ in short})
            self.stats.throttled[
                "TransactWriteItems " + "+".join(_reason(k, "Write") for k in kinds)
            ] += 1
            codes = ", ".join(r["Code"] for r in reasons)
            return 400, {
                "__type": _PREFIX + "TransactionCanceledException",
                "message": "Transaction cancelled, please refer cancellation reasons for "
                f"specific reasons [{codes}]",
                "CancellationReasons": reasons,
            }
        self._take(every)
        self.stats.forwarded["TransactWriteItems"] += 1
        response = await self._forward(raw, headers)
        if response.status_code == 200:
            for _, remember in planned:
                remember()
        return response.status_code, response.content

    async def _read(
        self, operation: str, body: dict[str, Any], raw: bytes, headers: Mapping[str, str]
    ) -> tuple[int, bytes | dict[str, Any]]:
        consistent = bool(body.get("ConsistentRead"))
        if operation == "BatchGetItem":
            return await self._batch_read(body, headers)
        kind, key = self._read_key(operation, body)
        bucket = self._bucket(kind, key, "read")
        if not bucket.has(0.0):
            self.stats.throttled[f"{operation} {_reason(kind, 'Read')}"] += 1
            self.stats.throttled_keys[f"{kind} {key}"] += 1
            return 400, _throttling(body.get("TableName", ""), [(kind, key, 0.0)], "Read")
        self.stats.forwarded[operation] += 1
        response = await self._forward(raw, headers)
        bucket.take(units.read_units(len(response.content), consistent=consistent))
        return response.status_code, response.content

    def _read_key(self, operation: str, body: Mapping[str, Any]) -> tuple[str, str]:
        kind = "index" if body.get("IndexName") == RANK_INDEX else "table"
        if operation == "GetItem":
            return kind, body["Key"]["playerId"]["S"]
        if operation == "Query":
            match = _KEY_CONDITION.match(body.get("KeyConditionExpression", ""))
            if match is not None:
                value = body.get("ExpressionAttributeValues", {}).get(match[2], {})
                return kind, str(value.get("S", ""))
        return kind, "*scan*"

    async def _batch_read(
        self, body: dict[str, Any], headers: Mapping[str, str]
    ) -> tuple[int, bytes | dict[str, Any]]:
        asked = body.get("RequestItems", {})
        served: dict[str, Any] = {}
        unprocessed: dict[str, Any] = {}
        for table, request in asked.items():
            keep: list[dict[str, Any]] = []
            left: list[dict[str, Any]] = []
            for key in request.get("Keys", []):
                spent = not self._bucket("table", key["playerId"]["S"], "read").has(0.0)
                (left if spent else keep).append(key)
            if keep:
                served[table] = {**request, "Keys": keep}
            if left:
                unprocessed[table] = {**request, "Keys": left}
        throttled = sum(len(r["Keys"]) for r in unprocessed.values())
        if throttled:
            self.stats.throttled["BatchGetItem TableReadKeyRangeThroughputExceeded"] += throttled
        if not served:
            return 400, {
                "__type": _PREFIX + "ProvisionedThroughputExceededException",
                "message": "The level of configured provisioned throughput for the table was "
                "exceeded. Consider increasing your provisioning level with the UpdateTable API.",
            }
        self.stats.forwarded["BatchGetItem"] += 1
        sent = json.dumps({**body, "RequestItems": served}).encode()
        response = await self._forward(sent, headers)
        if response.status_code != 200:
            return response.status_code, response.content
        answer = response.json()
        for table, items in answer.get("Responses", {}).items():
            consistent = bool(served[table].get("ConsistentRead"))
            for item in items:
                self._bucket("table", item["playerId"]["S"], "read").take(
                    units.read_units(units.item_size(item), consistent=consistent)
                )
        answer["UnprocessedKeys"] = {**answer.get("UnprocessedKeys", {}), **unprocessed}
        return 200, answer


def _nothing() -> None:
    """What a write leaves the proxy to remember when it changes no index entry."""


def _reason(kind: str, direction: str) -> str:
    return f"{'Index' if kind == 'index' else 'Table'}{direction}KeyRangeThroughputExceeded"


def _throttling(table: str, short: list[Charge], direction: str) -> dict[str, Any]:
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}"
    return {
        "__type": _PREFIX + "ThrottlingException",
        "message": _THROTTLED_MESSAGE,
        "ThrottlingReasons": [
            {
                "reason": _reason(kind, direction),
                "resource": arn + (f"/index/{RANK_INDEX}" if kind == "index" else ""),
            }
            for kind in sorted({kind for kind, _, _ in short})
        ],
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def running_proxy(
    upstream: str, *, scale: float
) -> AsyncIterator[tuple[str, PartitionProxy]]:
    """The proxy listening on 127.0.0.1 (a free port) in this event loop: its URL, and it."""
    proxy = PartitionProxy(upstream, scale=scale)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(proxy, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:  # noqa: ASYNC110 - uvicorn offers no event for it
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", proxy
    finally:
        server.should_exit = True
        await task
        await proxy.aclose()
