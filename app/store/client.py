"""The one way the adapter calls DynamoDB: a long-lived aioboto3 client, every call under the
process's bound on calls in flight, with its consumed capacity, and DynamoDB's errors translated
into the service's own at this edge (``app.errors``: services never see a ``ClientError``).

``Dynamo`` offers each operation the adapter uses once: one item read, one way to page a Query,
one conditional write (``applied``), one transaction, batches that resend what DynamoDB left
unprocessed. The modules beside this one (one per family of items) build keys and expressions
over it.
"""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast

import aioboto3
from aiobotocore.config import AioConfig
from botocore.exceptions import BotoCoreError, ClientError, ReadTimeoutError

from app import telemetry
from app.errors import (
    CancelKind,
    ConditionFailed,
    ItemBusy,
    LeaderboardError,
    StoreRejected,
    Throttled,
    TransactionCancelled,
    Unavailable,
)
from app.store.accounting import record_call
from app.store.items import Item

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb import DynamoDBClient

T = TypeVar("T")

_THROTTLED = frozenset(
    {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
)
_UNAVAILABLE = frozenset(
    {
        "InternalServerError",
        "ServiceUnavailable",
        "TransactionInProgressException",
        # A missing table or refused credentials: the deployment's fault, not the request's; the
        # readiness check reports them.
        "ResourceNotFoundException",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "MissingAuthenticationTokenException",
        "InvalidSignatureException",
        "ExpiredTokenException",
    }
)
_THROTTLED_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})
"""A transaction's cancellation reasons that mean throughput: botocore does not retry them, and
neither does the service (they are not contention)."""
_REJECTED_REASONS = frozenset({"ValidationError", "ItemCollectionSizeLimitExceeded"})
_BATCH_WRITE = 25
_BATCH_GET = 100
_BATCH_ATTEMPTS = 8


class TransactionItemsCancelled(TransactionCancelled):
    """A cancelled transaction with DynamoDB's reason for each item, in the order of the items:
    for the adapter that built the transaction to read (its services see only ``kind``)."""

    def __init__(self, detail: str, *, kind: CancelKind, item_reasons: Sequence[str | None]):
        super().__init__(detail, kind=kind)
        self.item_reasons = tuple(item_reasons)


class TransactionThrottled(Throttled):
    """A transaction DynamoDB cancelled for throughput (a ``ThrottlingError`` or
    ``ProvisionedThroughputExceeded`` reason, as a GSI or a partition that cannot keep up is
    reported inside a transaction), with the reason of each item."""

    def __init__(self, detail: str, *, item_reasons: Sequence[str | None]) -> None:
        super().__init__(detail, retry_after=1)
        self.item_reasons = tuple(item_reasons)


class ConditionFailedWithItem(ConditionFailed):
    """A condition failed on a write that asked for the item it found
    (``ReturnValuesOnConditionCheckFailure``)."""

    def __init__(self, detail: str, *, item: Item | None) -> None:
        super().__init__(detail)
        self.item = item


