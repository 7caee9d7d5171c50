"""Every DynamoDB call a client makes, traced on the client side with botocore's events, and the
round trips they form.

``before-parameter-build`` marks a call's start (and keeps its parameters), ``after-call`` and
``after-call-error`` its end (and keep DynamoDB's answer). A fixed artificial latency at
``before-send`` makes every call take at least that long, so calls issued together overlap
unambiguously even on a backend that serves one call at a time. The sequential round trips of a
request are the longest chain of its calls in which each starts after the previous one ended.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

label: contextvars.ContextVar[str | None] = contextvars.ContextVar("bench_label", default=None)
"""The operation a call belongs to (set by the driver around each request it sends)."""

_KEY = "bench_call"


@dataclass
class Call:
    seq: int
    operation: str
    params: dict[str, Any]
    start: float
    label: str | None
    end: float | None = None
    status: int | None = None
    error: str | None = None
    response: dict[str, Any] | None = None
    evaluated: list[dict[str, Any]] | None = None
    """For a COUNT or filtered Query: the items it evaluated (read back by ``Sizer``)."""

    @property
    def target(self) -> str:
        """What the call reads or writes, in a few words."""
        p = self.params
        if self.operation == "Query":
            where = p.get("IndexName") or "table"
            values = p.get("ExpressionAttributeValues", {})
            partition = next((v.get("S") for k, v in values.items() if k in {":p", ":b"}), "")
            kind = " COUNT" if p.get("Select") == "COUNT" else ""
            return f"{where}{kind} {partition}".strip()
        if self.operation == "TransactWriteItems":
            kinds = [next(iter(item)) for item in p.get("TransactItems", [])]
            return ", ".join(f"{kinds.count(k)} {k}" for k in dict.fromkeys(kinds))
        if self.operation == "BatchGetItem":
            return ", ".join(f"{len(r.get('Keys', []))} keys" for r in p["RequestItems"].values())
        key = p.get("Key") or p.get("Item") or {}
        return "/".join(str(v.get("S", v.get("N", ""))) for v in list(key.values())[:2])


@dataclass
class Tracer:
    """Hooks on one aiobotocore client. ``latency_s`` is added to every HTTP attempt."""

    latency_s: float = 0.0
    calls: list[Call] = field(default_factory=list)
    enabled: bool = True
    after: Callable[[Call], Awaitable[None]] | None = None
    """Awaited when a call has ended (``Sizer.read_back``), before its caller resumes."""
    _origin: float = field(default_factory=time.perf_counter)

    def install(self, client: Any) -> Tracer:
        events = client.meta.events
        events.register("before-parameter-build.dynamodb", self._started)
        events.register("after-call.dynamodb", self._ended)
        events.register("after-call-error.dynamodb", self._failed)
        events.register_first("before-send.dynamodb", self._delay)
        return self

    def now(self) -> float:
        return time.perf_counter() - self._origin

    def _started(
        self, params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any
    ) -> None:
        if not self.enabled:
            return
        call = Call(len(self.calls), model.name, dict(params), self.now(), label.get())
        self.calls.append(call)
        context[_KEY] = call

    async def _ended(
        self, http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any
    ) -> None:
        call: Call | None = context.get(_KEY)
        if call is None:
            return
        call.end = self.now()
        call.status = int(http_response.status_code)
        call.response = parsed
        if http_response.status_code >= 300:
            call.error = str(parsed.get("Error", {}).get("Code", "?"))
        if self.after is not None:
            await self.after(call)

    def _failed(self, exception: Exception, context: dict[str, Any], **_: Any) -> None:
        call: Call | None = context.get(_KEY)
        if call is not None:
            call.end = self.now()
            call.error = type(exception).__name__

    async def _delay(self, **_: Any) -> None:
        if self.latency_s and self.enabled:
            await asyncio.sleep(self.latency_s)

    def of(self, name: str) -> list[Call]:
        return [c for c in self.calls if c.label == name]

    @contextmanager
    def labelled(self, name: str) -> Iterator[None]:
        token = label.set(name)
        try:
            yield
        finally:
            label.reset(token)


def round_trip_levels(calls: Sequence[Call]) -> list[int]:
    """For each call, the length of the longest chain of calls ending with it in which each call
    starts after the previous one ended: its round trip (1-based). Calls issued together overlap,
    so they share a level."""
    order = sorted(range(len(calls)), key=lambda i: calls[i].start)
    levels = [0] * len(calls)
    for position, i in enumerate(order):
        start = calls[i].start
        before = [levels[j] for j in order[:position] if _ended_by(calls[j], start)]
        levels[i] = 1 + max(before, default=0)
    return levels


def _ended_by(call: Call, moment: float) -> bool:
    return call.end is not None and call.end <= moment


def round_trips(calls: Sequence[Call]) -> int:
    return max(round_trip_levels(calls), default=0)
