"""The API's times: ISO 8601 UTC, milliseconds, ``Z``, and back."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from app.domain.clock import from_ms, iso_ms, parse_iso_ms

LAST_MS = int(datetime(9999, 12, 31, 23, 59, 59, 999_000, tzinfo=UTC).timestamp() * 1000)


def _reference(millis: int) -> str:
    return from_ms(millis).strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


@pytest.mark.parametrize(
    ("millis", "shown"),
    [
        (0, "1970-01-01T00:00:00.000Z"),
        (999, "1970-01-01T00:00:00.999Z"),
        (1_000, "1970-01-01T00:00:01.000Z"),
        (1_764_590_400_007, "2025-12-01T12:00:00.007Z"),
        (LAST_MS, "9999-12-31T23:59:59.999Z"),
    ],
)
def test_a_time_is_shown_in_utc_with_milliseconds_and_z(millis: int, shown: str) -> None:
    assert iso_ms(millis) == shown
    assert parse_iso_ms(shown) == millis


def test_every_time_reads_back_as_itself_and_as_strftime_shows_it() -> None:
    draw = random.Random(13)
    for millis in [draw.randrange(0, LAST_MS) for _ in range(2_000)]:
        shown = iso_ms(millis)
        assert shown == _reference(millis)
        assert parse_iso_ms(shown) == millis
