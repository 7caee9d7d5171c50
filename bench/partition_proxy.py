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
units is answered throttled and sent nowhere. A read is charged after it is answered (a read
cannot know its size before), by the items it evaluated (a COUNT's, which its answer does not
hold, at the mean size of the items of the table or the index seen so far), and refused while its
key's bucket is spent. With ``table_units`` (DynamoDB's default per-table quota of an on-demand table is
``TABLE_UNITS``, read and write alike), the table and the index each have a bucket of that many
units a second too (times ``scale``, a second's worth banked), charged on every call as the
partitions are; a call the quota cannot take is answered as DynamoDB answers an on-demand table
past its quota: ``ThrottlingException`` whose reason is ``TableReadAccountLimitExceeded`` (or
``Write``, or ``Index...``), a transaction cancelled with ``ThrottlingError`` on every item the
quota refused. Without it (``None``, as ``bench.hot_round`` runs by default) the table takes
whatever its partitions take. ``bank_s``: how many seconds' worth of units every bucket banks
(1, as DynamoDB banks; a run slowed down by a factor, every rate divided by it, banks that many).
``upkeep_weight``: a read that says it is a task's upkeep (``PURPOSE_HEADER`` ``upkeep``: a
run marks a mirror's refreshes so) is charged as the same read would be were the board full size (its index
items grown by ``1 / board_scale``), times the weight: a task's upkeep is a number of reads a
second whatever the scale, which a scaled run would otherwise charge against rates scaled down
(with ``scale`` as the weight, the run's instances stand for as many tasks at full scale).
What is not modelled: a partition split for heat (DynamoDB's is
undocumented in rate, and does not help keys that stay hot), and warm throughput (a new table
serving at once less than its quota).

The proxy also keeps what a run needs to judge itself: the read units charged by the kind of key
(``ProxyStats.read_units``), and the time the backend had at least one call of the proxy's in
flight (``busy_seconds``): the embedded backend serves one call at a time, so that is its busy
time.

    python3 tools/uv.py run --frozen --all-groups python -m bench.hot_round --help
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import time
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn

from app.store.tables import RANK_INDEX, RANK_INDEX_PROJECTED
from bench.harness import units

PARTITION_WRITE_UNITS = 1_000
PARTITION_READ_UNITS = 3_000
PURPOSE_HEADER = "x-bench-for"
"""A request header a run may set on the calls of the apps it runs, saying what each is for
(``upkeep``: a task's own, ``upkeep_weight``; anything else is only counted by it,
``ProxyStats.read_units_for``)."""
UPKEEP = "upkeep"
DEFAULT_ITEM_BYTES = 100
"""An item's size for a COUNT's charge before the proxy has seen any item of its kind."""
TABLE_UNITS = 40_000
"""An on-demand table's default quota, read and write units a second each (an account quota, per
table; each global secondary index has its own)."""
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
    """A partition key's units: ``rate`` a second, at most ``bank_s`` seconds' worth banked (a
    second's, as DynamoDB banks; more where a run's time is slowed down)."""

    def __init__(self, rate: float, clock: Callable[[], float], *, bank_s: float = 1.0) -> None:
        self.rate = rate
        self.most = rate * bank_s
        self._clock = clock
        self.tokens = self.most
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self.tokens = min(self.most, self.tokens + (now - self._at) * self.rate)
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
    """Throttled calls by the partition key that was short (``quota table`` for the table's)."""
    read_units: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    """Read units charged, by operation and kind of key (``key_kind``): ``Query hist#``,
    ``GetItem row``, ``Query index``."""
    read_units_for: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    """Read units charged, by what the calls said they were for (``PURPOSE_HEADER``; ``-``:
    nothing)."""
    upkeep_units: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    """Of the reads marked as a task's upkeep (``PURPOSE_HEADER``, with ``upkeep_weight``): their
    units at the run's size, as ``read_units`` keys them."""
    upkeep_full_units: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))
    """The same reads' units were the board full size (an index read's items grown by
    ``1 / board_scale``; a table read's as they are: the counters do not grow with the board)."""

    @property
    def throttled_total(self) -> int:
        return sum(self.throttled.values())


