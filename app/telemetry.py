"""What one request (or one benchmark step) cost in DynamoDB calls and capacity units: a
``CallStats`` bound to a context variable by whoever wants the figures (the request middleware, a
benchmark), filled by the adapter's client hook (``app.store.accounting``)."""

from __future__ import annotations

import contextvars
from collections import Counter
from dataclasses import dataclass, field


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
