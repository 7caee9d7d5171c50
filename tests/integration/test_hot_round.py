"""A live round onto one board through a proxy that throttles each partition key at DynamoDB's
documented rates, scaled by 1/250 with the load (``bench/hot_round.py``; the full sweep and its
figures are in docs/scale.md). An unsharded board throttles and says so; a 16-shard board takes
the same round; nothing is lost or counted twice on either."""

from __future__ import annotations

import pytest

from bench.hot_round import RoundResult, run_round

SCALE = 0.004
"""Every partition's rates, and the load, times this: 40 submissions a second stand for 10,000."""


def _says_throttled(result: RoundResult) -> None:
    assert result.wrong == [], result.wrong  # every 200 on the board once, nothing else changed
    assert result.answers["503 throttled"] > 0, result.answers
    assert result.gave_up > 0
    assert result.throttled_calls, "the proxy throttled nothing"


@pytest.mark.parametrize(
    ("improvements", "rate"), [(False, 40.0), (True, 16.0)], ids=["new-players", "improvements"]
)
async def test_one_shard_throttles_and_sixteen_take_the_round(
    dynamo_endpoint: str, improvements: bool, rate: float
) -> None:
    one = await run_round(
        dynamo_endpoint, shards=1, rate=rate, scale=SCALE, seconds=4, improvements=improvements
    )
    _says_throttled(one)
    sixteen = await run_round(
        dynamo_endpoint, shards=16, rate=rate, scale=SCALE, seconds=4, improvements=improvements
    )
    assert sixteen.wrong == [], sixteen.wrong
    assert sixteen.share_within_deadline >= 0.99, (sixteen.answers, sixteen.throttled_keys)
    assert one.share_within_deadline < sixteen.share_within_deadline
    print(f"k=1: {one.share_within_deadline:.1%}, k=16: {sixteen.share_within_deadline:.1%}")
    print(f"given up after a cut at the deadline: k=1 {one.unknown}, k=16 {sixteen.unknown}")
