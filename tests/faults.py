"""DynamoDB as it really answers, injected at botocore's ``before-send`` where moto is kinder.

moto never conflicts a plain write with a transaction, never loses a response, never throttles,
never lags its index, ignores ``ClientRequestToken``, ends a page at ``Limit`` without a
``LastEvaluatedKey``, and stores what DynamoDB refuses. Every client the tests open gets a
``Faults`` hook (``tests/conftest.py``), which:

- checks every request against what DynamoDB refuses (``tests.dynamo_rules``): a refused request
  is answered with DynamoDB's ``ValidationException`` and recorded, and the test fails;
- gives the ``LastEvaluatedKey`` DynamoDB gives when a page stops at ``Limit``, always;
- emulates DynamoDB's token rule for ``TransactWriteItems``: a resent call whose token was applied
  succeeds without being applied again; the same token with other parameters is
  ``IdempotentParameterMismatch``;
- answers chosen calls as a test's ``rules`` say (``fail_first``), loses chosen responses after
  the call was applied (botocore resends it), and delays calls;
- under a ``Profile`` (the faithful run: ``faithful.use``), at its rates: throttling
  (``ThrottlingException``, ``ProvisionedThroughputExceededException``, a transaction cancelled
  for ``ThrottlingError`` or ``ProvisionedThroughputExceeded``, batches left unprocessed), lost
  responses of every write, ``TransactionConflictException`` on a plain write to an item a
  transaction holds (and ``TransactionConflict`` between transactions), and a lagging view for
  eventually consistent reads and RankIndex (``tests.lagging``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from aiobotocore.awsrequest import AioAWSResponse
from botocore.awsrequest import AWSPreparedRequest
from botocore.compat import HTTPHeaders
from botocore.exceptions import ReadTimeoutError

from tests.dynamo_rules import TableShape, refusal, shapes_of
from tests.lagging import TLS, LaggingView

_PREFIX = "com.amazonaws.dynamodb.v20120810#"

READS = frozenset({"GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"})
PLAIN_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem"})
WRITES = PLAIN_WRITES | {"BatchWriteItem", "TransactWriteItems"}
DATA = READS | WRITES


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    async def read(self) -> bytes:
        return self._data


def dynamo_response(status: int, body: Mapping[str, Any]) -> AioAWSResponse:
    headers = _headers({"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "f"})
    return AioAWSResponse("http://fault", status, headers, _Body(json.dumps(body).encode()))


def _headers(values: dict[str, str]) -> HTTPHeaders:
    headers = HTTPHeaders()
    for name, value in values.items():
        headers[name] = value
    return headers


def error(code: str, message: str) -> AioAWSResponse:
    return dynamo_response(400, {"__type": _PREFIX + code, "message": message})


def cancelled(reasons: list[str]) -> AioAWSResponse:
    return dynamo_response(
        400,
        {
            "__type": _PREFIX + "TransactionCanceledException",
            "message": f"Transaction cancelled, please refer cancellation reasons for specific "
            f"reasons [{', '.join(reasons)}]",
            "CancellationReasons": [{"Code": reason} for reason in reasons],
        },
    )


def throttled() -> AioAWSResponse:
    return error(
        "ThrottlingException",
        "Throughput exceeds the current capacity of your table or index. DynamoDB is "
        "automatically scaling your table or index so please try again shortly.",
    )


def over_provisioned() -> AioAWSResponse:
    return error(
        "ProvisionedThroughputExceededException",
        "The level of configured provisioned throughput for the table was exceeded.",
    )


def item_busy() -> AioAWSResponse:
    """A plain write on an item that a transaction in flight holds."""
    return error(
        "TransactionConflictException",
        "Transaction is ongoing for the item",
    )


def rejected(message: str) -> AioAWSResponse:
    """DynamoDB refusing a request as malformed."""
    return error("ValidationException", message)


def cancelled_at(body: Mapping[str, Any], reason: str, *, index: int = 0) -> AioAWSResponse:
    """A transaction cancelled with ``reason`` on its item ``index`` (``None`` on the others)."""
    reasons = ["None"] * len(body.get("TransactItems", []))
    reasons[index] = reason
    return cancelled(reasons)


def conflict_on_row(body: dict[str, Any]) -> AioAWSResponse:
    """Cancel as DynamoDB does when another transaction holds the score row (the first item)."""
    return cancelled_at(body, "TransactionConflict")


Rule = Callable[[str, dict[str, Any]], AioAWSResponse | None]


def fail_first(
    operation: str,
    times: int,
    make: Callable[[dict[str, Any]], AioAWSResponse],
    *,
    matching: Callable[[dict[str, Any]], bool] | None = None,
) -> Rule:
    """A rule answering the first ``times`` calls of ``operation`` (those ``matching``, if given)
    with ``make(body)``."""
    remaining = [times]

    def rule(op: str, body: dict[str, Any]) -> AioAWSResponse | None:
        if op != operation or remaining[0] <= 0 or (matching is not None and not matching(body)):
            return None
        remaining[0] -= 1
        return make(body)

    return rule


def on_item(prefix: str) -> Callable[[dict[str, Any]], bool]:
    """A plain write's body whose item's partition key starts with ``prefix``."""

    def matches(body: dict[str, Any]) -> bool:
        key = body.get("Key") or body.get("Item") or {}
        return str(key.get("playerId", {}).get("S", "")).startswith(prefix)

    return matches


# ---- the faithful run: every fault at a rate, shared by every client of a test ----------------


@dataclass(frozen=True)
class Profile:
    """How often each of DynamoDB's unkind answers comes, for every data call of a test."""

    throttle: float = 0.0
    """Share of calls throttled (reads and plain writes: an error botocore retries; transactions:
    a cancellation reason it does not; batches: part of the batch left unprocessed)."""
    lose: float = 0.0
    """Share of write calls applied whose response is lost (botocore resends them)."""
    hold_s: float = 0.0
    """How long a transaction holds its items after it is applied: a plain write on one meets
    ``TransactionConflictException``, another transaction ``TransactionConflict``."""
    lag_s: float = 0.0
    """Eventually consistent reads and RankIndex see each write up to this late."""
    seed: int = 0


