"""Token buckets: burst, refill, refusals with the right Retry-After, the draft's headers, and the
bound on memory. Time is a hand-driven clock: no test sleeps."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.api.ratelimit import RateLimiter, RatePolicy, ratelimit_headers
from app.errors import LeaderboardError, RateLimited


class HandClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def limiter(rate: float, burst: int, *, max_buckets: int = 10_000) -> tuple[RateLimiter, HandClock]:
    clock = HandClock()
    return RateLimiter(RatePolicy(rate, burst), max_buckets=max_buckets, clock=clock), clock


def test_a_full_burst_is_allowed_then_the_next_request_is_refused() -> None:
    limits, _ = limiter(rate=1, burst=3)
    decisions = [limits.check("trivia-server") for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]
    assert decisions[-1].retry_after == 1
    assert [d.retry_after for d in decisions[:3]] == [0, 0, 0]


def test_tokens_come_back_at_the_rate_and_no_faster() -> None:
    limits, clock = limiter(rate=2, burst=2)
    assert limits.check("k").allowed
    assert limits.check("k").allowed
    assert not limits.check("k").allowed
    clock.advance(0.49)  # 0.98 of a token
    assert not limits.check("k").allowed
    clock.advance(0.01)
    assert limits.check("k").allowed
    assert not limits.check("k").allowed


def test_refill_stops_at_the_burst() -> None:
    limits, clock = limiter(rate=5, burst=3)
    limits.check("k")
    clock.advance(3600)
    assert sum(limits.check("k").allowed for _ in range(10)) == 3


@pytest.mark.parametrize(
    ("rate", "elapsed", "retry_after"),
    [
        (0.25, 0.0, 4),  # one token every 4 s, just spent
        (0.25, 1.0, 3),
        (0.25, 3.5, 1),  # half a second to go still says 1: never 0, never early
        (10.0, 0.0, 1),  # a tenth of a second rounds up to the one second HTTP can say
    ],
)
def test_retry_after_is_the_whole_seconds_until_a_token(
    rate: float, elapsed: float, retry_after: int
) -> None:
    limits, clock = limiter(rate=rate, burst=1)
    assert limits.check("k").allowed
    clock.advance(elapsed)
    refused = limits.check("k")
    assert not refused.allowed
    assert refused.retry_after == retry_after
    assert refused.reset == retry_after
    clock.advance(retry_after)
    assert limits.check("k").allowed, "retrying after Retry-After must succeed"


def test_callers_have_their_own_buckets() -> None:
    limits, _ = limiter(rate=1, burst=1)
    assert limits.check("trivia-server").allowed
    assert not limits.check("trivia-server").allowed
    assert limits.check("chess-server").allowed


def test_a_clock_stepping_back_refills_nothing() -> None:
    limits, clock = limiter(rate=1, burst=1)
    assert limits.check("k").allowed
    clock.advance(-50)
    assert not limits.check("k").allowed


def test_reset_is_the_time_to_a_full_bucket() -> None:
    limits, clock = limiter(rate=2, burst=10)
    for _ in range(4):
        decision = limits.check("k")
    assert decision.remaining == 6
    assert decision.reset == 2  # 4 tokens at 2 a second
    clock.advance(0.75)  # 1.5 tokens back: 7.5, one spent: 6.5 left, 3.5 to go at 2/s
    decision = limits.check("k")
    assert (decision.remaining, decision.reset) == (6, 2)


# ---- headers ------------------------------------------------------------------------------------

_SF_ITEM = re.compile(r'^"(?P<name>[a-z][a-z0-9_-]*)"(?P<params>(;[a-z]+=\d+)+)$')


def _params(value: str) -> tuple[str, dict[str, int]]:
    match = _SF_ITEM.fullmatch(value)
    assert match, f"not a structured-field item with integer parameters: {value!r}"
    pairs = (p.split("=") for p in match["params"].strip(";").split(";"))
    return match["name"], {k: int(v) for k, v in pairs}


def test_headers_of_an_allowed_request() -> None:
    limits, _ = limiter(rate=10, burst=20)
    headers = ratelimit_headers(limits.check("k"))
    assert headers == {
        "RateLimit-Policy": '"burst";q=20;w=2',
        "RateLimit": '"burst";r=19;t=1',
    }
    assert _params(headers["RateLimit-Policy"]) == ("burst", {"q": 20, "w": 2})


def test_headers_of_a_refusal_carry_retry_after_at_the_end_of_the_window() -> None:
    limits, clock = limiter(rate=0.5, burst=2)
    limits.check("k")
    limits.check("k")
    clock.advance(0.5)
    headers = ratelimit_headers(limits.check("k"))
    name, params = _params(headers["RateLimit"])
    assert name == "burst"
    assert params == {"r": 0, "t": 2}  # 0.25 of a token: 1.5 s to go, said as 2
    assert headers["Retry-After"] == "2"
    # The draft: Retry-After SHOULD NOT point before the end of the effective window.
    assert int(headers["Retry-After"]) >= params["t"]
    assert _params(headers["RateLimit-Policy"]) == ("burst", {"q": 2, "w": 4})


@pytest.mark.parametrize(
    ("rate", "burst", "window"),
    [(10, 20, 2), (100, 20, 1), (3, 10, 4), (0.5, 1, 2), (1000, 1, 1)],
)
def test_the_policy_window_is_whole_seconds_and_never_zero(
    rate: float, burst: int, window: int
) -> None:
    assert RatePolicy(rate, burst).window == window


def test_the_policy_name_is_configurable_and_kept_to_a_token() -> None:
    limits = RateLimiter(RatePolicy(1, 5, name="writes"))
    assert ratelimit_headers(limits.check("k"))["RateLimit"].startswith('"writes";')
    with pytest.raises(ValueError, match="policy name"):
        RatePolicy(1, 5, name='bad"name')


def test_rate_limited_is_a_429_problem_with_the_headers() -> None:
    limits, _ = limiter(rate=1, burst=1)
    limits.enforce("k")
    with pytest.raises(RateLimited) as caught:
        limits.enforce("k")
    error = caught.value
    assert isinstance(error, LeaderboardError)
    assert error.status == 429
    assert error.problem("/v1/scores")["type"] == "/problems/rate-limited"
    assert error.headers() == {
        "RateLimit-Policy": '"burst";q=1;w=1',
        "RateLimit": '"burst";r=0;t=1',
        "Retry-After": "1",
    }


def test_enforce_returns_the_decision_when_allowed() -> None:
    limits, _ = limiter(rate=1, burst=2)
    decision = limits.enforce("k")
    assert decision.allowed
    assert decision.remaining == 1


@pytest.mark.parametrize(("rate", "burst"), [(0, 1), (-1, 1), (math.inf, 1), (math.nan, 1), (1, 0)])
def test_nonsense_policies_are_refused(rate: float, burst: int) -> None:
    with pytest.raises(ValueError, match="must be"):
        RatePolicy(rate, burst)


# ---- memory -------------------------------------------------------------------------------------


def test_the_number_of_buckets_is_capped_least_recently_used_first() -> None:
    limits, _ = limiter(rate=1, burst=1, max_buckets=3)
    limits.check("a")  # spent
    for key in ("b", "c", "d", "e"):
        limits.check(key)
        assert len(limits) <= 3
    assert len(limits) == 3
    # "a" was dropped: it starts again from a full bucket (forgiving, never locking anyone out).
    assert limits.check("a").allowed


def test_a_recently_used_bucket_survives_the_cap() -> None:
    limits, _ = limiter(rate=1, burst=1, max_buckets=2)
    limits.check("busy")
    limits.check("other")
    assert not limits.check("busy").allowed  # touched: now the most recent
    limits.check("newcomer")  # drops "other", not "busy"
    assert not limits.check("busy").allowed


def test_idle_buckets_are_dropped_once_they_would_be_full() -> None:
    limits, clock = limiter(rate=2, burst=4)  # any bucket is full after 2 s
    for key in range(100):
        limits.check(f"client-{key}")
    assert len(limits) == 100
    clock.advance(1.9)
    limits.check("late")
    assert len(limits) == 101, "dropped a bucket that was not yet full"
    clock.advance(0.1)
    limits.check("later")
    assert len(limits) == 2


def test_nonsense_bounds_are_refused() -> None:
    with pytest.raises(ValueError, match="max_buckets"):
        RateLimiter(RatePolicy(1, 1), max_buckets=0)


@given(
    rate=st.floats(min_value=0.1, max_value=50),
    burst=st.integers(min_value=1, max_value=20),
    gaps=st.lists(st.floats(min_value=0, max_value=2), min_size=1, max_size=200),
)
def test_no_window_ever_admits_more_than_burst_plus_rate_times_its_length(
    rate: float, burst: int, gaps: list[float]
) -> None:
    clock = HandClock()
    limits = RateLimiter(RatePolicy(rate, burst), clock=clock)
    admitted: list[float] = []
    for gap in gaps:
        clock.advance(gap)
        if limits.check("k").allowed:
            admitted.append(clock.now)
    for i, start in enumerate(admitted):
        for j in range(i, len(admitted)):
            span = admitted[j] - start
            assert j - i + 1 <= burst + rate * span + 1e-6
