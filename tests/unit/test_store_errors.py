"""DynamoDB's errors as the service's own, translated at the adapter's edge."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from app.errors import (
    ConditionFailed,
    ItemBusy,
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


@pytest.mark.parametrize(
    "reasons",
    [
        ["ThrottlingError"],
        ["None", "ProvisionedThroughputExceeded"],
        ["TransactionConflict", "ThrottlingError"],
    ],
)
def test_a_transaction_cancelled_for_throughput_is_throttled_not_contention(
    reasons: list[str],
) -> None:
    error = translate(
        client_error(
            "TransactionCanceledException", CancellationReasons=[{"Code": r} for r in reasons]
        ),
        "writing the score",
    )
    assert isinstance(error, Throttled)
    assert not isinstance(error, TransactionCancelled)  # nothing retries it as contention
    assert "throttled" in error.detail


@pytest.mark.parametrize(
    "reasons", [["ValidationError"], ["None", "ValidationError", "ThrottlingError"]]
)
def test_a_transaction_dynamodb_found_invalid_is_a_refusal_not_retried(
    reasons: list[str],
) -> None:
    error = translate(
        client_error(
            "TransactionCanceledException", CancellationReasons=[{"Code": r} for r in reasons]
        ),
        "writing the score",
    )
    assert isinstance(error, StoreRejected)
    assert "ValidationError" in error.code


def test_a_plain_write_on_an_item_a_transaction_holds_is_busy() -> None:
    error = translate(client_error("TransactionConflictException"), "repairing a counter")
    assert isinstance(error, ItemBusy)
    assert error.status == 503


def test_a_reused_token_is_a_cancelled_attempt() -> None:
    error = translate(client_error("IdempotentParameterMismatchException"), "writing the score")
    assert isinstance(error, TransactionCancelled)
    assert error.kind == "other"


def test_a_failed_condition_carries_the_item_it_found() -> None:
    item = {"playerId": {"S": "idem#c#k"}, "status": {"S": "completed"}}
    error = translate(client_error("ConditionalCheckFailedException", Item=item), "reserving")
    assert isinstance(error, ConditionFailed)
    assert getattr(error, "item", None) == item