MODERATE = Profile(throttle=0.03, lose=0.03, hold_s=0.03, lag_s=0.3)
"""The faithful run's rates: every fault shows up in a test of a few hundred calls."""


@dataclass
class Faithful:
    """What every client's hook shares in a test: the refusals found, the profile in use, the
    items transactions hold, the lagging view, and how often each fault was injected."""

    refused: list[str] = field(default_factory=list)
    shapes: dict[str, TableShape] = field(default_factory=dict)
    profile: Profile = field(default_factory=Profile)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    held: dict[str, float] = field(default_factory=dict)
    injected: Counter[str] = field(default_factory=Counter)
    view: LaggingView | None = None
    quiet: bool = False
    unchecked: bool = False

    def use(self, profile: Profile, *, endpoint: str, region: str = "us-east-1") -> None:
        self.profile = profile
        self.rng = random.Random(profile.seed)
        if profile.lag_s > 0:
            self.view = LaggingView(
                endpoint, region, profile.lag_s, rng=random.Random(profile.seed + 1)
            )

    def reset(self) -> None:
        """A new test: nothing refused or injected yet, no profile; the tables' shapes stay."""
        self.refused, self.profile, self.rng = [], Profile(), random.Random(0)
        self.held, self.injected, self.view, self.quiet = {}, Counter(), None, False
        self.unchecked = False

    @contextlib.contextmanager
    def quietly(self) -> Iterator[None]:
        """The test's own reads: no fault, no lag (the table as it is)."""
        before, self.quiet = self.quiet, True
        try:
            yield
        finally:
            self.quiet = before

    @contextlib.contextmanager
    def unvalidated(self) -> Iterator[None]:
        """Requests the test sends to the embedded backend as they are, invalid on purpose (to see
        what moto does with them): not checked against what DynamoDB refuses."""
        before, self.unchecked = self.unchecked, True
        try:
            yield
        finally:
            self.unchecked = before

    @property
    def active(self) -> bool:
        return not self.quiet and self.profile != Profile()

    def draw(self, rate: float) -> bool:
        return rate > 0 and self.rng.random() < rate

    def holding(self, items: Sequence[str]) -> list[bool]:
        now = time.monotonic()
        return [self.held.get(item, 0.0) > now for item in items]

    def hold(self, items: Sequence[str]) -> None:
        until = time.monotonic() + self.profile.hold_s
        for item in items:
            self.held[item] = until


