"""The bucket layout: the earlier Lambda design's mapping (docs/scale.md), and bounds that agree
with it exactly."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.buckets import BucketLayout
from app.domain.keys import SCORE_CEILING

scores = st.integers(min_value=0, max_value=SCORE_CEILING - 1)
DEFAULT = BucketLayout()
LAYOUTS = [
    DEFAULT,
    BucketLayout(128, 1),
    BucketLayout(64, 1),
    BucketLayout(1024, 1),
    BucketLayout(16, 7),
]


def seeds_formula(score: int) -> int:
    return min(127, math.floor(math.log1p(score) / math.log(10**12) * 128))


@given(scores)
def test_coarse_mapping_is_the_seeds_formula(score: int) -> None:
    assert DEFAULT.coarse_of(score) == seeds_formula(score)


@pytest.mark.parametrize(
    ("score", "bucket"),
    [
        (0, 0),
        (10, 11),
        (100, 21),
        (1000, 32),
        (8750, 42),
        (9999, 42),
        (10**6, 64),
        (10**12 - 1, 127),
    ],
)
def test_the_seeds_table(score: int, bucket: int) -> None:
    assert DEFAULT.coarse_of(score) == bucket


def test_bucket_42_spans_the_seeds_bounds() -> None:
    assert DEFAULT.coarse_bounds(42) == (8659, 10746)


@pytest.mark.parametrize("layout", LAYOUTS, ids=repr)
@given(score=scores)
def test_a_score_lies_within_its_buckets_bounds(layout: BucketLayout, score: int) -> None:
    bucket, slot = layout.slot_of(score)
    lo, hi = layout.coarse_bounds(bucket)
    assert lo <= score < hi
    flo, fhi = layout.slot_bounds(bucket, slot)
    assert flo <= score < fhi
    assert 0 <= slot < layout.slots_in(bucket)


@pytest.mark.parametrize("layout", LAYOUTS, ids=repr)
@given(data=st.data())
def test_bounds_contain_exactly_the_scores_that_map_there(
    layout: BucketLayout, data: st.DataObject
) -> None:
    bucket = data.draw(st.sampled_from(layout.nonempty_coarse))
    lo, hi = layout.coarse_bounds(bucket)
    assert layout.coarse_of(lo) == bucket
    assert layout.coarse_of(hi - 1) == bucket
    if lo > 0:
        assert layout.coarse_of(lo - 1) < bucket
    if hi < SCORE_CEILING:
        assert layout.coarse_of(hi) > bucket
    slot = data.draw(st.integers(0, layout.slots_in(bucket) - 1))
    flo, fhi = layout.slot_bounds(bucket, slot)
    assert flo < fhi
    assert layout.slot_of(flo) == (bucket, slot)
    assert layout.slot_of(fhi - 1) == (bucket, slot)
    assert flo == lo or layout.slot_of(flo - 1) < (bucket, slot)
    assert fhi == hi or layout.slot_of(fhi) > (bucket, slot)


@pytest.mark.parametrize("layout", LAYOUTS, ids=repr)
def test_buckets_tile_the_score_range(layout: BucketLayout) -> None:
    edges = [layout.coarse_bounds(b) for b in range(layout.coarse)]
    assert edges[0][0] == 0
    assert edges[-1][1] == SCORE_CEILING
    assert all(a[1] == b[0] for a, b in itertools.pairwise(edges))


def test_low_buckets_finer_than_integers_are_empty() -> None:
    empty = [b for b in range(128) if b not in DEFAULT.nonempty_coarse]
    assert empty == [1, 2, 4]