def translate(  # noqa: PLR0911 - a return per kind
    exc: Exception, what: str, *, read_timeout: float | None = None
) -> LeaderboardError:
    """One DynamoDB or transport error as the service's own; ``read_timeout``: the client's, in
    seconds, which a timeout's message names with the setting that changes it."""
    if isinstance(exc, ReadTimeoutError):
        within = f"{read_timeout:g} s, " if read_timeout is not None else ""
        return Unavailable(
            f"DynamoDB did not answer during {what} within the read timeout ({within}"
            "LEADERBOARD_DYNAMODB_READ_TIMEOUT_SECONDS), on any of botocore's 3 attempts: "
            "raise it where calls are slow (a large board on the embedded backend may need 60)",
            retry_after=1,
        )
    if not isinstance(exc, ClientError):
        return Unavailable(f"DynamoDB did not answer during {what}", retry_after=1)
    error = exc.response.get("Error", {})
    code = error.get("Code", "")
    if code == "ConditionalCheckFailedException":
        found = exc.response.get("Item")
        item = cast("Item", found) if isinstance(found, dict) and found else None
        return ConditionFailedWithItem(f"{what}: condition failed", item=item)
    if code == "TransactionCanceledException":
        reasons = [
            None if r.get("Code") in (None, "None") else r.get("Code")
            for r in exc.response.get("CancellationReasons", [])
        ]
        said = ", ".join(r or "None" for r in reasons)
        if _REJECTED_REASONS.intersection(reasons):
            return StoreRejected(f"DynamoDB refused {what} ({said})", code=f"{code} [{said}]")
        if _THROTTLED_REASONS.intersection(reasons):
            return TransactionThrottled(
                f"DynamoDB throttled {what} (transaction cancelled: {said})", item_reasons=reasons
            )
        return TransactionItemsCancelled(
            f"{what}: transaction cancelled", kind=_cancel_kind(reasons), item_reasons=reasons
        )
    if code == "IdempotentParameterMismatchException":
        # A token reused with other parameters: the caller re-reads and retries as a new request.
        return TransactionItemsCancelled(f"{what}: token mismatch", kind="other", item_reasons=())
    if code in _THROTTLED:
        return Throttled(f"DynamoDB throttled {what} ({code})", retry_after=1)
    if code == "TransactionConflictException":
        return ItemBusy(f"a transaction held the item during {what} ({code})", retry_after=1)
    if code in _UNAVAILABLE:
        return Unavailable(f"DynamoDB is unavailable ({code}) during {what}", retry_after=1)
    # ValidationException and anything unknown: DynamoDB refused the request we built.
    return StoreRejected(f"DynamoDB refused {what} ({code})", code=code or "unknown")


def _cancel_kind(reasons: Sequence[str | None]) -> CancelKind:
    if "TransactionConflict" in reasons:
        return "conflict"
    if "ConditionalCheckFailed" in reasons:
        return "condition"
    return "other"


