"""Faults injected at botocore's ``before-send`` event, where moto cannot produce them itself.

moto never raises ``TransactionConflict`` or throttles, and ignores ``ClientRequestToken``. The
``Faults`` hook answers chosen calls with DynamoDB's own error bodies, can let a call reach the
server and then lose its response (a read timeout after commit), and emulates DynamoDB's token
rule for ``TransactWriteItems``: a resent call with a token already applied succeeds without being
applied again, and the same token with other parameters is ``IdempotentParameterMismatch``.
"""

from __future__ import annotations

import asyncio
import json
import random
import ssl
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from aiobotocore.awsrequest import AioAWSResponse
from botocore.awsrequest import AWSPreparedRequest
from botocore.compat import HTTPHeaders
from botocore.exceptions import ReadTimeoutError

_PREFIX = "com.amazonaws.dynamodb.v20120810#"
_TLS = ssl.create_default_context()
"""Built once: a client building its own loads the CA bundle each time, ~45 ms a call."""


class _Body:
    def __init__(self, data: bytes) -> None:
        self._data = data

    async def read(self) -> bytes:
        return self._data


def dynamo_response(status: int, body: dict[str, Any]) -> AioAWSResponse:
    headers = _headers({"Content-Type": "application/x-amz-json-1.0", "x-amzn-RequestId": "f"})
    return AioAWSResponse("http://fault", status, headers, _Body(json.dumps(body).encode()))


def _headers(values: dict[str, str]) -> HTTPHeaders:
    headers = HTTPHeaders()
    for name, value in values.items():
        headers[name] = value
    return headers


def cancelled(reasons: list[str]) -> AioAWSResponse:
    return dynamo_response(
        400,
        {
            "__type": _PREFIX + "TransactionCanceledException",
            "message": f"Transaction cancelled, please refer cancellation reasons [{', '.join(reasons)}]",
            "CancellationReasons": [{"Code": reason} for reason in reasons],
        },
    )


def throttled() -> AioAWSResponse:
    return dynamo_response(
        400, {"__type": _PREFIX + "ThrottlingException", "message": "Rate exceeded"}
    )


def rejected(message: str) -> AioAWSResponse:
    """DynamoDB refusing a request as malformed."""
    return dynamo_response(400, {"__type": _PREFIX + "ValidationException", "message": message})


Rule = Callable[[str, dict[str, Any]], AioAWSResponse | None]


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
    def keys(body: dict[str, Any]) -> list[str]:
        keys = []
        for action in body.get("TransactItems", []):
            (operation,) = action.values()
            key = operation.get("Key") or {
                name: operation["Item"][name] for name in ("playerId", "leaderboardId")
            }
            keys.append(operation["TableName"] + json.dumps(key, sort_keys=True))
        return keys


@dataclass
class Faults:
    endpoint: str
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
        if self.delay_s or self.jitter_s:
            await asyncio.sleep(self.delay_s + self.rng.uniform(0, self.jitter_s))
        raw = request.body
        body = json.loads(raw if isinstance(raw, str | bytes) and raw else b"{}")
        for rule in self.rules:
            response = rule(operation, body)
            if response is not None:
                return response
        if self.lose[operation] > 0:
            self.lose[operation] -= 1
            await self._forward(request)
            raise ReadTimeoutError(endpoint_url=self.endpoint)
        if operation != "TransactWriteItems":
            return None
        response = await self._transact(request, body)
        if response.status_code == 200 and self.lose_responses > 0:
            self.lose_responses -= 1
            raise ReadTimeoutError(endpoint_url=self.endpoint)
        return response

    async def _transact(self, request: AWSPreparedRequest, body: dict[str, Any]) -> AioAWSResponse:
        """As DynamoDB answers a transaction: by its token, by per-item conflicts, or by applying it."""
        token = body.get("ClientRequestToken")
        items = json.dumps(body.get("TransactItems"), sort_keys=True)
        if token in self.applied_tokens:
            if self.applied_tokens[token] != items:
                return dynamo_response(
                    400,
                    {
                        "__type": _PREFIX + "IdempotentParameterMismatchException",
                        "message": "token reused with other parameters",
                    },
                )
            return dynamo_response(200, {})
        if self.in_flight is None:
            response = await self._forward(request)
        else:
            async with self.in_flight.processing:
                keys = InFlightItems.keys(body)
                self.in_flight.sent[keys[0]] += 1
                clashes = [self.in_flight.busy[k] > 0 for k in keys]
                if any(clashes):
                    self.in_flight.conflicts += 1
                    return cancelled(["TransactionConflict" if c else "None" for c in clashes])
                self.in_flight.busy.update(keys)
                try:
                    response = await self._forward(request)
                finally:
                    self.in_flight.busy.subtract(keys)
        if response.status_code == 200 and token:
            self.applied_tokens[token] = items
        return response

    async def _forward(self, request: AWSPreparedRequest) -> AioAWSResponse:
        headers = {
            k: (v.decode() if isinstance(v, bytes) else v) for k, v in request.headers.items()
        }
        raw = request.body
        content = raw if isinstance(raw, str | bytes) else None
        async with httpx.AsyncClient(timeout=120, verify=_TLS) as http:
            sent = await http.post(request.url, headers=headers, content=content)
        return AioAWSResponse(
            request.url, sent.status_code, _headers(dict(sent.headers)), _Body(sent.content)
        )


def install(client: Any, endpoint: str, *, in_flight: InFlightItems | None = None) -> Faults:
    faults = Faults(endpoint, in_flight=in_flight)
    client.meta.events.register_first("before-send.dynamodb", faults.before_send)
    return faults


def fail_first(
    operation: str, times: int, make: Callable[[dict[str, Any]], AioAWSResponse]
) -> Rule:
    """A rule answering the first ``times`` calls of ``operation`` with ``make(body)``."""
    remaining = [times]

    def rule(op: str, body: dict[str, Any]) -> AioAWSResponse | None:
        if op != operation or remaining[0] <= 0:
            return None
        remaining[0] -= 1
        return make(body)

    return rule


def conflict_on_row(body: dict[str, Any]) -> AioAWSResponse:
    """Cancel as DynamoDB does when another transaction holds the score row (the first item)."""
    reasons = ["None"] * len(body.get("TransactItems", []))
    reasons[0] = "TransactionConflict"
    return cancelled(reasons)