faithful = Faithful()
"""The test's shared state (one process per xdist worker; ``tests/conftest.py`` resets it)."""


@dataclass
class InFlightItems:
    """DynamoDB's per-item transaction conflicts: a transaction touching an item that another
    transaction in flight touches is cancelled with ``TransactionConflict`` on that item. Shared
    by the clients of several app instances, it stands for one table seen by several tasks.

    "In flight" is while DynamoDB works on a transaction, not while it waits in a queue: the
    embedded backend serves one call at a time, and a burst queues there for seconds that DynamoDB
    would not take. So a transaction holds its items only inside ``processing``, a window of
    ``parallel`` transactions at once (DynamoDB works on many transactions of a table at a time).
    """

    parallel: int = 16
    busy: Counter[str] = field(default_factory=Counter)
    conflicts: int = 0
    sent: Counter[str] = field(default_factory=Counter)
    """Transactions sent, by their first item (a submission's row): attempts per submission."""
    processing: asyncio.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self.processing = asyncio.Semaphore(self.parallel)

    @staticmethod
    def keys(body: Mapping[str, Any]) -> list[str]:
        return [_item_id(table, key) for table, key in _transact_keys(body)]


def _item_id(table: str, key: Mapping[str, Any]) -> str:
    return table + json.dumps(key, sort_keys=True)