class Dynamo:
    """The client, the bound on calls in flight (shared by every adapter of the process), and the
    operations over them. Every method takes ``what``: the words an error uses for the call."""

    def __init__(self, client: DynamoDBClient, *, in_flight: asyncio.Semaphore) -> None:
        self._client = client
        self._in_flight = in_flight
        self._closed = False

    @property
    def client(self) -> DynamoDBClient:
        return self._client

    def close(self) -> None:
        """No call from now on: the client is about to close. Work that outlives the requests
        that started it (a shared load a cancelled request left running) then fails with
        ``Unavailable`` instead of calling a closed client, which would open an HTTP session
        nobody closes."""
        self._closed = True

    async def call(self, what: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Run one call under the bound, translating its errors. ``operation`` makes the call only
        when invoked, so a call cancelled while it waits for a place is never started."""
        try:
            async with self._in_flight:
                if self._closed:
                    raise Unavailable(f"the service is stopping: no DynamoDB call ({what})")
                return await operation()
        except (ClientError, BotoCoreError) as exc:
            error = translate(exc, what, read_timeout=_read_timeout(self._client))
            _count(error)
            raise error from exc

    async def applied(self, write: Awaitable[object]) -> bool:
        """The one way to make a conditional write: ``False`` when its condition failed."""
        try:
            await write
        except ConditionFailed:
            return False
        return True

    async def get_item(
        self,
        what: str,
        *,
        table: str,
        key: Item,
        consistent: bool = True,
        projection: str | None = None,
    ) -> Item | None:
        kwargs: dict[str, Any] = {"TableName": table, "Key": key, "ConsistentRead": consistent}
        if projection is not None:
            kwargs["ProjectionExpression"] = projection
        found = await self.call(
            what, lambda: self._client.get_item(ReturnConsumedCapacity="TOTAL", **kwargs)
        )
        return found.get("Item")

    async def put_item(self, what: str, **kwargs: Any) -> None:
        await self.call(
            what, lambda: self._client.put_item(ReturnConsumedCapacity="TOTAL", **kwargs)
        )

    async def update_item(self, what: str, **kwargs: Any) -> Item | None:
        """The attributes ``ReturnValues`` asked for, if any."""
        found = await self.call(
            what, lambda: self._client.update_item(ReturnConsumedCapacity="TOTAL", **kwargs)
        )
        return found.get("Attributes")

    async def delete_item(self, what: str, **kwargs: Any) -> None:
        await self.call(
            what, lambda: self._client.delete_item(ReturnConsumedCapacity="TOTAL", **kwargs)
        )

    async def query(self, what: str, **kwargs: Any) -> dict[str, Any]:
        """One page of a Query, as DynamoDB answered it."""
        page = await self.call(
            what, lambda: self._client.query(ReturnConsumedCapacity="TOTAL", **kwargs)
        )
        return dict(page)

    async def query_pages(self, what: str, **kwargs: Any) -> AsyncIterator[dict[str, Any]]:
        """Every page of a Query, following ``LastEvaluatedKey``."""
        while True:
            page = await self.query(what, **kwargs)
            yield page
            start = page.get("LastEvaluatedKey")
            if not start:
                return
            kwargs["ExclusiveStartKey"] = start

    async def query_all(self, what: str, **kwargs: Any) -> list[Item]:
        return [item async for page in self.query_pages(what, **kwargs) for item in page["Items"]]

    async def scan_all(self, what: str, **kwargs: Any) -> list[Item]:
        items: list[Item] = []
        while True:
            page = await self.call(
                what, lambda: self._client.scan(ReturnConsumedCapacity="TOTAL", **kwargs)
            )
            items.extend(page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                return items
            kwargs["ExclusiveStartKey"] = start

    async def transact(
        self, what: str, items: Sequence[dict[str, Any]], *, token: str | None = None
    ) -> None:
        """One TransactWriteItems; ``TransactionCancelled`` when it was not applied."""
        kwargs: dict[str, Any] = {"TransactItems": list(items)}
        if token is not None:
            kwargs["ClientRequestToken"] = token
        await self.call(
            what,
            lambda: self._client.transact_write_items(ReturnConsumedCapacity="TOTAL", **kwargs),
        )

    async def batch_write(
        self, what: str, *, table: str, requests: Sequence[dict[str, Any]]
    ) -> None:
        """BatchWriteItem in chunks of 25, resending what DynamoDB left unprocessed (it does under
        throttling) with jittered backoff, bounded."""

        def send(items: dict[str, Any]) -> Awaitable[Any]:
            return self._client.batch_write_item(RequestItems=items, ReturnConsumedCapacity="TOTAL")

        for first in range(0, len(requests), _BATCH_WRITE):
            chunk = {table: list(requests[first : first + _BATCH_WRITE])}
            await self._until_processed(what, chunk, send, unprocessed="UnprocessedItems")

    async def batch_get(
        self,
        what: str,
        *,
        table: str,
        keys: Sequence[Item],
        projection: str | None = None,
        consistent: bool = True,
        attempts: int | None = None,
    ) -> list[Item]:
        """BatchGetItem in chunks of 100 (strongly consistent unless not ``consistent``), resending
        unprocessed keys, at most ``attempts`` calls a chunk (``Unavailable`` past them)."""

        def send(items: dict[str, Any]) -> Awaitable[Any]:
            return self._client.batch_get_item(RequestItems=items, ReturnConsumedCapacity="TOTAL")

        found: list[Item] = []
        for first in range(0, len(keys), _BATCH_GET):
            request: dict[str, Any] = {"Keys": list(keys[first : first + _BATCH_GET])}
            request["ConsistentRead"] = consistent
            if projection is not None:
                request["ProjectionExpression"] = projection
            for answer in await self._until_processed(
                what, {table: request}, send, unprocessed="UnprocessedKeys", attempts=attempts
            ):
                found.extend(answer.get("Responses", {}).get(table, []))
        return found

    async def _until_processed(
        self,
        what: str,
        pending: dict[str, Any],
        send: Callable[[dict[str, Any]], Awaitable[Any]],
        *,
        unprocessed: str,
        attempts: int | None = None,
    ) -> list[Any]:
        answers: list[Any] = []
        for attempt in range(attempts or _BATCH_ATTEMPTS):
            await _backoff(attempt)
            answer = await self.call(what, functools.partial(send, pending))
            answers.append(answer)
            pending = answer.get(unprocessed) or {}
            if not pending:
                return answers
        raise Unavailable(f"DynamoDB left part of {what} unprocessed", retry_after=1)


def _read_timeout(client: DynamoDBClient) -> float | None:
    """The client's read timeout in seconds (botocore's ``Config`` is untyped there)."""
    config = getattr(getattr(client, "meta", None), "config", None)
    timeout = getattr(config, "read_timeout", None)
    return float(timeout) if isinstance(timeout, int | float) else None


def _count(error: LeaderboardError) -> None:
    if isinstance(error, Throttled):
        telemetry.dynamodb_failed("throttled")
    elif isinstance(error, ItemBusy):
        telemetry.dynamodb_failed("busy")
    elif isinstance(error, Unavailable):
        telemetry.dynamodb_failed("unavailable")
    elif isinstance(error, StoreRejected):
        telemetry.dynamodb_failed("rejected")


async def _backoff(attempt: int) -> None:
    if attempt:
        await asyncio.sleep(random.uniform(0, min(1.0, 0.05 * 2**attempt)))


def client_config(
    *,
    max_pool_connections: int = 64,
    connect_timeout: float = 2.0,
    read_timeout: float = 5.0,
    attempts: int = 3,
) -> AioConfig:
    """Retries and timeouts set on purpose: standard mode (it backs off on throttling and retries
    transient 5xx and timeouts), 3 attempts; connect 2 s, read 5 s. Cancelled transactions are not
    retried by botocore and are re-read and retried by the service.

    The pool holds ``max_pool_connections``: the service passes its bound on calls in flight, so
    that every call the bound lets through finds a connection (past the pool a call waits for one,
    and no timeout covers that wait)."""
    return AioConfig(
        retries={"mode": "standard", "max_attempts": attempts},
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        max_pool_connections=max_pool_connections,
    )


@functools.cache
def _local_session() -> aioboto3.Session:
    """One session for the process's clients of a local endpoint (given their credentials, so it
    resolves none): a new one reads DynamoDB's service model and endpoint rules again, a cost a
    process that opens many clients (the tests, the benchmark) would pay for each. It holds no
    event loop's state. A client on AWS gets a session of its own, which resolves the credential
    chain as the environment is when it is made; the service makes one."""
    return aioboto3.Session()


@asynccontextmanager
async def open_client(
    *,
    endpoint: str | None,
    region: str,
    dummy_credentials: bool,
    read_timeout: float = 5.0,
    max_pool_connections: int = 64,
    probe: bool = False,
) -> AsyncIterator[DynamoDBClient]:
    """One DynamoDB client for the life of the process, counting calls for the request log; its
    pool holds ``max_pool_connections`` (the process's bound on calls in flight). A ``probe``
    client (the readiness check's) asks once, connecting within 1 s and answered within 2 s:
    a DynamoDB that refuses connections is told at once, not after botocore's backoff."""
    session = _local_session() if dummy_credentials else aioboto3.Session()
    secret = "local" if dummy_credentials else None  # DynamoDB Local and moto take any
    config = (
        client_config(max_pool_connections=2, connect_timeout=1.0, read_timeout=2.0, attempts=1)
        if probe
        else client_config(max_pool_connections=max_pool_connections, read_timeout=read_timeout)
    )
    async with session.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name=region,
        config=config,
        aws_access_key_id=secret,
        aws_secret_access_key=secret,
    ) as client:
        client.meta.events.register("after-call.dynamodb", record_call)
        try:
            yield client
        finally:
            _refuse_calls_once_closed(client)


class ClientClosed(RuntimeError):
    """A call on a DynamoDB client after it closed."""


def _refuse_calls_once_closed(client: DynamoDBClient) -> None:
    """aiobotocore opens a client's HTTP session on its first call, and opens another on a call
    made after the client closed, which nothing then closes (an ``Unclosed client session``
    at garbage collection). Once the client closes, such a call fails instead, saying so: work
    that outlives the client (``Dynamo.close`` stops the service's own) cannot leak."""
    http = getattr(getattr(client, "_endpoint", None), "http_session", None)
    if http is None or not hasattr(http, "_get_session"):
        return  # another aiobotocore: nothing to guard

    async def closed(proxy_url: object) -> None:
        raise ClientClosed("a DynamoDB call on a client that has closed")

    http._get_session = closed
