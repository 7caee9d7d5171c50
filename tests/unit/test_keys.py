"""Rank keys: their string order is the board order, they round-trip, and the guard holds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.keys import (
    SCORE_CEILING,
    RankKey,
    check_score,
    is_valid_id,
    key_just_below,
)

ids = st.from_regex(r"\A[A-Za-z0-9_.:-]{1,64}\Z")
scores = st.integers(min_value=0, max_value=SCORE_CEILING - 1)
millis = st.integers(min_value=0, max_value=10**13 - 1)
keys = st.builds(RankKey, scores, millis, ids)


@given(keys, keys)
def test_key_order_is_score_desc_then_time_asc_then_player_asc(a: RankKey, b: RankKey) -> None:
    expected = (-a.score, a.achieved_at_ms, a.player_id) < (-b.score, b.achieved_at_ms, b.player_id)
    assert (a.encode() < b.encode()) == expected


@given(keys)
def test_decode_inverts_encode(key: RankKey) -> None:
    assert RankKey.decode(key.encode()) == key


@given(keys, keys)
def test_key_just_below_bounds_exactly_the_keys_ahead(a: RankKey, b: RankKey) -> None:
    assert (a.encode() <= key_just_below(b.encode())) == (a.encode() < b.encode())


@pytest.mark.parametrize("bad", [-1, SCORE_CEILING, SCORE_CEILING + 5, 10**15])
def test_scores_outside_the_range_are_refused(bad: int) -> None:
    with pytest.raises(ValueError, match="score must be in"):
        RankKey(bad, 0, "p").encode()


@pytest.mark.parametrize("bad", [1.5, True, "10", None])
def test_non_integer_scores_are_refused(bad: object) -> None:
    with pytest.raises(TypeError):
        check_score(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "a#b", "x" * 65, "a b", "é", "a/b"])
def test_invalid_ids_are_refused(bad: str) -> None:
    assert not is_valid_id(bad)
    with pytest.raises(ValueError, match="invalid player id"):
        RankKey(1, 0, bad).encode()


def test_the_seeds_example_keys() -> None:
    assert RankKey(9120, 1786458127000, "player_123").encode() == (
        "0999999990880#1786458127000#player_123"
    )
    assert RankKey(0, 0, "p").encode().startswith("1000000000000#")
