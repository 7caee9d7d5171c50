"""Rate limits: token buckets per caller, in memory per process, and the headers that tell a caller
where it stands (``RateLimit-Policy`` and ``RateLimit`` as draft-ietf-httpapi-ratelimit-headers-11
defines them, ``Retry-After`` on a 429). How the buckets fill and empty, and what several tasks
behind a load balancer do to a limit: docs/security.md.
"""

from __future__ import annotations

import math
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from app.errors import RateLimited

Clock = Callable[[], float]
"""Seconds from a monotonic source; tests pass their own."""

_POLICY_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class RatePolicy:
    """``rate`` tokens a second, up to ``burst`` at once. ``name`` identifies the policy in the
    headers (a structured-field string, so kept to a plain token)."""

    rate: float
    burst: int
    name: str = "burst"

    def __post_init__(self) -> None:
        if not (self.rate > 0 and math.isfinite(self.rate)):
            raise ValueError(f"rate must be a positive number of tokens a second, got {self.rate}")
        if self.burst < 1:
            raise ValueError(f"burst must be at least 1, got {self.burst}")
        if not _POLICY_NAME.fullmatch(self.name):
            raise ValueError(f"policy name must match {_POLICY_NAME.pattern}, got {self.name!r}")

    @property
    def seconds_to_fill(self) -> float:
        """How long an empty bucket takes to fill: after this long idle, any bucket is full."""
        return self.burst / self.rate

    @property
    def window(self) -> int:
        """The policy's window in whole seconds (the draft allows no fractions, nor zero): ``burst``
        requests per ``window`` seconds is the bucket's sustained rate, rounded down."""
        return max(1, math.ceil(self.seconds_to_fill))


@dataclass(frozen=True)
class Decision:
    """One request's verdict. ``remaining`` is the whole tokens left after it; ``reset`` the seconds
    until the bucket is full again (on a refusal: until the next token, the same moment as
    ``retry_after``); ``retry_after`` is 0 when allowed."""

    allowed: bool
    remaining: int
    reset: int
    retry_after: int
    policy: RatePolicy


@dataclass
class _Bucket:
    tokens: float
    updated: float


@dataclass
class RateLimiter:
    """Token buckets under one policy, keyed by caller.

    Bounded memory: a bucket left alone for ``policy.seconds_to_fill`` is full, the same as a new
    one, so it is dropped without changing any answer; beyond ``max_buckets`` live buckets the
    least recently used is dropped (that caller starts again from a full bucket, which forgives
    rather than refuses: a flood of new keys cannot lock everyone else out).

    ``check`` never awaits, so on one event loop it is atomic without a lock.
    """

    policy: RatePolicy
    max_buckets: int = 10_000
    clock: Clock = time.monotonic
    _buckets: OrderedDict[str, _Bucket] = field(default_factory=OrderedDict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.max_buckets < 1:
            raise ValueError(f"max_buckets must be at least 1, got {self.max_buckets}")

    def __len__(self) -> int:
        return len(self._buckets)

    def check(self, key: str) -> Decision:
        """Take a token from ``key``'s bucket if it holds one; say what happened either way."""
        now = self.clock()
        self._drop_idle(now)
        policy = self.policy
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_buckets:
                self._buckets.popitem(last=False)
            bucket = self._buckets[key] = _Bucket(float(policy.burst), now)
        else:
            elapsed = max(0.0, now - bucket.updated)  # a clock that stepped back refills nothing
            bucket.tokens = min(float(policy.burst), bucket.tokens + elapsed * policy.rate)
            bucket.updated = now
            self._buckets.move_to_end(key)

        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return Decision(
                allowed=True,
                remaining=math.floor(bucket.tokens),
                reset=math.ceil((policy.burst - bucket.tokens) / policy.rate),
                retry_after=0,
                policy=policy,
            )
        # Whole seconds, rounded up: retrying after ``retry_after`` always finds a token.
        wait = math.ceil((1.0 - bucket.tokens) / policy.rate)
        return Decision(allowed=False, remaining=0, reset=wait, retry_after=wait, policy=policy)

    def enforce(self, key: str) -> Decision:
        """``check``, raising ``RateLimited`` on a refusal; the returned decision's headers belong
        on the successful response."""
        decision = self.check(key)
        if not decision.allowed:
            raise refusal(decision)
        return decision

    def _drop_idle(self, now: float) -> None:
        # Least recently used first: stop at the first bucket that may still be below full.
        idle_after = self.policy.seconds_to_fill
        while self._buckets:
            oldest = next(iter(self._buckets.values()))
            if now - oldest.updated < idle_after:
                return
            self._buckets.popitem(last=False)


def refusal(decision: Decision) -> RateLimited:
    """The 429 of a refused ``decision``: a request's, or one item's of a batch, where each item
    takes a token as a submission of its own does."""
    return RateLimited(
        f"rate limit exceeded: at most {decision.policy.burst} requests at once and "
        f"{decision.policy.rate:g} a second; retry after {decision.retry_after} s",
        limit_headers=ratelimit_headers(decision),
    )


def ratelimit_headers(decision: Decision) -> dict[str, str]:
    """The draft's structured fields for ``decision``, plus ``Retry-After`` on a refusal.

    ``RateLimit-Policy: "burst";q=<burst>;w=<window>`` and
    ``RateLimit: "burst";r=<remaining>;t=<reset>``. On a refusal ``t`` equals ``Retry-After``: the
    draft asks that Retry-After not point earlier than the end of the effective window.
    """
    policy = decision.policy
    headers = {
        "RateLimit-Policy": f'"{policy.name}";q={policy.burst};w={policy.window}',
        "RateLimit": f'"{policy.name}";r={decision.remaining};t={decision.reset}',
    }
    if not decision.allowed:
        headers["Retry-After"] = str(decision.retry_after)
    return headers
