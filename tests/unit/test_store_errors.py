"""DynamoDB's errors as the service's own, translated at the adapter's edge."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from app.errors import (
    ConditionFailed,
    StoreRejected,
    Throttled,
    TransactionCancelled,
    Unavailable,
)
from app.store.client import TransactionItemsCancelled, translate


def client_error(code: str, **extra: Any) -> ClientError:
    response: dict[str, Any] = {"Error": {"Code": code, "Message": "m"}, **extra}
    return ClientError(response, "TransactWriteItems")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "code",
    ["ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded"],
)
def test_throttling_is_its_own_error_served_as_503(code: str) -> None:
    error = translate(client_error(code), "reading")
    assert isinstance(error, Throttled)
    assert (error.status, error.headers()) == (503, {"Retry-After": "1"})


@pytest.mark.parametrize(
    "code", ["InternalServerError", "ServiceUnavailable", "ResourceNotFoundException"]
)
def test_a_failing_dynamodb_is_unavailable_not_throttled(code: str) -> None:
    error = translate(client_error(code), "reading")
    assert isinstance(error, Unavailable)
    assert not isinstance(error, Throttled)


@pytest.mark.parametrize("code", ["ValidationException", "SerializationException", "Brand::New"])
def test_a_request_dynamodb_refuses_as_malformed_is_our_bug_a_500(code: str) -> None:
    error = translate(client_error(code), "writing the score")
    assert isinstance(error, StoreRejected)
    assert (error.status, error.code) == (500, code)


def test_a_transport_failure_is_unavailable() -> None:
    error = translate(ReadTimeoutError(endpoint_url="http://x"), "reading")
    assert type(error) is Unavailable


@pytest.mark.parametrize(
    ("reasons", "kind"),
    [
        (["None", "TransactionConflict"], "conflict"),
        (["ConditionalCheckFailed", "None"], "condition"),
        (["ConditionalCheckFailed", "TransactionConflict"], "conflict"),
        (["ThrottlingError"], "other"),
    ],
)
def test_a_cancelled_transaction_says_why_and_keeps_each_items_reason(
    reasons: list[str], kind: str
) -> None:
    error = translate(
        client_error(
            "TransactionCanceledException",
            CancellationReasons=[{"Code": r} for r in reasons],
        ),
        "writing the score",
    )
    assert isinstance(error, TransactionItemsCancelled)
    assert error.kind == kind
    assert error.item_reasons == tuple(None if r == "None" else r for r in reasons)


def test_a_reused_token_is_a_cancelled_attempt() -> None:
    error = translate(client_error("IdempotentParameterMismatchException"), "writing the score")
    assert isinstance(error, TransactionCancelled)
    assert error.kind == "other"


def test_a_failed_condition_carries_the_item_it_found() -> None:
    item = {"playerId": {"S": "idem#c#k"}, "status": {"S": "completed"}}
    error = translate(client_error("ConditionalCheckFailedException", Item=item), "reserving")
    assert isinstance(error, ConditionFailed)
    assert getattr(error, "item", None) == item
