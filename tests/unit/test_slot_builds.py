"""A slot's key range holds exactly the keys of its scores, either way a board ranks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.domain.buckets import BucketLayout
from app.domain.keys import Order, RankKey
from app.services.ranking.slot_builds import slot_key_range

LAYOUT = BucketLayout(coarse=8, fine=3)


@settings(max_examples=300, deadline=None)
@given(
    score=st.integers(0, 10**6),
    other=st.integers(0, 10**6),
    at=st.integers(0, 2**40),
    order=st.sampled_from(Order),
)
def test_a_slot_s_range_holds_its_keys_and_no_other(
    score: int, other: int, at: int, order: Order
) -> None:
    bucket, slot = LAYOUT.slot_of(score)
    low, high = slot_key_range(LAYOUT, bucket, slot, order)
    for s in (score, other):
        key = RankKey(s, at, "player-1", order).encode()
        assert (low <= key <= high) == (LAYOUT.slot_of(s) == (bucket, slot)), (s, key, low, high)
