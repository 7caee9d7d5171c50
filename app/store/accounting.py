"""The client's ``after-call`` hook: adds each DynamoDB call and its consumed capacity to the
``app.telemetry.CallStats`` bound for the request (or benchmark step), if any."""

from __future__ import annotations

from typing import Any

from app.telemetry import current_stats


def record_call(*, model: Any, parsed: dict[str, Any], **_: Any) -> None:
    """botocore ``after-call.dynamodb`` handler."""
    stats = current_stats.get()
    if stats is None:
        return
    stats.calls[model.name] += 1
    consumed = parsed.get("ConsumedCapacity")
    for item in consumed if isinstance(consumed, list) else [consumed] if consumed else []:
        stats.read_units += float(item.get("ReadCapacityUnits", 0) or 0)
        stats.write_units += float(item.get("WriteCapacityUnits", 0) or 0)
        if "ReadCapacityUnits" not in item and "WriteCapacityUnits" not in item:
            # moto and some operations give only a total; count it as writes for write calls.
            total = float(item.get("CapacityUnits", 0) or 0)
            if model.name in {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems"}:
                stats.write_units += total
            else:
                stats.read_units += total