def _transact_keys(body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    keys = []
    for action in body.get("TransactItems", []):
        (operation,) = action.values()
        table = operation["TableName"]
        keys.append((table, operation.get("Key") or _key_of(operation["Item"], table)))
    return keys


def _written_keys(operation: str, body: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The items a write changes (a transaction's ``ConditionCheck`` items excepted)."""
    if operation in PLAIN_WRITES:
        table = body["TableName"]
        return [(table, dict(body.get("Key") or _key_of(body["Item"], table)))]
    if operation == "BatchWriteItem":
        return [
            (
                table,
                request["DeleteRequest"]["Key"]
                if "DeleteRequest" in request
                else _key_of(request["PutRequest"]["Item"], table),
            )
            for table, requests in body.get("RequestItems", {}).items()
            for request in requests
        ]
    if operation == "TransactWriteItems":
        return [
            (table, key)
            for action, (table, key) in zip(
                body["TransactItems"], _transact_keys(body), strict=True
            )
            if "ConditionCheck" not in action
        ]
    return []


def _key_of(item: Mapping[str, Any], table: str) -> dict[str, Any]:
    shape = faithful.shapes.get(table)
    names = shape.keys if shape is not None else ("playerId", "leaderboardId")
    return {name: item[name] for name in names if name in item}


def _lagging(operation: str, body: Mapping[str, Any]) -> bool:
    """A read DynamoDB answers eventually consistently: an index, or not asked to be strong."""
    if operation == "BatchGetItem":
        return not all(r.get("ConsistentRead") for r in body.get("RequestItems", {}).values())
    if operation in {"GetItem", "Query", "Scan"}:
        return "IndexName" in body or not body.get("ConsistentRead")
    return False


@dataclass
class Faults:
    endpoint: str
    region: str = "us-east-1"
    rules: list[Rule] = field(default_factory=list)
    seen: Counter[str] = field(default_factory=Counter)
    applied_tokens: dict[str, str] = field(default_factory=dict)
    in_flight: InFlightItems | None = None
    """Emulate per-item transaction conflicts (shared between clients to stand for many tasks)."""
    delay_s: float = 0.0
    """Every call waits this long first, as on a slow network."""
    jitter_s: float = 0.0
    """And up to this much more, at random (``rng``)."""
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    lose: Counter[str] = field(default_factory=Counter)
    """How many responses of each operation (other than TransactWriteItems) to lose, as read
    timeouts, after the call reached the server and was applied."""
    lose_responses: int = 0
    """How many successful TransactWriteItems responses to lose (as read timeouts) after the
    call was applied; a resend with the same token is answered as DynamoDB would, and can be lost
    too."""

    async def before_send(self, request: AWSPreparedRequest, **_: Any) -> AioAWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        operation = (target.decode() if isinstance(target, bytes) else target).rsplit(".", 1)[-1]
        self.seen[operation] += 1
        raw = request.body
        body = json.loads(raw if isinstance(raw, str | bytes) and raw else b"{}")
        found = None if faithful.unchecked else refusal(operation, body, faithful.shapes)
        if found is not None:
            faithful.refused.append(f"{operation}: {found}")
            return rejected(found)
        if operation == "CreateTable":
            faithful.shapes.update(shapes_of([body]))
        elif operation == "DeleteTable" and faithful.view is not None:
            await faithful.view.dropped(body["TableName"])
        if self.delay_s or self.jitter_s:
            await asyncio.sleep(self.delay_s + self.rng.uniform(0, self.jitter_s))
        for rule in self.rules:
            response = rule(operation, body)
            if response is not None:
                return response
        if self.lose[operation] > 0:
            self.lose[operation] -= 1
            await self._applied(request, operation, body)
            raise ReadTimeoutError(endpoint_url=self.endpoint)
        if faithful.active and operation in DATA:
            response = await self._unkind(request, operation, body)
            if response is not None:
                return response
        if operation == "TransactWriteItems":
            response = await self._transact(request, body)
            if response.status_code == 200 and self.lose_responses > 0:
                self.lose_responses -= 1
                raise ReadTimeoutError(endpoint_url=self.endpoint)
            return response
        if operation in WRITES and faithful.view is not None:
            return await self._applied(request, operation, body)
        return None

    async def _unkind(
        self, request: AWSPreparedRequest, operation: str, body: dict[str, Any]
    ) -> AioAWSResponse | None:
        """The profile's faults, at its rates; ``None``: this call goes through unharmed."""
        profile = faithful.profile
        if faithful.draw(profile.throttle):
            return await self._throttle(request, operation, body)
        if operation in PLAIN_WRITES:
            (item,) = [_item_id(t, k) for t, k in _written_keys(operation, body)]
            if faithful.holding([item])[0]:
                faithful.injected["item busy"] += 1
                return item_busy()
        if operation in WRITES and faithful.draw(profile.lose):
            faithful.injected["lost response"] += 1
            if operation == "TransactWriteItems":
                response = await self._transact(request, body)
                if response.status_code != 200:
                    return response
            else:
                await self._applied(request, operation, body)
            raise ReadTimeoutError(endpoint_url=self.endpoint)
        if operation in READS and faithful.view is not None and _lagging(operation, body):
            status, answer = await faithful.view.read(operation, body)
            if status == 200:
                await self._exact_limit(operation, body, answer, lagged=True)
            return dynamo_response(status, answer)
        return None

    async def _throttle(
        self, request: AWSPreparedRequest, operation: str, body: dict[str, Any]
    ) -> AioAWSResponse | None:
        if operation == "TransactWriteItems":
            reason = faithful.rng.choice(["ThrottlingError", "ProvisionedThroughputExceeded"])
            faithful.injected[f"transaction {reason}"] += 1
            count = len(body.get("TransactItems", []))
            return cancelled_at(body, reason, index=faithful.rng.randrange(count))
        if operation in {"BatchGetItem", "BatchWriteItem"} and faithful.rng.random() < 0.5:
            response = await self._partly(request, operation, body)
            if response is not None:
                faithful.injected["batch unprocessed"] += 1
                return response
        faithful.injected["throttled"] += 1
        return faithful.rng.choice([throttled, over_provisioned])()

    async def _partly(
        self, request: AWSPreparedRequest, operation: str, body: dict[str, Any]
    ) -> AioAWSResponse | None:
        """A batch of which DynamoDB did half, the rest left unprocessed (as under throttling)."""
        ((table, part),) = body["RequestItems"].items()
        entries = part["Keys"] if operation == "BatchGetItem" else part
        if len(entries) < 2:
            return None
        done, left = entries[: len(entries) // 2], entries[len(entries) // 2 :]
        if operation == "BatchGetItem":
            sent = {**body, "RequestItems": {table: {**part, "Keys": done}}}
            unprocessed = {"UnprocessedKeys": {table: {**part, "Keys": left}}}
        else:
            sent = {**body, "RequestItems": {table: done}}
            unprocessed = {"UnprocessedItems": {table: left}}
        if operation == "BatchGetItem" and faithful.view is not None and _lagging(operation, sent):
            status, answer = await faithful.view.read(operation, sent)
        else:
            forwarded = await self._send(request, sent)
            status, answer = forwarded.status_code, forwarded.json()
            if status == 200 and operation == "BatchWriteItem":
                await self._remember(operation, sent)
        if status != 200:
            return dynamo_response(status, answer)
        return dynamo_response(200, {**answer, **unprocessed})

    async def _applied(
        self, request: AWSPreparedRequest, operation: str, body: dict[str, Any]
    ) -> AioAWSResponse:
        """Send the call on, and tell the lagging view of what it wrote."""
        response = await self._forward(request)
        if response.status_code == 200:
            await self._remember(operation, body)
        return response

    async def _remember(self, operation: str, body: Mapping[str, Any]) -> None:
        if faithful.view is None or operation not in WRITES:
            return
        by_table: dict[str, list[dict[str, Any]]] = {}
        for table, key in _written_keys(operation, body):
            by_table.setdefault(table, []).append(key)
        for table, keys in by_table.items():
            await faithful.view.wrote(table, keys)

    async def _transact(self, request: AWSPreparedRequest, body: dict[str, Any]) -> AioAWSResponse:
        """As DynamoDB answers a transaction: by its token, by per-item conflicts, or by applying it."""
        token = body.get("ClientRequestToken")
        items = json.dumps(body.get("TransactItems"), sort_keys=True)
        if token in self.applied_tokens:
            if self.applied_tokens[token] != items:
                return error(
                    "IdempotentParameterMismatchException", "token reused with other parameters"
                )
            return dynamo_response(200, {})
        keys = InFlightItems.keys(body)
        if faithful.active:
            clashes = faithful.holding(keys)
            if any(clashes):
                faithful.injected["transaction conflict"] += 1
                return cancelled(["TransactionConflict" if c else "None" for c in clashes])
        if self.in_flight is None:
            response = await self._applied(request, "TransactWriteItems", body)
        else:
            async with self.in_flight.processing:
                self.in_flight.sent[keys[0]] += 1
                clashes = [self.in_flight.busy[k] > 0 for k in keys]
                if any(clashes):
                    self.in_flight.conflicts += 1
                    return cancelled(["TransactionConflict" if c else "None" for c in clashes])
                self.in_flight.busy.update(keys)
                try:
                    response = await self._applied(request, "TransactWriteItems", body)
                finally:
                    self.in_flight.busy.subtract(keys)
        if response.status_code == 200:
            if token:
                self.applied_tokens[token] = items
            if faithful.active:
                faithful.hold(keys)
        return response

    async def _forward(
        self, request: AWSPreparedRequest, body: Mapping[str, Any] | None = None
    ) -> AioAWSResponse:
        sent = await self._send(request, body)
        return AioAWSResponse(
            request.url, sent.status_code, _headers(dict(sent.headers)), _Body(sent.content)
        )

    async def _send(
        self, request: AWSPreparedRequest, body: Mapping[str, Any] | None = None
    ) -> httpx.Response:
        """The call as botocore built it (or with ``body`` instead), straight to the backend."""
        headers = {
            k: (v.decode() if isinstance(v, bytes) else v)
            for k, v in request.headers.items()
            if k.lower() != "content-length"
        }
        raw = request.body
        content = (
            json.dumps(body) if body is not None else raw if isinstance(raw, str | bytes) else None
        )
        async with httpx.AsyncClient(timeout=120, verify=TLS) as http:
            return await http.post(request.url, headers=headers, content=content)

    async def after_call(
        self, *, model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        body = context.get("faithful_body")
        if isinstance(body, dict) and "Error" not in parsed:
            await self._exact_limit(model.name, body, parsed, lagged=False)

    async def _exact_limit(
        self, operation: str, body: Mapping[str, Any], answer: dict[str, Any], *, lagged: bool
    ) -> None:
        """DynamoDB's ``LastEvaluatedKey`` on a page that stopped at ``Limit``, which moto leaves
        out when nothing follows (the next page is then empty): the key of the ``Limit``-th item
        the page read, filtered out or not, found by the same read again with no filter."""
        limit = body.get("Limit")
        if operation not in {"Query", "Scan"} or limit is None or answer.get("LastEvaluatedKey"):
            return
        shape = faithful.shapes.get(body["TableName"])
        if int(answer.get("ScannedCount", 0)) < int(limit) or shape is None:
            return
        names = list(shape.keys)
        if "IndexName" in body:
            names += [n for n in shape.indexes[body["IndexName"]] if n not in names]
        keep = ("TableName", "IndexName", "KeyConditionExpression", "ExclusiveStartKey")
        again: dict[str, Any] = {k: body[k] for k in keep if k in body} | {"Limit": limit}
        if operation == "Query":
            again["ScanIndexForward"] = body.get("ScanIndexForward", True)
        condition = body.get("KeyConditionExpression", "")
        used = set(re.findall(r"[#:][A-Za-z0-9_]+", condition))
        projection = [f"#faithful{i}" for i in range(len(names))]
        again["ProjectionExpression"] = ", ".join(projection)
        again["ExpressionAttributeNames"] = {
            k: v for k, v in body.get("ExpressionAttributeNames", {}).items() if k in used
        } | dict(zip(projection, names, strict=True))
        values = {k: v for k, v in body.get("ExpressionAttributeValues", {}).items() if k in used}
        if values:
            again["ExpressionAttributeValues"] = values
        if lagged and faithful.view is not None:
            status, found = await faithful.view.read(operation, again)
        else:
            status, found = await LaggingView(self.endpoint, self.region, 0).send(operation, again)
        items = found.get("Items", []) if status == 200 else []
        if len(items) >= int(limit):
            answer["LastEvaluatedKey"] = {n: items[-1][n] for n in names if n in items[-1]}

    def before_call(self, *, params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        """Keep the request's body for ``after_call``."""
        raw = params.get("body")
        with contextlib.suppress(ValueError, TypeError):
            context["faithful_body"] = json.loads(raw) if raw else {}


def install(client: Any, endpoint: str, *, in_flight: InFlightItems | None = None) -> Faults:
    """The client's ``Faults`` hook, installed the first time (``tests/conftest.py`` installs one
    on every client a test opens), its ``seen`` counting from now; ``in_flight`` shares per-item
    transaction conflicts."""
    found = getattr(client, "_faults", None)
    if isinstance(found, Faults):
        found.seen.clear()  # the calls counted from here, as for a hook installed now
        if in_flight is not None:
            found.in_flight = in_flight
        return found
    faults = Faults(endpoint, region=client.meta.region_name, in_flight=in_flight)
    client.meta.events.register_first("before-send.dynamodb", faults.before_send)
    client.meta.events.register("before-call.dynamodb", faults.before_call)
    client.meta.events.register("after-call.dynamodb", faults.after_call)
    client._faults = faults
    return faults
