"""Counts DynamoDB calls and consumed capacity per request, for the canonical log line and benches.

A ``CallStats`` is bound to a context variable by whoever wants the figures (the request middleware,
a benchmark); the client's ``after-call`` hook adds to whichever is bound.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CallStats:
    calls: Counter[str] = field(default_factory=Counter)
    read_units: float = 0.0
    write_units: float = 0.0

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())


current_stats: contextvars.ContextVar[CallStats | None] = contextvars.ContextVar(
    "dynamodb_call_stats", default=None
)


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
