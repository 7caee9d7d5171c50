"""The client's ``after-call`` hook: each DynamoDB call and its consumed capacity, to the process's
metrics and to the ``app.telemetry.CallStats`` bound for the request (or benchmark step), if any."""

from __future__ import annotations

from typing import Any

from app import telemetry

_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


def record_call(*, model: Any, parsed: dict[str, Any], **_: Any) -> None:
    """botocore ``after-call.dynamodb`` handler (it runs for answered calls, errors included)."""
    read = write = 0.0
    consumed = parsed.get("ConsumedCapacity")
    for item in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
        read += float(item.get("ReadCapacityUnits", 0) or 0)
        write += float(item.get("WriteCapacityUnits", 0) or 0)
        if "ReadCapacityUnits" not in item and "WriteCapacityUnits" not in item:
            # moto and some operations give only a total; count it as writes for write calls.
            total = float(item.get("CapacityUnits", 0) or 0)
            if model.name in _WRITES:
                write += total
            else:
                read += total
    retries = int(parsed.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0)
    telemetry.dynamodb_call(model.name, read_units=read, write_units=write, retries=retries)
    stats = telemetry.current_stats.get()
    if stats is not None:
        stats.calls[model.name] += 1
        stats.read_units += read
        stats.write_units += write
