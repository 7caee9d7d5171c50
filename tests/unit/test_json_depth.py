"""The JSON depth limit: measured without parsing, and the same depth a parser would reach."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.domain.json_depth import MAX_JSON_DEPTH, nests_deeper_than
from app.domain.periods import Board
from app.domain.seed_file import parse_seed_text
from app.errors import InvalidInput


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth_of(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth_of(v) for v in value), default=0)
    return 0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab'),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(alphabet='[]{}"\\ab', max_size=3), inner, max_size=3),
    max_leaves=40,
)


@given(json_values, st.integers(min_value=0, max_value=8))
def test_the_measure_is_the_depth_a_parser_reaches(value: Any, limit: int) -> None:
    text = json.dumps(value)
    assert nests_deeper_than(text, limit) == (depth_of(value) > limit)
    assert nests_deeper_than(text.encode(), limit) == (depth_of(value) > limit)


@pytest.mark.parametrize(
    ("text", "deeper"),
    [
        ("[" * 33 + "]" * 33, True),
        ("[" * 32 + "]" * 32, False),
        ('["' + "[" * 100 + '"]', False),  # brackets in a string do not count
        ('["\\\\"' + ",[" * 40 + "]" * 41, True),  # an escaped backslash ends its string
        ('["\\"' + "[" * 40 + '"]', False),  # an escaped quote does not
        ("[" * 30_000, True),  # malformed, and still measured without recursion
    ],
)
def test_strings_and_escapes_are_skipped(text: str, deeper: bool) -> None:
    assert nests_deeper_than(text) is deeper


def test_an_unterminated_string_of_escapes_is_measured_in_linear_time() -> None:
    # A naive string pattern backtracks quadratically on this; 64 KiB must stay instant.
    assert not nests_deeper_than('"\\' * 32_000 + "[" * 40)


def test_a_seed_line_nested_too_deeply_is_a_line_problem() -> None:
    board = Board.from_id("trivia#classic#alltime")
    good = '{"playerId": "ok", "score": 1, "achievedAt": "2026-11-01T10:00:00Z"}'
    deep = '{"playerId": "deep", "score": 1, "achievedAt": "2026-11-01T10:00:00Z", "x": '
    deep += "[" * 30_000 + "]" * 30_000 + "}"
    with pytest.raises(InvalidInput) as refused:
        parse_seed_text(
            good + "\n" + deep + "\n", board=board, now=datetime.now(UTC), file_format="jsonl"
        )
    assert refused.value.errors == [
        {"line": 2, "message": f"nests arrays and objects more than {MAX_JSON_DEPTH} deep"}
    ]