def key_kind(kind: str, key: str) -> str:
    """What a partition key is, for the stats: ``index`` (a board's RankIndex partition), the
    prefix of a table key that has one (``hist#``, ``idem#``, ``definition#``...), else ``row``
    (a player's rows)."""
    if kind == "index":
        return "index"
    prefix, sep, _ = key.partition("#")
    return f"{prefix}#" if sep else "row"


Charge = tuple[str, str, float]
"""(``table`` or ``index``, partition key value, units)."""


class PartitionProxy:
    """The ASGI app: DynamoDB's JSON protocol in, moto's answers (or DynamoDB's throttling) out.
    ``enabled`` false: every call is sent on and charged nothing (to set a board up)."""

    def __init__(
        self,
        upstream: str,
        *,
        scale: float,
        table_units: float | None = None,
        bank_s: float = 1.0,
        upkeep_weight: float | None = None,
        board_scale: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.scale = scale
        self.table_units = table_units
        self.bank_s = bank_s
        self.enforce = True
        """False: every call is charged and counted as usual, and none is throttled (what a
        load costs, apart from what it would be refused)."""
        self.upkeep_weight = upkeep_weight
        self.board_scale = board_scale
        self.enabled = True
        self.stats = ProxyStats()
        self._clock = clock
        self._in_flight = 0
        self._busy_since = 0.0
        self._busy = 0.0
        self._buckets: dict[tuple[str, str, str], Bucket] = {}
        self._entries: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {}
        """What RankIndex holds of each row the proxy has seen written: its key and projection."""
        self._second: dict[tuple[str, str], tuple[int, float]] = {}
        self._seen: dict[str, tuple[int, int]] = {}
        """Bytes and count of the items of each kind (``table``, ``index``) Queries answered."""
        self._client = httpx.AsyncClient(timeout=120)

    async def aclose(self) -> None:
        await self._client.aclose()

    # ---- the buckets --------------------------------------------------------------------------

    def _bucket(self, kind: str, key: str, direction: str) -> Bucket:
        found = self._buckets.get((direction, kind, key))
        if found is None:
            rate = PARTITION_WRITE_UNITS if direction == "write" else PARTITION_READ_UNITS
            found = Bucket(rate * self.scale, self._clock, bank_s=self.bank_s)
            self._buckets[(direction, kind, key)] = found
        return found

    def _has(self, bucket: Bucket, amount: float) -> bool:
        """Whether ``bucket`` has ``amount``, or the proxy is not throttling (``enforce``)."""
        return bucket.has(amount) or not self.enforce

    def _quota(self, kind: str, direction: str) -> Bucket | None:
        """The table's (or the index's) own bucket, where the table has a quota."""
        if self.table_units is None:
            return None
        found = self._buckets.get((direction, "quota", kind))
        if found is None:
            found = Bucket(self.table_units * self.scale, self._clock, bank_s=self.bank_s)
            self._buckets[(direction, "quota", kind)] = found
        return found

    def _over_quota(self, charges: list[Charge], direction: str) -> list[str]:
        """The kinds (``table``, ``index``) whose quota lacks the units of ``charges``."""
        per_kind: dict[str, float] = {}
        for kind, _, amount in charges:
            per_kind[kind] = per_kind.get(kind, 0.0) + amount
        short = []
        for kind, amount in per_kind.items():
            quota = self._quota(kind, direction)
            if quota is not None and not self._has(quota, amount):
                short.append(kind)
        return sorted(short)

    def _short(self, charges: list[Charge]) -> list[Charge]:
        """The charges whose keys lack the units (summed per key)."""
        per_key: dict[tuple[str, str], float] = {}
        for kind, key, amount in charges:
            per_key[(kind, key)] = per_key.get((kind, key), 0.0) + amount
        return [
            (kind, key, amount)
            for (kind, key), amount in per_key.items()
            if not self._has(self._bucket(kind, key, "write"), amount)
        ]

    def _take(self, charges: list[Charge]) -> None:
        second = int(self._clock())
        for kind, key, amount in charges:
            self._bucket(kind, key, "write").take(amount)
            quota = self._quota(kind, "write")
            if quota is not None:
                quota.take(amount)
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

    def busy_seconds(self) -> float:
        """Seconds so far during which the backend had at least one of the proxy's calls."""
        return self._busy + (self._clock() - self._busy_since if self._in_flight else 0.0)

    async def _forward(self, raw: bytes, headers: Mapping[str, str]) -> httpx.Response:
        sent = {k: v for k, v in headers.items() if k not in {"host", "content-length"}}
        if not self._in_flight:
            self._busy_since = self._clock()
        self._in_flight += 1
        try:
            return await self._client.post(self.upstream + "/", content=raw, headers=sent)
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                self._busy += self._clock() - self._busy_since

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
        over = self._over_quota(charges, "write")
        if over:
            self.stats.throttled[f"{operation} {_quota_reason(over[0], 'Write')}"] += 1
            self.stats.throttled_keys.update(f"quota {kind}" for kind in over)
            return 400, _quota_throttling(body["TableName"], over, "Write")
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
        over = self._over_quota(every, "write")
        if over:
            # The table's (or the index's) quota: every item charged to it is refused.
            short = {(kind, key) for kind, key, _ in every if kind in over}
            self.stats.throttled_keys.update(f"quota {kind}" for kind in over)
            said = "+".join(_quota_reason(k, "Write") for k in over)
        else:
            short = {(kind, key) for kind, key, _ in self._short(every)}
            self.stats.throttled_keys.update(f"{kind} {key}" for kind, key in short)
            said = "+".join(_reason(k, "Write") for k in sorted({kind for kind, _ in short}))
        if short:
            reasons = []
            for charges, _ in planned:
                hit = [c for c in charges if (c[0], c[1]) in short]
                reasons.append(
                    {"Code": "ThrottlingError", "Message": _THROTTLED_MESSAGE}
                    if hit
                    else {"Code": "None"}
                )
            self.stats.throttled["TransactWriteItems " + said] += 1
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
        quota = self._quota(kind, "read")
        if quota is not None and not self._has(quota, 0.0):
            self.stats.throttled[f"{operation} {_quota_reason(kind, 'Read')}"] += 1
            self.stats.throttled_keys[f"quota {kind}"] += 1
            return 400, _quota_throttling(body.get("TableName", ""), [kind], "Read")
        if not self._has(bucket, 0.0):
            self.stats.throttled[f"{operation} {_reason(kind, 'Read')}"] += 1
            self.stats.throttled_keys[f"{kind} {key}"] += 1
            return 400, _throttling(body.get("TableName", ""), [(kind, key, 0.0)], "Read")
        self.stats.forwarded[operation] += 1
        response = await self._forward(raw, headers)
        size = self._read_size(kind, response)
        spent = 0.0 if size is None else units.read_units(int(size), consistent=consistent)
        what = f"{operation} {key_kind(kind, key)}"
        purpose = headers.get(PURPOSE_HEADER, "-")
        if size is not None and self.upkeep_weight is not None and purpose == UPKEEP:
            # A task's upkeep: charged as the same read of the board at full size, times the
            # weight (the scale, and the tasks the run's instances stand for).
            grown = size / self.board_scale if kind == "index" else size
            full = units.read_units(int(grown), consistent=consistent)
            self.stats.upkeep_units[what] += spent
            self.stats.upkeep_full_units[what] += full
            spent = full * self.upkeep_weight
        bucket.take(spent)
        if quota is not None:
            quota.take(spent)
        self.stats.read_units[what] += spent
        self.stats.read_units_for[purpose] += spent
        return response.status_code, response.content

    def _read_size(self, kind: str, response: httpx.Response) -> float | None:
        """What a read is charged by, in DynamoDB's rule: the bytes of the items it evaluated (a
        GetItem its item's; ``None``: an error, not charged). A Query's items that were counted
        (``Select=COUNT``) or filtered out are not in its answer: each is taken at the mean size
        of the items of ``kind`` the proxy has seen answered (``DEFAULT_ITEM_BYTES`` before it
        has seen any)."""
        if response.status_code != 200:
            return None
        answer = response.json()
        if "Item" in answer or "Count" not in answer:  # a GetItem (found or not)
            return float(units.item_size(answer.get("Item")))
        items = answer.get("Items", [])
        size = float(sum(units.item_size(item) for item in items))
        if items:
            seen_bytes, seen = self._seen.get(kind, (0, 0))
            self._seen[kind] = (seen_bytes + int(size), seen + len(items))
        unseen = int(answer.get("ScannedCount", len(items))) - len(items)
        if unseen > 0:
            seen_bytes, seen = self._seen.get(kind, (0, 0))
            size += unseen * (seen_bytes / seen if seen else DEFAULT_ITEM_BYTES)
        return size

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
        quota = self._quota("table", "read")
        reason = "TableReadKeyRangeThroughputExceeded"
        if quota is not None and not self._has(quota, 0.0):
            reason = _quota_reason("table", "Read")
        for table, request in asked.items():
            keep: list[dict[str, Any]] = []
            left: list[dict[str, Any]] = []
            for key in request.get("Keys", []):
                spent = reason != "TableReadKeyRangeThroughputExceeded" or not self._has(
                    self._bucket("table", key["playerId"]["S"], "read"), 0.0
                )
                (left if spent else keep).append(key)
            if keep:
                served[table] = {**request, "Keys": keep}
            if left:
                unprocessed[table] = {**request, "Keys": left}
        throttled = sum(len(r["Keys"]) for r in unprocessed.values())
        if throttled:
            self.stats.throttled[f"BatchGetItem {reason}"] += throttled
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
                charged = units.read_units(units.item_size(item), consistent=consistent)
                self._bucket("table", item["playerId"]["S"], "read").take(charged)
                if quota is not None:
                    quota.take(charged)
                kind = key_kind("table", item["playerId"]["S"])
                self.stats.read_units[f"BatchGetItem {kind}"] += charged
                self.stats.read_units_for[headers.get(PURPOSE_HEADER, "-")] += charged
        answer["UnprocessedKeys"] = {**answer.get("UnprocessedKeys", {}), **unprocessed}
        return 200, answer


def _nothing() -> None:
    """What a write leaves the proxy to remember when it changes no index entry."""


def _reason(kind: str, direction: str) -> str:
    return f"{'Index' if kind == 'index' else 'Table'}{direction}KeyRangeThroughputExceeded"


def _quota_reason(kind: str, direction: str) -> str:
    return f"{'Index' if kind == 'index' else 'Table'}{direction}AccountLimitExceeded"


def _quota_throttling(table: str, kinds: list[str], direction: str) -> dict[str, Any]:
    arn = f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}"
    return {
        "__type": _PREFIX + "ThrottlingException",
        "message": _THROTTLED_MESSAGE,
        "ThrottlingReasons": [
            {
                "reason": _quota_reason(kind, direction),
                "resource": arn + (f"/index/{RANK_INDEX}" if kind == "index" else ""),
            }
            for kind in sorted(set(kinds))
        ],
    }


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
    upstream: str, *, scale: float, **options: Any
) -> AsyncIterator[tuple[str, PartitionProxy]]:
    """The proxy listening on 127.0.0.1 (a free port) in this event loop: its URL, and it
    (``options``: ``PartitionProxy``'s)."""
    proxy = PartitionProxy(upstream, scale=scale, **options)
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
